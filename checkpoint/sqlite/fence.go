package sqlite

import (
	"context"
	"iter"

	"github.com/agentgraph/agentgraph/checkpoint"
)

var _ checkpoint.Fencer = (*Saver)(nil)

// Fence implements [checkpoint.Fencer]. Each write of the view reads the
// thread's lease row in its own write transaction, which holds the
// database's write lock from its first statement (BEGIN IMMEDIATE): no
// other process can take the lease over between the check and the commit.
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
