package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/internal/pgdb"
	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/internal/clock"
)

// Store is a [store.Store], [store.Sweeper] and [store.ClockSetter] backed
// by PostgreSQL. It is safe for concurrent use. Create one with [Open].
type Store struct {
	pool  *pgxpool.Pool
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
	db    pgdb.Options
	clock func() time.Time
	index *store.IndexConfig
}

// WithSchema keeps the tables in the named schema, created if missing, by
// setting search_path on every connection of the pool.
func WithSchema(name string) Option {
	return func(o *options) { o.db.Schema = name }
}

// WithConnectTimeout bounds each connection attempt when the URL does not
// set connect_timeout. The default is 5s.
func WithConnectTimeout(d time.Duration) Option {
	return func(o *options) { o.db.ConnectTimeout = d }
}

// WithMaxConns caps the pool's connections, overriding pool_max_conns in
// the URL.
func WithMaxConns(n int32) Option {
	return func(o *options) { o.db.MaxConns = n }
}

// WithClock makes the store read the current time from now instead of
// time.Now, as [Store.SetClock] does. The store never uses the server's
// clock.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.clock = now }
}

// WithIndex turns on semantic search (see [store.IndexConfig] and
// [store.Query]): Put embeds items and keeps their vectors in the
// database, and Search with a query ranks them. An invalid configuration
// makes Open fail with an error wrapping [store.ErrInvalidOption].
func WithIndex(cfg store.IndexConfig) Option {
	return func(o *options) { o.index = &cfg }
}

// ConnectError is returned by [Open] when the server cannot be reached or
// refuses the connection. Its fields are the server address, host:port
// (Host), and the reason (Err). It is the type of the same name in
// checkpoint/postgres.
type ConnectError = pgdb.ConnectError

// SchemaVersionError is returned by [Open] for a store schema written by a
// newer version of this package. Its fields are the schema holding the
// tables (Schema, "" for the search_path default), the store schema version
// recorded in it (Found) and the newest version this package knows
// (Supported). It is the type of the same name in checkpoint/postgres.
type SchemaVersionError = pgdb.SchemaVersionError

// Open connects to the PostgreSQL database at url (a postgres:// URL or a
// key=value connection string, as accepted by pgxpool) and runs any
// pending migrations of the store's tables. Close the Store when done.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	o := options{db: pgdb.DefaultOptions()}
	for _, opt := range opts {
		opt(&o)
	}
	var index *store.Index
	if o.index != nil {
		var err error
		if index, err = store.NewIndex(*o.index); err != nil {
			return nil, fmt.Errorf("store/postgres: %w", err)
		}
	}
	pool, err := pgdb.Open(ctx, url, pgdb.Config{
		Options:         o.db,
		Lock:            "agentgraph/store/postgres migrate " + o.db.Schema,
		MigrationsTable: "agentgraph_store_migrations",
		Migrations:      migrations,
	})
	if err != nil {
		return nil, fmt.Errorf("store/postgres: %w", err)
	}
	s := &Store{pool: pool, index: index}
	s.SetClock(o.clock)
	return s, nil
}

// Close closes the pool's connections. It waits for connections in use to
// be released.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// SetClock implements [store.ClockSetter]; nil restores time.Now.
func (s *Store) SetClock(now func() time.Time) {
	s.clock.Set(now)
}

func (s *Store) now() time.Time { return s.clock.Now() }

// migrations are the schema versions in order: migrations[i] brings a
// schema from version i to version i+1. Never edit a released migration;
// append a new one.
var migrations = [][]string{{
	`CREATE TABLE agentgraph_store_items (
		namespace  text COLLATE "C" NOT NULL,
		key        text COLLATE "C" NOT NULL,
		value      jsonb NOT NULL,
		created_at timestamptz NOT NULL,
		updated_at timestamptz NOT NULL,
		expires_at timestamptz,
		ttl        interval,
		PRIMARY KEY (namespace, key)
	)`,
	`CREATE INDEX agentgraph_store_items_updated_at ON agentgraph_store_items (updated_at DESC, namespace, key)`,
	`CREATE INDEX agentgraph_store_items_expires_at ON agentgraph_store_items (expires_at) WHERE expires_at IS NOT NULL`,
}, {
	// Semantic search: the vectors of an item's indexed texts, deleted
	// with the item (Delete, Sweep) by the foreign key and replaced by
	// Put in the transaction that writes the item.
	`CREATE TABLE agentgraph_store_vectors (
		namespace text COLLATE "C" NOT NULL,
		key       text COLLATE "C" NOT NULL,
		field     text COLLATE "C" NOT NULL,
		vector    bytea NOT NULL,
		PRIMARY KEY (namespace, key, field),
		FOREIGN KEY (namespace, key) REFERENCES agentgraph_store_items (namespace, key) ON DELETE CASCADE
	)`,
}, {
	// The value's JSON text as put with WithJSON, keys in its order
	// (jsonb keeps its own order), returned as Item.JSON; value stays for
	// filters. NULL for items put without the text, or before: they read
	// back from value.
	`ALTER TABLE agentgraph_store_items ADD COLUMN value_text text`,
}}

// SchemaVersion is the schema version this package writes.
func SchemaVersion() int { return len(migrations) }
