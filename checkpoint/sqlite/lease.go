package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/internal/liveness"
	"github.com/agentgraph/agentgraph/internal/sqlitedb"
)

var _ checkpoint.Leaser = (*Saver)(nil)

const (
	// acquireLease inserts a lease, or takes over one that expired (?5 is
	// the time now), was released, or whose holder is dead (?9 is its
	// token, "" for none); it returns the new lease's fence, and no row
	// when the lease is held. The fence grows with every acquisition: a
	// released lease keeps its row, with an empty token.
	acquireLease = `INSERT INTO leases (thread_id, holder, token, expires_at, fence, host, pid, pid_start)
		VALUES (?1, ?2, ?3, ?4, 1, ?6, ?7, ?8)
		ON CONFLICT (thread_id) DO UPDATE SET holder = excluded.holder, token = excluded.token, expires_at = excluded.expires_at,
			fence = leases.fence + 1, host = excluded.host, pid = excluded.pid, pid_start = excluded.pid_start
		WHERE leases.expires_at <= ?5 OR leases.token = '' OR leases.token = ?9
		RETURNING fence`
	selectLease  = `SELECT holder, token, fence, expires_at, host, pid, pid_start FROM leases WHERE thread_id = ?`
	renewLease   = `UPDATE leases SET expires_at = ? WHERE thread_id = ? AND token = ?`
	releaseLease = `UPDATE leases SET holder = '', token = '', expires_at = 0 WHERE thread_id = ? AND token = ? AND token <> ''`
	// holdsLease finds the thread's lease row when token is its current
	// lease token (a fenced write's check).
	holdsLease = `SELECT 1 FROM leases WHERE thread_id = ? AND token = ? AND token <> ''`
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
//
// A lease records the process that took it (see internal/liveness): a
// lease whose holder process is dead — on this host, the only one that
// shares the file — is taken over at once, not after its time to live.
func (s *Saver) AcquireLease(ctx context.Context, threadID, holder string, ttl time.Duration) (checkpoint.Lease, error) {
	if err := checkpoint.CheckLeaseArgs(ctx, threadID, ttl); err != nil {
		return checkpoint.Lease{}, fmt.Errorf("checkpoint/sqlite: acquire lease: %w", err)
	}
	l := checkpoint.Lease{ThreadID: threadID, Holder: holder, Token: checkpoint.NewLeaseToken()}
	me := liveness.Self()
	err := s.group.Do(ctx, writeOp{do: func(ctx context.Context, tx sqlitedb.Tx) error {
		now := time.Now()
		exp := now.Add(ttl).UnixNano()
		take := func(dead string) error {
			return tx.QueryRow(acquireLease, threadID, holder, l.Token, exp, now.UnixNano(), me.Host, me.PID, me.Start, dead).Scan(&l.Fence)
		}
		err := take("")
		if err == nil || !errors.Is(err, sql.ErrNoRows) {
			l.Expires = time.Unix(0, exp)
			return err
		}
		cur, err := readLease(tx, threadID)
		if err != nil {
			return err
		}
		if liveness.Dead(cur.proc) {
			// Its holder died on this host: no need to wait for its
			// time to live. (The write lock is held: the row is as read.)
			l.Expires = time.Unix(0, exp)
			return take(cur.token)
		}
		// Refused after reads only.
		return &unchanged{&checkpoint.LeaseHeldError{ThreadID: threadID, Holder: cur.holder, Expires: time.Unix(0, cur.expires)}}
	}})
	if err != nil {
		return checkpoint.Lease{}, fmt.Errorf("checkpoint/sqlite: acquire lease of thread %q: %w", threadID, err)
	}
	return l, nil
}

// leaseRow is a row of the leases table.
type leaseRow struct {
	holder, token string
	fence         int64
	expires       int64
	proc          liveness.Proc
}

// readLease reads the lease row of thread; a thread never leased has the
// zero leaseRow.
func readLease(tx sqlitedb.Tx, thread string) (leaseRow, error) {
	var r leaseRow
	err := tx.QueryRow(selectLease, thread).Scan(&r.holder, &r.token, &r.fence, &r.expires, &r.proc.Host, &r.proc.PID, &r.proc.Start)
	if errors.Is(err, sql.ErrNoRows) {
		return leaseRow{}, nil
	}
	return r, err
}

// checkFence fences a write to thread made with ctx: unless ctx carries
// no lease for thread (see [checkpoint.WithLease]), it returns a
// [*checkpoint.FencedError] when that lease is not the thread's current
// one. It runs in the write transaction of the write it fences, which
// holds the database's write lock: no lease can change hands before that
// write commits. The current lease is read whole only to explain a refusal.
func checkFence(ctx context.Context, tx sqlitedb.Tx, thread string) error {
	lease, ok := checkpoint.LeaseFrom(ctx, thread)
	if !ok {
		return nil
	}
	var one int
	err := tx.QueryRow(holdsLease, thread, lease.Token).Scan(&one)
	if err == nil {
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	cur, err := readLease(tx, thread)
	if err != nil {
		return err
	}
	return checkpoint.CheckFence(lease, cur.token, cur.holder, cur.fence)
}

// RenewLease implements [checkpoint.Leaser].
func (s *Saver) RenewLease(ctx context.Context, lease checkpoint.Lease, ttl time.Duration) (checkpoint.Lease, error) {
	if err := checkpoint.CheckLeaseArgs(ctx, lease.ThreadID, ttl); err != nil {
		return checkpoint.Lease{}, fmt.Errorf("checkpoint/sqlite: renew lease: %w", err)
	}
	err := s.group.Do(ctx, writeOp{do: func(ctx context.Context, tx sqlitedb.Tx) error {
		exp := time.Now().Add(ttl).UnixNano()
		res, err := tx.Exec(renewLease, exp, lease.ThreadID, lease.Token)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return &unchanged{checkpoint.ErrLeaseLost}
		}
		lease.Expires = time.Unix(0, exp)
		return nil
	}})
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
	err := s.group.Do(ctx, writeOp{do: func(ctx context.Context, tx sqlitedb.Tx) error {
		_, err := tx.Exec(releaseLease, lease.ThreadID, lease.Token)
		return err
	}})
	if err != nil {
		return fmt.Errorf("checkpoint/sqlite: release lease of thread %q: %w", lease.ThreadID, err)
	}
	return nil
}
