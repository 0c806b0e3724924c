package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// Leases are rows of agentgraph_leases, not session-level advisory locks
// (which the server would release by itself when a holder dies): a session
// lock pins one pooled connection for as long as its run lives (a server
// with 1,000 live runs would need 1,000 connections), does not work behind
// a transaction-pooling proxy such as pgbouncer (the session is not the
// client's), and cannot say who holds it. Lease rows need a heartbeat
// (RenewLease) instead, and none of that.

var _ checkpoint.Leaser = (*Saver)(nil)

const (
	// acquireLease inserts a lease, or takes over one that expired, and
	// returns its expiry; it returns no row when the lease is held. $4 is
	// the time to live in microseconds.
	acquireLease = `INSERT INTO agentgraph_leases AS l (thread_id, holder, token, expires_at)
		VALUES ($1, $2, $3, clock_timestamp() + $4::bigint * interval '1 microsecond')
		ON CONFLICT (thread_id) DO UPDATE SET holder = excluded.holder, token = excluded.token, expires_at = excluded.expires_at
		WHERE l.expires_at <= clock_timestamp()
		RETURNING expires_at`
	selectLease = `SELECT holder, expires_at FROM agentgraph_leases WHERE thread_id = $1`
	renewLease  = `UPDATE agentgraph_leases SET expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond'
		WHERE thread_id = $1 AND token = $2 RETURNING expires_at`
	releaseLease = `DELETE FROM agentgraph_leases WHERE thread_id = $1 AND token = $2`
)

// maxAcquireAttempts bounds the attempts of AcquireLease when the lease it
// found held is gone by the time it reads the holder.
const maxAcquireAttempts = 3

// AcquireLease implements [checkpoint.Leaser] in one statement; when the
// lease is held, a second one reads the holder for the error.
//
// A lease is a row of agentgraph_leases whose expiry the database's clock
// decides, so that holders on several machines need not agree on the time;
// the Expires of the leases it returns are by that clock.
//
// A lease is not part of the thread's data: [Saver.DeleteThread] leaves
// it, so that deleting a thread never lets a second run start on it while
// a run still holds it.
func (s *Saver) AcquireLease(ctx context.Context, threadID, holder string, ttl time.Duration) (checkpoint.Lease, error) {
	if err := checkpoint.CheckLeaseArgs(ctx, threadID, ttl); err != nil {
		return checkpoint.Lease{}, fmt.Errorf("checkpoint/postgres: acquire lease: %w", err)
	}
	l := checkpoint.Lease{ThreadID: threadID, Holder: holder, Token: checkpoint.NewLeaseToken()}
	for attempt := 1; ; attempt++ {
		err := s.pool.QueryRow(ctx, acquireLease, threadID, holder, l.Token, micros(ttl)).Scan(&l.Expires)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return checkpoint.Lease{}, fmt.Errorf("checkpoint/postgres: acquire lease of thread %q: %w", threadID, err)
		}
		held := &checkpoint.LeaseHeldError{ThreadID: threadID}
		err = s.pool.QueryRow(ctx, selectLease, threadID).Scan(&held.Holder, &held.Expires)
		if err == nil {
			return checkpoint.Lease{}, fmt.Errorf("checkpoint/postgres: acquire lease of thread %q: %w", threadID, held)
		}
		// No row: the holder released the lease since; try again, unless
		// that keeps happening.
		if !errors.Is(err, pgx.ErrNoRows) || attempt == maxAcquireAttempts {
			return checkpoint.Lease{}, fmt.Errorf("checkpoint/postgres: acquire lease of thread %q: read holder: %w", threadID, err)
		}
	}
}

// RenewLease implements [checkpoint.Leaser].
func (s *Saver) RenewLease(ctx context.Context, lease checkpoint.Lease, ttl time.Duration) (checkpoint.Lease, error) {
	if err := checkpoint.CheckLeaseArgs(ctx, lease.ThreadID, ttl); err != nil {
		return checkpoint.Lease{}, fmt.Errorf("checkpoint/postgres: renew lease: %w", err)
	}
	err := s.pool.QueryRow(ctx, renewLease, lease.ThreadID, lease.Token, micros(ttl)).Scan(&lease.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		err = checkpoint.ErrLeaseLost
	}
	if err != nil {
		return checkpoint.Lease{}, fmt.Errorf("checkpoint/postgres: renew lease of thread %q: %w", lease.ThreadID, err)
	}
	return lease, nil
}

// ReleaseLease implements [checkpoint.Leaser].
func (s *Saver) ReleaseLease(ctx context.Context, lease checkpoint.Lease) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint/postgres: release lease: %w", err)
	}
	if _, err := s.pool.Exec(ctx, releaseLease, lease.ThreadID, lease.Token); err != nil {
		return fmt.Errorf("checkpoint/postgres: release lease of thread %q: %w", lease.ThreadID, err)
	}
	return nil
}

// micros returns d in whole microseconds, the precision of timestamptz,
// rounded up so that a positive d stays positive.
func micros(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if d%time.Microsecond > 0 {
		us++
	}
	return us
}
