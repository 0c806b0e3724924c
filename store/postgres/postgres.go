package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Sweeper     = (*Store)(nil)
	_ store.ClockSetter = (*Store)(nil)
)

// An Option configures [Open].
type Option func(*options)

type options struct {
	schema         string
	connectTimeout time.Duration
	maxConns       int32
	clock          func() time.Time
}

// WithSchema keeps the tables in the named schema, created if missing, by
// setting search_path on every connection of the pool.
func WithSchema(name string) Option {
	return func(o *options) { o.schema = name }
}

// WithConnectTimeout bounds each connection attempt when the URL does not
// set connect_timeout. The default is 5s.
func WithConnectTimeout(d time.Duration) Option {
	return func(o *options) { o.connectTimeout = d }
}

// WithMaxConns caps the pool's connections, overriding pool_max_conns in
// the URL.
func WithMaxConns(n int32) Option {
	return func(o *options) { o.maxConns = n }
}

// WithClock makes the store read the current time from now instead of
// time.Now, as [Store.SetClock] does. The store never uses the server's
// clock.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.clock = now }
}

// ConnectError is returned by [Open] when the server cannot be reached or
// refuses the connection.
type ConnectError struct {
	// Host is the server address, host:port.
	Host string
	// Err is the underlying error.
	Err error
}

// Error names the host and the reason.
func (e *ConnectError) Error() string {
	return fmt.Sprintf("store/postgres: cannot connect to %s: %v", e.Host, e.Err)
}

// Unwrap returns the underlying error.
func (e *ConnectError) Unwrap() error { return e.Err }

// SchemaVersionError is returned by [Open] for a store schema written by a
// newer version of this package.
type SchemaVersionError struct {
	// Schema is the schema holding the tables ("" for the search_path
	// default).
	Schema string
	// Found is the schema version recorded in the database.
	Found int
	// Supported is the newest schema version this package knows.
	Supported int
}

// Error describes the mismatch.
func (e *SchemaVersionError) Error() string {
	where := "the database"
	if e.Schema != "" {
		where = "schema " + strconv.Quote(e.Schema)
	}
	return fmt.Sprintf("store/postgres: %s has store schema version %d, newer than version %d known to this program; upgrade the program", where, e.Found, e.Supported)
}

// Open connects to the PostgreSQL database at url (a postgres:// URL or a
// key=value connection string, as accepted by pgxpool) and runs any
// pending migrations of the store's tables. Close the Store when done.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	o := options{connectTimeout: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	pool, err := pgdb.Open(ctx, url, pgdb.Config{
		Schema:          o.schema,
		ConnectTimeout:  o.connectTimeout,
		MaxConns:        o.maxConns,
		Lock:            "agentgraph/store/postgres migrate " + o.schema,
		MigrationsTable: "agentgraph_store_migrations",
		Migrations:      migrations,
	})
	if err != nil {
		if e, ok := errors.AsType[*pgdb.ConnectError](err); ok {
			return nil, &ConnectError{Host: e.Host, Err: e.Err}
		}
		if e, ok := errors.AsType[*pgdb.VersionError](err); ok {
			return nil, &SchemaVersionError{Schema: o.schema, Found: e.Found, Supported: e.Supported}
		}
		return nil, fmt.Errorf("store/postgres: %w", err)
	}
	s := &Store{pool: pool}
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
}}

// SchemaVersion is the schema version this package writes.
func SchemaVersion() int { return len(migrations) }
