package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agentgraph/agentgraph/internal/sqlitedb"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/internal/runwatch"
)

// Backend is a [server.Backend] in a SQLite file, safe for concurrent use
// by many goroutines and by several processes opening the same file.
// Create one with [Open].
type Backend struct {
	db    *sqlitedb.DB
	watch *runwatch.Hub
	reads atomic.Int64 // reads of runs and events, for the tests
}

var (
	_ server.Backend    = (*Backend)(nil)
	_ server.RunWatcher = (*Backend)(nil)
)

// An Option configures [Open].
type Option func(*options)

type options struct {
	db   sqlitedb.Options
	poll time.Duration
}

// WithBusyTimeout sets how long a statement waits for a database locked by
// another connection or process before failing with SQLITE_BUSY (after
// which the transaction is retried a few times). The default is 5s.
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

// WithPollInterval sets how often the Backend's poller reads the runs
// that requests of this process wait on, to see the changes other
// processes made (default [server.DefaultPollInterval]); see
// [Backend.WatchRun]. A value of zero or less keeps the default.
func WithPollInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.poll = d
		}
	}
}

// SchemaVersionError is returned by [Open] for a database whose server
// schema was written by a newer version of this package. Its fields are
// the database file (Path), the schema version recorded in it (Found) and
// the newest version this package knows (Supported).
type SchemaVersionError = sqlitedb.SchemaVersionError

// CorruptFileError reports a database file that is damaged or is not a
// SQLite database (or exists with zero length: a truncated one). [Open]
// returns it, and the Backend's methods that meet the damage return an
// error wrapping it. It matches [ErrCorrupt] with [errors.Is].
type CorruptFileError = sqlitedb.CorruptError

// ErrCorrupt is matched, with [errors.Is], by every error of a Backend
// that met damaged data: a [*CorruptFileError] or a [*CorruptRowError].
var ErrCorrupt = errors.New("server/sqlite: damaged data")

// CorruptRowError reports a row whose column does not hold what the
// Backend wrote there (SQLite does not enforce column types): the text
// of a time, JSON that does not parse, a thread's metadata that is not an
// object. It matches [ErrCorrupt] with [errors.Is].
type CorruptRowError struct {
	// Table is the table of the row: threads, runs or events.
	Table string
	// Key is the row's thread or run id.
	Key string
	// Column is the damaged column.
	Column string
	// Err says what is wrong with it.
	Err error
}

// Error names the row, the column and what is wrong.
func (e *CorruptRowError) Error() string {
	return fmt.Sprintf("server/sqlite: %s row %q: column %s is damaged: %v", e.Table, e.Key, e.Column, e.Err)
}

// Unwrap returns what is wrong with the column.
func (e *CorruptRowError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrCorrupt].
func (e *CorruptRowError) Is(target error) bool { return target == ErrCorrupt }

// Open opens the SQLite database at path, creating it if needed, and
// creates or migrates the Backend's tables in it. The file may hold other
// tables, such as those of checkpoint/sqlite and store/sqlite: the graph
// server's threads, runs and checkpoints then live in one file. path
// ":memory:" opens a private in-memory database. Close the Backend when
// done.
//
// A file that exists but is empty, or that SQLite finds damaged or not a
// database, fails with a [*CorruptFileError]; a schema newer than this
// package knows fails with a [*SchemaVersionError].
func Open(ctx context.Context, path string, opts ...Option) (*Backend, error) {
	o := options{db: sqlitedb.DefaultOptions(), poll: server.DefaultPollInterval}
	for _, opt := range opts {
		opt(&o)
	}
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Config{
		Options:         o.db,
		MigrationsTable: migrationsTable,
		Migrations:      migrations,
		ErrCorrupt:      ErrCorrupt,
	})
	if err != nil {
		if _, ok := errors.AsType[*SchemaVersionError](err); ok {
			return nil, err
		}
		return nil, fmt.Errorf("server/sqlite: %w", err)
	}
	b := &Backend{db: db}
	b.watch = runwatch.New(runwatch.Config{Poll: b.marks, Interval: func() time.Duration { return o.poll }, Name: "server/sqlite"})
	return b, nil
}

