package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/internal/sqlitedb"
)

var _ checkpoint.Leaser = (*Saver)(nil)

const (
	// acquireLease inserts a lease, or takes over one that expired (?5 is
	// the time now); it changes no row when the lease is held.
	acquireLease = `INSERT INTO leases (thread_id, holder, token, expires_at) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (thread_id) DO UPDATE SET holder = excluded.holder, token = excluded.token, expires_at = excluded.expires_at
		WHERE leases.expires_at <= ?5`
	selectLease  = `SELECT holder, expires_at FROM leases WHERE thread_id = ?`
	renewLease   = `UPDATE leases SET expires_at = ? WHERE thread_id = ? AND token = ?`
	releaseLease = `DELETE FROM leases WHERE thread_id = ? AND token = ?`
)

// AcquireLease implements [checkpoint.Leaser] in one write transaction.
//
// A lease is a row of the leases table. Its expiry is decided by the wall
// clock of the process that acquires: every process using one SQLite file
// runs on one host (WAL mode needs memory shared between them, so it does
// not work over a network file system), and so all holders read one clock.
// Stepping that clock moves every lease's expiry with it: forward, leases
// expire early; backward, a dead holder's lease lasts longer.
//
// A lease is not part of the thread's data: [Saver.DeleteThread] leaves
// it, so that deleting a thread never lets a second run start on it while
// a run still holds it.
func (s *Saver) AcquireLease(ctx context.Context, threadID, holder string, ttl time.Duration) (checkpoint.Lease, error) {
	if err := checkpoint.CheckLeaseArgs(ctx, threadID, ttl); err != nil {
		return checkpoint.Lease{}, fmt.Errorf("checkpoint/sqlite: acquire lease: %w", err)
	}
	l := checkpoint.Lease{ThreadID: threadID, Holder: holder, Token: checkpoint.NewLeaseToken()}
	err := s.db.Write(ctx, func(tx sqlitedb.Tx) error {
		now := time.Now()
		exp := now.Add(ttl).UnixNano()
		res, err := tx.Exec(acquireLease, threadID, holder, l.Token, exp, now.UnixNano())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 1 {
			l.Expires = time.Unix(0, exp)
			return nil
		}
		held := &checkpoint.LeaseHeldError{ThreadID: threadID}
		var heldExp int64
		if err := tx.QueryRow(selectLease, threadID).Scan(&held.Holder, &heldExp); err != nil {
			return err
		}
		held.Expires = time.Unix(0, heldExp)
		return held
	})
	if err != nil {
		return checkpoint.Lease{}, fmt.Errorf("checkpoint/sqlite: acquire lease of thread %q: %w", threadID, err)
	}
	return l, nil
}

// RenewLease implements [checkpoint.Leaser].
func (s *Saver) RenewLease(ctx context.Context, lease checkpoint.Lease, ttl time.Duration) (checkpoint.Lease, error) {
	if err := checkpoint.CheckLeaseArgs(ctx, lease.ThreadID, ttl); err != nil {
		return checkpoint.Lease{}, fmt.Errorf("checkpoint/sqlite: renew lease: %w", err)
	}
	err := s.db.Write(ctx, func(tx sqlitedb.Tx) error {
		exp := time.Now().Add(ttl).UnixNano()
		res, err := tx.Exec(renewLease, exp, lease.ThreadID, lease.Token)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return checkpoint.ErrLeaseLost
		}
		lease.Expires = time.Unix(0, exp)
		return nil
	})
	if err != nil {
		return checkpoint.Lease{}, fmt.Errorf("checkpoint/sqlite: renew lease of thread %q: %w", lease.ThreadID, err)
	}
	return lease, nil
}

// ReleaseLease implements [checkpoint.Leaser].
func (s *Saver) ReleaseLease(ctx context.Context, lease checkpoint.Lease) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint/sqlite: release lease: %w", err)
	}
	err := s.db.Write(ctx, func(tx sqlitedb.Tx) error {
		_, err := tx.Exec(releaseLease, lease.ThreadID, lease.Token)
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoint/sqlite: release lease of thread %q: %w", lease.ThreadID, err)
	}
	return nil
}
