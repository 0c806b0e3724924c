package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentgraph/agentgraph/checkpoint"
	cpsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/store"
	stsqlite "github.com/agentgraph/agentgraph/store/sqlite"
)

// storage is where the served graphs keep their threads (the
// checkpointer) and the server its store.
type storage struct {
	saver checkpoint.Saver
	store store.Store
	// where says what was opened, for the start-up banner.
	where string
	close func() error
}

// openStorage opens the storage the options name. It is the one place
// that chooses a backend: SQLite in the file o.db (checkpoints and store
// in the same file). A PostgreSQL backend plugs in here, chosen by its
// own flag, and nothing else changes.
func openStorage(ctx context.Context, o options) (*storage, error) {
	saver, err := cpsqlite.Open(ctx, o.db)
	if err != nil {
		return nil, fmt.Errorf("open the checkpoints in %s: %w", o.db, err)
	}
	st, err := stsqlite.Open(ctx, o.db)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open the store in %s: %w", o.db, err), saver.Close())
	}
	return &storage{
		saver: saver,
		store: st,
		where: "SQLite " + o.db + " (checkpoints and store)",
		close: func() error { return errors.Join(st.Close(), saver.Close()) },
	}, nil
}
