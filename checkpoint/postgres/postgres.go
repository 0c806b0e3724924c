package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/deltas"
	"github.com/agentgraph/agentgraph/checkpoint/internal/groupcommit"
	"github.com/agentgraph/agentgraph/internal/pgdb"
)

// Saver is a [checkpoint.Saver], [checkpoint.ThreadDeleter],
// [checkpoint.Leaser] and [checkpoint.Batcher] backed by PostgreSQL. It is
// safe for concurrent use. Create one with [Open].
type Saver struct {
	pool   *pgxpool.Pool
	fanout int
	cache  pathCache                  // see pipeline.go
	group  groupcommit.Group[groupOp] // shares batches (group.go)
	sender *sender                    // the group's
}

var (
	_ checkpoint.Saver         = (*Saver)(nil)
	_ checkpoint.ThreadDeleter = (*Saver)(nil)
	_ checkpoint.Batcher       = (*Saver)(nil)
)

// An Option configures [Open].
type Option func(*options)

type options struct {
	db     pgdb.Options
	fanout int
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

// WithDeltaFanout sets the fanout of the skip deltas that store appended
// JSON arrays: a read applies at most fanout−1 deltas per level, and
// log_fanout(n) levels cover n appends. The default is 16; a fanout below 2
// stores every version whole.
func WithDeltaFanout(n int) Option {
	return func(o *options) { o.fanout = n }
}

// ConnectError is returned by [Open] when the server cannot be reached or
// refuses the connection. Its fields are the server address, host:port
// (Host), and the reason (Err). It is the type of the same name in
// store/postgres.
type ConnectError = pgdb.ConnectError

// SchemaVersionError is returned by [Open] for a schema written by a newer
// version of this package. Its fields are the schema holding the tables
// (Schema, "" for the search_path default), the schema version recorded
// in it (Found) and the newest version this package knows (Supported). It
// is the type of the same name in store/postgres.
type SchemaVersionError = pgdb.SchemaVersionError

// Open connects to the PostgreSQL database at url (a postgres:// URL or a
// key=value connection string, as accepted by pgxpool) and runs any pending
// schema migrations. Close the Saver when done.
func Open(ctx context.Context, url string, opts ...Option) (*Saver, error) {
	o := options{db: pgdb.DefaultOptions(), fanout: deltas.DefaultFanout}
	for _, opt := range opts {
		opt(&o)
	}
	pool, err := pgdb.Open(ctx, url, pgdb.Config{
		Options:         o.db,
		Lock:            "agentgraph/checkpoint/postgres migrate " + o.db.Schema,
		MigrationsTable: "agentgraph_schema_migrations",
		Migrations:      migrations,
		AfterConnect: func(_ context.Context, c *pgx.Conn) error {
			registerPresized(c.TypeMap())
			return nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint/postgres: %w", err)
	}
	s := &Saver{pool: pool, fanout: o.fanout}
	s.initGroup()
	return s, nil
}

// Close closes the pool's connections. Writes waiting for a batch of the
// group commit fail; Close waits for the batch in flight, and for
// connections in use to be released.
func (s *Saver) Close() error {
	s.group.Close()
	s.pool.Close()
	return nil
}

// migrations are the schema versions in order: migrations[i] brings a
// schema from version i to version i+1. Never edit a released migration;
// append a new one.
var migrations = [][]string{{
	`CREATE TABLE agentgraph_checkpoints (
		thread_id  text COLLATE "C" NOT NULL,
		ns         text COLLATE "C" NOT NULL,
		id         text COLLATE "C" NOT NULL,
		parent_id  text COLLATE "C" NOT NULL,
		created_at timestamptz,
		metadata   jsonb NOT NULL,
		versions   jsonb NOT NULL,
		frontier   bytea NOT NULL,
		shape      text NOT NULL,
		PRIMARY KEY (thread_id, ns, id)
	)`,
	`CREATE INDEX agentgraph_checkpoints_thread_id ON agentgraph_checkpoints (thread_id, id)`,
	`CREATE INDEX agentgraph_checkpoints_id ON agentgraph_checkpoints (id)`,
	`CREATE TABLE agentgraph_blobs (
		thread_id text COLLATE "C" NOT NULL,
		ns        text COLLATE "C" NOT NULL,
		channel   text COLLATE "C" NOT NULL,
		version   bigint NOT NULL,
		base      bigint,
		depth     bigint NOT NULL,
		size      bigint NOT NULL,
		hash      bytea NOT NULL,
		data      bytea NOT NULL,
		PRIMARY KEY (thread_id, ns, channel, version)
	)`,
	`CREATE TABLE agentgraph_writes (
		thread_id     text COLLATE "C" NOT NULL,
		ns            text COLLATE "C" NOT NULL,
		checkpoint_id text COLLATE "C" NOT NULL,
		task_id       text COLLATE "C" NOT NULL,
		idx           integer NOT NULL,
		channel       text NOT NULL,
		task_path     text NOT NULL,
		value         bytea NOT NULL,
		PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, idx)
	)`,
}, {
	// Version 2: thread leases (lease.go).
	`CREATE TABLE agentgraph_leases (
		thread_id  text COLLATE "C" PRIMARY KEY,
		holder     text NOT NULL,
		token      text NOT NULL,
		expires_at timestamptz NOT NULL
	)`,
}, {
	// Version 3: fencing tokens (fence grows with every acquisition; a
	// released lease keeps its row with an empty token) and the process
	// that holds the lease (host, pid, pid_start: see internal/liveness).
	`ALTER TABLE agentgraph_leases ADD COLUMN fence bigint NOT NULL DEFAULT 0,
		ADD COLUMN host text NOT NULL DEFAULT '',
		ADD COLUMN pid integer NOT NULL DEFAULT 0,
		ADD COLUMN pid_start bigint NOT NULL DEFAULT 0`,
}, {
	// Version 4: the check of a write sent in one round trip
	// (pipeline.go).
	checkFunction,
}}

// SchemaVersion is the schema version this package writes.
func SchemaVersion() int { return len(migrations) }
