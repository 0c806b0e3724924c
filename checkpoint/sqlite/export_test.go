package sqlite

import (
	"context"
	"database/sql"

	"github.com/agentgraph/agentgraph/internal/sqlitedb"
)

// DoInGroup makes fn a write of s's group commit, as Put and PutWrites do.
func (s *Saver) DoInGroup(ctx context.Context, fn func(context.Context, *sql.Tx) error) error {
	return s.group.Do(ctx, writeOp{do: func(ctx context.Context, tx sqlitedb.Tx) error { return fn(ctx, tx.Tx) }})
}

// QueuedWrites returns how many writes wait for the transaction in flight.
func (s *Saver) QueuedWrites() int {
	return s.group.Queued()
}

// Closing reports whether Close was called.
func (s *Saver) Closing() bool {
	return s.group.Closing()
}

// OnSetRun has f told the size of each set-based run of Puts as it
// starts. Call it before the first write.
func (s *Saver) OnSetRun(f func(n int)) { s.setRun = f }
