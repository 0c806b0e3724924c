package sqlite

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/agentgraph/agentgraph/internal/sqlitedb"
	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/internal/clock"
)

// Store is a [store.Store], [store.Sweeper] and [store.ClockSetter] backed
// by a SQLite file. It is safe for concurrent use. Create one with [Open].
type Store struct {
	db    *sqlitedb.DB
	clock clock.Clock
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Sweeper     = (*Store)(nil)
	_ store.ClockSetter = (*Store)(nil)
)

// An Option configures [Open].
type Option func(*options)

type options struct {
	busyTimeout time.Duration
	readers     int
	synchronous string
	clock       func() time.Time
}

// WithBusyTimeout sets how long a statement waits for a database locked by
// another connection or process before failing with SQLITE_BUSY (after
// which it is retried a few times). The default is 5s.
func WithBusyTimeout(d time.Duration) Option {
	return func(o *options) { o.busyTimeout = d }
}

// WithMaxReaders caps the connections used for reads. The default is
// max(4, GOMAXPROCS).
func WithMaxReaders(n int) Option {
	return func(o *options) { o.readers = n }
}

// WithSynchronous sets PRAGMA synchronous: "NORMAL" (the default; in WAL
// mode a power loss may lose the last transactions but never corrupts the
// file) or "FULL" (every commit is durable).
func WithSynchronous(mode string) Option {
	return func(o *options) { o.synchronous = mode }
}

// WithClock makes the store read the current time from now instead of
// time.Now, as [Store.SetClock] does.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.clock = now }
}

// SchemaVersionError is returned by [Open] for a database whose store
// schema was written by a newer version of this package.
type SchemaVersionError struct {
	// Path is the database file.
	Path string
	// Found is the schema version recorded in the file.
	Found int
	// Supported is the newest schema version this package knows.
	Supported int
}

// Error describes the mismatch.
func (e *SchemaVersionError) Error() string {
	return fmt.Sprintf("store/sqlite: %s has store schema version %d, newer than version %d known to this program; upgrade the program", e.Path, e.Found, e.Supported)
}

// Open opens the SQLite database at path, creating it if needed, and runs
// any pending schema migrations of the store's tables. path ":memory:"
// opens a private in-memory database. The file may also hold other tables,
// such as those of the checkpoint saver in checkpoint/sqlite. Close the
// Store when done.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	o := options{busyTimeout: 5 * time.Second, readers: max(4, runtime.GOMAXPROCS(0)), synchronous: "NORMAL"}
	for _, opt := range opts {
		opt(&o)
	}
	if err := sqlitedb.CheckSynchronous(o.synchronous); err != nil {
		return nil, fmt.Errorf("store/sqlite: %w", err)
	}
	if path == "" {
		return nil, errors.New("store/sqlite: empty database path")
	}
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Config{
		BusyTimeout:     o.busyTimeout,
		Synchronous:     o.synchronous,
		MaxReaders:      o.readers,
		MigrationsTable: "agentgraph_store_migrations",
		Migrations:      migrations,
		WriteQueries:    writeQueries,
		ReadQueries:     readQueries,
	})
	if v, ok := errors.AsType[*sqlitedb.VersionError](err); ok {
		return nil, &SchemaVersionError{Path: path, Found: v.Found, Supported: v.Supported}
	}
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: open %s: %w", path, err)
	}
	s := &Store{db: db}
	s.SetClock(o.clock)
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	return s.db.Close()
}

// SetClock implements [store.ClockSetter]; nil restores time.Now.
func (s *Store) SetClock(now func() time.Time) {
	s.clock.Set(now)
}

func (s *Store) now() time.Time { return s.clock.Now() }

// migrations are the schema versions in order: migrations[i] brings a
// database from version i to version i+1. Never edit a released migration;
// append a new one.
var migrations = [][]string{{
	`CREATE TABLE agentgraph_store_items (
		namespace  TEXT NOT NULL,
		key        TEXT NOT NULL,
		value      TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		expires_at INTEGER,
		ttl_ns     INTEGER,
		PRIMARY KEY (namespace, key)
	)`,
	`CREATE INDEX agentgraph_store_items_updated_at ON agentgraph_store_items (updated_at DESC, namespace, key)`,
	`CREATE INDEX agentgraph_store_items_expires_at ON agentgraph_store_items (expires_at) WHERE expires_at IS NOT NULL`,
}}

// SchemaVersion is the schema version this package writes.
func SchemaVersion() int { return len(migrations) }
