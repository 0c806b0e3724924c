package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/internal/liveness"
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
	// acquireLease inserts a lease, or takes over one that expired, was
	// released, or whose holder is dead ($8 is its token, "" for none),
	// and returns its expiry and fence; it returns no row when the lease
	// is held. $4 is the time to live in microseconds. The fence grows
	// with every acquisition: a released lease keeps its row, with an
	// empty token.
	acquireLease = `INSERT INTO agentgraph_leases AS l (thread_id, holder, token, expires_at, fence, host, pid, pid_start)
		VALUES ($1, $2, $3, clock_timestamp() + $4::bigint * interval '1 microsecond', 1, $5, $6, $7)
		ON CONFLICT (thread_id) DO UPDATE SET holder = excluded.holder, token = excluded.token, expires_at = excluded.expires_at,
			fence = l.fence + 1, host = excluded.host, pid = excluded.pid, pid_start = excluded.pid_start
		WHERE l.expires_at <= clock_timestamp() OR l.token = '' OR l.token = $8
		RETURNING expires_at, fence`
	selectLease = `SELECT holder, token, expires_at, host, pid, pid_start FROM agentgraph_leases WHERE thread_id = $1`
	renewLease  = `UPDATE agentgraph_leases SET expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond'
		WHERE thread_id = $1 AND token = $2 RETURNING expires_at`
	releaseLease = `UPDATE agentgraph_leases SET holder = '', token = '', expires_at = to_timestamp(0)
		WHERE thread_id = $1 AND token = $2 AND token <> ''`
	// lockLease takes the exclusive transaction-level advisory lock on a
	// thread's lease (see leaseLockKey): an acquisition or a release waits
	// for the fenced writes of the thread in flight, and the writes that
	// start meanwhile wait for it.
	lockLease = `SELECT pg_advisory_xact_lock($1)`
	// lockFence takes the shared lock on the thread's lease for a fenced
	// write, and bounds how long the write's transaction may sit idle
	// while it holds it (its process paused between two round trips of
	// the transaction): the server then ends the session, the transaction
	// rolls back, and an acquisition waiting for the lock goes on.
	// set_config(…, true) is SET LOCAL: it ends with the transaction.
	lockFence = `SELECT set_config('idle_in_transaction_session_timeout', '5s', true), pg_advisory_xact_lock_shared($1)`
	// selectFence reads the thread's lease for a fenced write, in a
	// statement after lockFence's.
	selectFence = `SELECT holder, token, fence FROM agentgraph_leases WHERE thread_id = $1`
)

