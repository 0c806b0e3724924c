package postgres

import (
	"context"
	"errors"
	"iter"

	"github.com/jackc/pgx/v5"

	"github.com/agentgraph/agentgraph/checkpoint"
)

var _ checkpoint.Fencer = (*Saver)(nil)

// Fence implements [checkpoint.Fencer]. Each write of the view reads the
// thread's lease row FOR SHARE as the first statement of its transaction,
// sent in the same batch as the write (no extra round trip): a takeover,
// which updates the row, waits until the write commits or rolls back, and
// a write whose lease is no longer current rolls back. A write whose
// process pauses while it holds the row can hold a takeover up for at
// most 5s: the server then ends its idle transaction.
func (s *Saver) Fence(lease checkpoint.Lease) checkpoint.Saver { return fenced{s, lease} }

// fenced is the view [Saver.Fence] returns.
type fenced struct {
	s     *Saver
	lease checkpoint.Lease
}

var _ checkpoint.ThreadDeleter = fenced{}

func (f fenced) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	return f.s.Get(ctx, ref)
}

func (f fenced) List(ctx context.Context, threadID string, opts checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	return f.s.List(ctx, threadID, opts)
}

func (f fenced) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	if err := checkpoint.FenceThreadError(f.lease, cp.ThreadID); err != nil {
		return err
	}
	return f.s.put(ctx, cp, &f.lease)
}

func (f fenced) PutWrites(ctx context.Context, ref checkpoint.Ref, writes []checkpoint.Write) error {
	if err := checkpoint.FenceThreadError(f.lease, ref.ThreadID); err != nil {
		return err
	}
	return f.s.putWrites(ctx, ref, writes, &f.lease)
}

func (f fenced) DeleteThread(ctx context.Context, threadID string) error {
	if err := checkpoint.FenceThreadError(f.lease, threadID); err != nil {
		return err
	}
	return f.s.deleteThread(ctx, threadID, &f.lease)
}

// queueFence queues the fence check of lease (nothing when it is nil) as
// the first statements of b, and returns a function that, once b was
// sent and closed, returns the [*checkpoint.FencedError] of a lease that
// is not current, for the caller to roll its transaction back.
func queueFence(b *pgx.Batch, lease *checkpoint.Lease) func() error {
	if lease == nil {
		return func() error { return nil }
	}
	b.Queue(fenceIdleTimeout)
	var holder, token string
	var fence int64
	b.Queue(selectFence, lease.ThreadID).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(&holder, &token, &fence); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return nil
	})
	return func() error {
		if token == "" || token != lease.Token {
			return &checkpoint.FencedError{ThreadID: lease.ThreadID, Fence: lease.Fence, Holder: holder, Current: fence}
		}
		return nil
	}
}
