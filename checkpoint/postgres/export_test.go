package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// LeaseLockKey is leaseLockKey, the advisory lock of a thread's lease.
func LeaseLockKey(thread string) int64 { return leaseLockKey(thread) }

// ThreadLockKey is threadLockKey, the advisory lock of a thread's Puts.
func ThreadLockKey(thread, ns string) int64 { return threadLockKey(thread, ns) }

// DoInGroup sends the statements queue queues as a write of s's group
// commit, as Put and PutWrites do.
func (s *Saver) DoInGroup(ctx context.Context, queue func(*pgx.Batch)) error {
	return s.group.Do(ctx, groupOp{raw: queue})
}

// QueuedWrites returns how many writes wait for the batch in flight.
func (s *Saver) QueuedWrites() int {
	return s.group.Queued()
}

// Closing reports whether Close was called.
func (s *Saver) Closing() bool {
	return s.group.Closing()
}

// SetBatches returns how many set-based batches the group sent, how many
// writes they refused at their check, how many of them it sent again with
// ON CONFLICT, and how many as statements.
func (s *Saver) SetBatches() (sets, refused, upserts, fallbacks int64) {
	sd := s.sender
	return sd.sets.Load(), sd.refused.Load(), sd.upserts.Load(), sd.fallbacks.Load()
}

// AloneUpserts returns how many lone writes the group sent again with ON
// CONFLICT after their first try met a stored row.
func (s *Saver) AloneUpserts() int64 {
	return s.sender.aloneUpserts.Load()
}