// maxAcquireAttempts bounds the attempts of AcquireLease when the lease it
// found held was released by the time it read the holder, or its holder
// is dead on this host.
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
//
// A lease records the process that took it (see internal/liveness): a
// lease whose holder process is dead on the host of the caller is taken
// over at once, not after its time to live.
func (s *Saver) AcquireLease(ctx context.Context, threadID, holder string, ttl time.Duration) (checkpoint.Lease, error) {
	if err := checkpoint.CheckLeaseArgs(ctx, threadID, ttl); err != nil {
		return checkpoint.Lease{}, fmt.Errorf("checkpoint/postgres: acquire lease: %w", err)
	}
	l := checkpoint.Lease{ThreadID: threadID, Holder: holder, Token: checkpoint.NewLeaseToken()}
	me := liveness.Self()
	dead := ""
	for attempt := 1; ; attempt++ {
		// The lock and the statement are one implicit transaction (one
		// round trip): the lock is held until the acquisition commits.
		b := &pgx.Batch{}
		b.Queue(lockLease, leaseLockKey(threadID))
		got := false
		b.Queue(acquireLease, threadID, holder, l.Token, micros(ttl), me.Host, me.PID, me.Start, dead).QueryRow(func(row pgx.Row) error {
			err := row.Scan(&l.Expires, &l.Fence)
			got = err == nil
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		})
		err := s.pool.SendBatch(ctx, b).Close()
		if err == nil && got {
			return l, nil
		}
		if err != nil {
			return checkpoint.Lease{}, fmt.Errorf("checkpoint/postgres: acquire lease of thread %q: %w", threadID, err)
		}
		held := &checkpoint.LeaseHeldError{ThreadID: threadID}
		var token string
		var proc liveness.Proc
		if err := s.pool.QueryRow(ctx, selectLease, threadID).Scan(&held.Holder, &token, &held.Expires, &proc.Host, &proc.PID, &proc.Start); err != nil {
			// A lease row is never deleted: it exists once acquired.
			return checkpoint.Lease{}, fmt.Errorf("checkpoint/postgres: acquire lease of thread %q: read holder: %w", threadID, err)
		}
		if attempt < maxAcquireAttempts {
			switch {
			case token == "":
				// Released since the acquire statement (a released lease
				// keeps its row, with its fence, and no token): try again.
				continue
			case token != dead && liveness.Dead(proc):
				// Its holder died on this host: take it over now, unless
				// another process did first (the update names its token).
				dead = token
				continue
			}
		}
		if token == "" {
			held.Holder = "other processes (taken and released again while this one asked, 3 times)"
		}
		return checkpoint.Lease{}, fmt.Errorf("checkpoint/postgres: acquire lease of thread %q: %w", threadID, held)
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
	b := &pgx.Batch{}
	b.Queue(lockLease, leaseLockKey(lease.ThreadID))
	b.Queue(releaseLease, lease.ThreadID, lease.Token)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
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

// Fencing (see checkpoint.Fenced). A fenced write checks, in its own
// transaction, that its lease is still the thread's current one, and the
// check must hold until the write commits: a takeover that commits between
// the check and the write's commit would let the stale write land after
// it. Transactions run at READ COMMITTED, where each statement sees what
// was committed when it started, so the check alone proves nothing about
// later; a transaction-level advisory lock per thread (leaseLockKey) makes
// it last:
//
//   - A fenced write takes the lock shared (lockFence), then, in a later
//     statement, reads the lease row (selectFence, a plain read).
//   - An acquisition or a release takes it exclusive (lockLease), then
//     updates the row, in the same transaction.
//
// The interleavings of a write W with an acquisition A that takes the
// thread over: if W holds the shared lock first, A waits for it until W
// commits or rolls back, so W's check (made after W was granted the lock,
// and before A could change the row) saw the old token and W lands before
// the takeover — which is not a stale write: it was made while the lease
// was current. If A holds the exclusive lock first, W waits until A
// committed; W's read, a later statement, starts after A's commit and sees
// the new token: W is refused. There is no third case: the two locks
// conflict, and neither statement reads before its lock is granted (the
// read is a statement of its own, whose snapshot is taken after the lock
// statement returned — a statement that took the lock and read would read
// with the snapshot of its start). Fenced writes of a thread share the
// lock, so they do not wait for each other, and the lock writes nothing:
// unlike a row lock (SELECT … FOR SHARE, what the check took before),
// which writes the row's tuple at every write.
//
// A write whose process pauses while it holds the shared lock holds a
// takeover up: for at most 5s when it pauses between two round trips of
// its transaction (lockFence sets idle_in_transaction_session_timeout for
// the transaction). A write sent as one batch in one round trip commits
// without its process (the server runs it to its end), unless the process
// stops in the middle of sending it, which a batch larger than the
// socket's send buffer allows.

// leaseLockKey returns the key of the advisory lock on a thread's lease
// (see Fencing above). Keys are hashes: two threads may share one, which
// makes one thread's acquisitions wait for the other's writes, which is
// slower, not wrong.
func leaseLockKey(thread string) int64 {
	h := fnv.New64a()
	h.Write([]byte("agentgraph/checkpoint/postgres lease\x00"))
	h.Write([]byte(thread))
	return int64(h.Sum64())
}

// queueFence queues the fence check of a write to thread made with ctx
// (nothing when ctx carries no lease for thread, see checkpoint.WithLease)
// as the first statements of b, and returns a function that, once b was sent
// and closed, returns the [*checkpoint.FencedError] of a lease that is not
// current, for the caller to roll its transaction back. See Fencing above.
func queueFence(ctx context.Context, b *pgx.Batch, thread string) func() error {
	lease, ok := checkpoint.LeaseFrom(ctx, thread)
	if !ok {
		return func() error { return nil }
	}
	b.Queue(lockFence, leaseLockKey(thread))
	var holder, token string
	var fence int64
	b.Queue(selectFence, thread).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(&holder, &token, &fence); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return nil
	})
	return func() error { return checkpoint.CheckFence(lease, token, holder, fence) }
}