// Close stops the poller and closes the database.
func (b *Backend) Close() error {
	b.watch.Close()
	return b.db.Close()
}

// SchemaVersion is the schema version this package writes.
func SchemaVersion() int { return len(migrations) }

const migrationsTable = "agentgraph_server_schema_migrations"

// migrations are the schema versions in order: migrations[i] brings a
// database from version i to version i+1. Never edit a released migration;
// append a new one. Times are Unix nanoseconds; JSON is text that SQLite
// checks with json_valid.
var migrations = [][]string{{
	`CREATE TABLE agentgraph_server_threads (
		thread_id  TEXT PRIMARY KEY NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		metadata   TEXT NOT NULL CHECK (json_valid(metadata)),
		status     TEXT NOT NULL,
		config     TEXT NOT NULL CHECK (json_valid(config)),
		vals       TEXT NOT NULL CHECK (json_valid(vals)),
		interrupts TEXT NOT NULL CHECK (json_valid(interrupts)),
		reset_to   TEXT
	)`,
	`CREATE TABLE agentgraph_server_runs (
		seq                INTEGER PRIMARY KEY AUTOINCREMENT,
		run_id             TEXT NOT NULL UNIQUE,
		thread_id          TEXT NOT NULL,
		assistant_id       TEXT NOT NULL,
		created_at         INTEGER NOT NULL,
		updated_at         INTEGER NOT NULL,
		status             TEXT NOT NULL,
		metadata           TEXT NOT NULL CHECK (json_valid(metadata)),
		multitask_strategy TEXT NOT NULL,
		kwargs             TEXT NOT NULL CHECK (json_valid(kwargs)),
		result             TEXT CHECK (result IS NULL OR json_valid(result)),
		attempt            INTEGER NOT NULL DEFAULT 0,
		holder             TEXT,
		lease_expires      INTEGER,
		cancel_reason      TEXT,
		rollback           INTEGER NOT NULL DEFAULT 0,
		start_checkpoint   TEXT,
		reset_to           TEXT
	)`,
	`CREATE UNIQUE INDEX agentgraph_server_runs_one_running ON agentgraph_server_runs (thread_id) WHERE status = 'running'`,
	`CREATE INDEX agentgraph_server_runs_thread ON agentgraph_server_runs (thread_id, seq)`,
	`CREATE INDEX agentgraph_server_runs_queue ON agentgraph_server_runs (seq) WHERE status IN ('pending', 'running')`,
	`CREATE TABLE agentgraph_server_events (
		run_id TEXT NOT NULL,
		id     INTEGER NOT NULL,
		name   TEXT NOT NULL,
		data   TEXT NOT NULL,
		PRIMARY KEY (run_id, id)
	)`,
}, {
	// Version 2: the assistants and their versions.
	`CREATE TABLE agentgraph_server_assistants (
		assistant_id TEXT PRIMARY KEY NOT NULL,
		graph_id     TEXT NOT NULL,
		config       TEXT NOT NULL CHECK (json_valid(config)),
		context      TEXT NOT NULL CHECK (json_valid(context)),
		metadata     TEXT NOT NULL CHECK (json_valid(metadata)),
		name         TEXT NOT NULL,
		description  TEXT,
		version      INTEGER NOT NULL,
		last_version INTEGER NOT NULL,
		created_at   INTEGER NOT NULL,
		updated_at   INTEGER NOT NULL
	)`,
	`CREATE TABLE agentgraph_server_assistant_versions (
		assistant_id TEXT NOT NULL,
		version      INTEGER NOT NULL,
		graph_id     TEXT NOT NULL,
		config       TEXT NOT NULL CHECK (json_valid(config)),
		context      TEXT NOT NULL CHECK (json_valid(context)),
		metadata     TEXT NOT NULL CHECK (json_valid(metadata)),
		name         TEXT NOT NULL,
		description  TEXT,
		created_at   INTEGER NOT NULL,
		PRIMARY KEY (assistant_id, version)
	)`,
}, cronsMigration}
