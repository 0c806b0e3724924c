package sqlite

import (
	"context"
	"fmt"
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
	index *store.Index // nil: no semantic search
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Sweeper     = (*Store)(nil)
	_ store.ClockSetter = (*Store)(nil)
)

// An Option configures [Open].
type Option func(*options)

type options struct {
	db    sqlitedb.Options
	clock func() time.Time
	index *store.IndexConfig
}

// WithBusyTimeout sets how long a statement waits for a database locked by
// another connection or process before failing with SQLITE_BUSY (after
// which it is retried a few times). The default is 5s.
func WithBusyTimeout(d time.Duration) Option {
	return func(o *options) { o.db.BusyTimeout = d }
}

// WithMaxReaders caps the connections used for reads. The default is
// max(4, GOMAXPROCS).
func WithMaxReaders(n int) Option {
	return func(o *options) { o.db.MaxReaders = n }
}

// WithSynchronous sets PRAGMA synchronous: "NORMAL" (the default; in WAL
// mode a power loss may lose the last transactions but never corrupts the
// file) or "FULL" (every commit is durable).
func WithSynchronous(mode string) Option {
	return func(o *options) { o.db.Synchronous = mode }
}

// WithClock makes the store read the current time from now instead of
// time.Now, as [Store.SetClock] does.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.clock = now }
}

// WithIndex turns on semantic search (see [store.IndexConfig] and
// [store.Query]): Put embeds items and keeps their vectors in the file,
// and Search with a query ranks them. An invalid configuration makes Open
// fail with an error wrapping [store.ErrInvalidOption].
func WithIndex(cfg store.IndexConfig) Option {
	return func(o *options) { o.index = &cfg }
}

// SchemaVersionError is returned by [Open] for a database whose store
// schema was written by a newer version of this package. Its fields are the
// database file (Path), the store schema version recorded in it (Found) and
// the newest version this package knows (Supported). It is the type of the
// same name in checkpoint/sqlite.
type SchemaVersionError = sqlitedb.SchemaVersionError

// Open opens the SQLite database at path, creating it if needed, and runs
// any pending schema migrations of the store's tables. path ":memory:"
// opens a private in-memory database. The file may also hold other tables,
// such as those of the checkpoint saver in checkpoint/sqlite. Close the
// Store when done.
//
// A database whose store schema is newer than this package knows fails
// with a [*SchemaVersionError].
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	o := options{db: sqlitedb.DefaultOptions()}
	for _, opt := range opts {
		opt(&o)
	}
	var index *store.Index
	if o.index != nil {
		var err error
		if index, err = store.NewIndex(*o.index); err != nil {
			return nil, fmt.Errorf("store/sqlite: %w", err)
		}
	}
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Config{
		Options:         o.db,
		MigrationsTable: "agentgraph_store_migrations",
		Migrations:      migrations,
		WriteQueries:    writeQueries,
		ReadQueries:     readQueries,
	})
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: %w", err)
	}
	s := &Store{db: db, index: index}
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
}, {
	// Semantic search: the vectors of an item's indexed texts. The
	// triggers drop them when the item is deleted (Delete, Sweep) or its
	// value replaced (Put), so no vector outlives the value it embeds.
	`CREATE TABLE agentgraph_store_vectors (
		namespace TEXT NOT NULL,
		key       TEXT NOT NULL,
		field     TEXT NOT NULL,
		vector    BLOB NOT NULL,
		PRIMARY KEY (namespace, key, field)
	)`,
	`CREATE TRIGGER agentgraph_store_items_delete_vectors AFTER DELETE ON agentgraph_store_items
	BEGIN
		DELETE FROM agentgraph_store_vectors WHERE namespace = OLD.namespace AND key = OLD.key;
	END`,
	`CREATE TRIGGER agentgraph_store_items_replace_vectors AFTER UPDATE OF value ON agentgraph_store_items
	BEGIN
		DELETE FROM agentgraph_store_vectors WHERE namespace = OLD.namespace AND key = OLD.key;
	END`,
}, {
	// 1 if value is the JSON text given with WithJSON, kept in its key
	// order and returned as Item.JSON; 0 for values put as maps, and
	// before.
	`ALTER TABLE agentgraph_store_items ADD COLUMN value_kept INTEGER NOT NULL DEFAULT 0`,
}}

// SchemaVersion is the schema version this package writes.
func SchemaVersion() int { return len(migrations) }
