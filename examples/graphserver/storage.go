package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/checkpoint"
	cppostgres "github.com/agentgraph/agentgraph/checkpoint/postgres"
	cpsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/server"
	srvpostgres "github.com/agentgraph/agentgraph/server/postgres"
	srvsqlite "github.com/agentgraph/agentgraph/server/sqlite"
	"github.com/agentgraph/agentgraph/store"
	stpostgres "github.com/agentgraph/agentgraph/store/postgres"
	stsqlite "github.com/agentgraph/agentgraph/store/sqlite"
)

// storage is where the served graphs keep their threads (the
// checkpointer), the server its store, and the server its thread and run
// records (the backend).
type storage struct {
	saver   checkpoint.Saver
	store   store.Store
	backend server.Backend
	// where says what was opened, for the start-up banner.
	where string
	close func() error
}

// serverOptions are the server's options that keep its state in s.
func (s *storage) serverOptions() []server.Option {
	return []server.Option{server.WithCheckpointer(s.saver), server.WithStore(s.store), server.WithBackend(s.backend)}
}

// openStorage opens the storage the options name. It is the one place
// that chooses a backend: SQLite in the file o.db (checkpoints, store,
// and the server's threads and runs in the same file, so that all of
// them survive a restart), or PostgreSQL at o.postgres, which several
// graphserver processes share.
func openStorage(ctx context.Context, o options) (*storage, error) {
	if o.postgres != "" {
		return openPostgres(ctx, o.postgres)
	}
	saver, err := cpsqlite.Open(ctx, o.db)
	if err != nil {
		return nil, fmt.Errorf("open the checkpoints in %s: %w", o.db, err)
	}
	st, err := stsqlite.Open(ctx, o.db)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open the store in %s: %w", o.db, err), saver.Close())
	}
	b, err := srvsqlite.Open(ctx, o.db)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open the threads and runs in %s: %w", o.db, err), st.Close(), saver.Close())
	}
	return &storage{
		saver:   saver,
		store:   st,
		backend: b,
		where:   "SQLite " + o.db + " (checkpoints, store, threads and runs)",
		close:   func() error { return errors.Join(b.Close(), st.Close(), saver.Close()) },
	}, nil
}

// openPostgres opens the checkpoints, the store and the server's threads
// and runs in the PostgreSQL database at url.
func openPostgres(ctx context.Context, url string) (*storage, error) {
	saver, err := cppostgres.Open(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("open the checkpoints in PostgreSQL: %w", err)
	}
	st, err := stpostgres.Open(ctx, url)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open the store in PostgreSQL: %w", err), saver.Close())
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("connect to PostgreSQL: %w", err), st.Close(), saver.Close())
	}
	b, err := srvpostgres.New(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, errors.Join(fmt.Errorf("open the threads and runs in PostgreSQL: %w", err), st.Close(), saver.Close())
	}
	return &storage{
		saver:   saver,
		store:   st,
		backend: b,
		where:   "PostgreSQL (checkpoints, store, threads and runs; shared with every graphserver on the database)",
		close: func() error {
			err := b.Close() // its LISTEN connection, before the pool
			pool.Close()
			return errors.Join(err, st.Close(), saver.Close())
		},
	}, nil
}
