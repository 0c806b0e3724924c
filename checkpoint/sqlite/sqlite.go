package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/deltas"
	"github.com/agentgraph/agentgraph/checkpoint/internal/groupcommit"
	"github.com/agentgraph/agentgraph/internal/sqlitedb"
)

// Saver is a [checkpoint.Saver], [checkpoint.ThreadDeleter],
// [checkpoint.Leaser] and [checkpoint.Batcher] backed by a SQLite file. It
// is safe for concurrent use. Create one with [Open].
type Saver struct {
	path   string // for the package's tests
	db     *sqlitedb.DB
	fanout int
	group  groupcommit.Group[writeOp] // shares write transactions (group.go)

	// For the package's tests and benchmarks: noSets makes every batch
	// write by write; setRun, if set, is told the size of each set-based
	// run (set.go) as it starts.
	noSets bool
	setRun func(n int)
}

var (
	_ checkpoint.Saver         = (*Saver)(nil)
	_ checkpoint.ThreadDeleter = (*Saver)(nil)
)

// An Option configures [Open].
type Option func(*options)

type options struct {
	db     sqlitedb.Options
	fanout int
}

// WithBusyTimeout sets how long a statement waits for a database locked by
// another connection or process before failing with SQLITE_BUSY (after
// which the transaction is retried a few times). The default is 5s.
func WithBusyTimeout(d time.Duration) Option {
	return func(o *options) { o.db.BusyTimeout = d }
}

// WithDeltaFanout sets the fanout of the skip deltas that store appended
// JSON arrays: a read applies at most fanout−1 deltas per level, and
// log_fanout(n) levels cover n appends. The default is 16; a fanout below 2
// stores every version whole.
func WithDeltaFanout(n int) Option {
	return func(o *options) { o.fanout = n }
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

// SchemaVersionError is returned by [Open] for a database whose schema was
// written by a newer version of this package. Its fields are the database
// file (Path), the schema version recorded in it (Found) and the newest
// version this package knows (Supported). It is the type of the same name
// in store/sqlite.
type SchemaVersionError = sqlitedb.SchemaVersionError

// Open opens the SQLite database at path, creating it if needed, and runs
// any pending schema migrations. path ":memory:" opens a private in-memory
// database. Close the Saver when done.
//
// A file that exists but is empty (a truncated database), or that SQLite
// finds damaged or not a database, fails with a [*CorruptFileError]. A
// database is created whole (built beside path and linked into place), so
// an empty file is never one that another process is creating. A database
// whose schema is newer than this package knows fails with a
// [*SchemaVersionError].
func Open(ctx context.Context, path string, opts ...Option) (*Saver, error) {
	o := options{db: sqlitedb.DefaultOptions(), fanout: deltas.DefaultFanout}
	for _, opt := range opts {
		opt(&o)
	}
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Config{
		Options:         o.db,
		ForeignKeys:     true,
		MigrationsTable: "schema_migrations",
		Migrations:      migrations,
		WriteQueries:    writeQueries,
		ReadQueries:     readQueries,
		ErrCorrupt:      checkpoint.ErrCorrupt,
	})
	if c, ok := errors.AsType[*CorruptFileError](fileError(err)); ok {
		return nil, c
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint/sqlite: %w", err)
	}
	s := &Saver{path: path, db: db, fanout: o.fanout}
	s.initGroup()
	return s, nil
}

// Close closes the database. It waits for the write transaction in
// flight, if any (see Group commit in the package documentation); writes
// still queued behind it, and writes made after Close, fail without being
// made. It does not wait for
// iterations of List in progress.
func (s *Saver) Close() error {
	s.group.Close()
	return s.db.Close()
}

// migrations are the schema versions in order: migrations[i] brings a
// database from version i to version i+1. Never edit a released migration;
// append a new one.
var migrations = [][]string{{
	`CREATE TABLE checkpoints (
			thread_id  TEXT NOT NULL,
			ns         TEXT NOT NULL,
			id         TEXT NOT NULL,
			parent_id  TEXT NOT NULL,
			created_at INTEGER,
			metadata   TEXT NOT NULL,
			versions   TEXT NOT NULL,
			frontier   BLOB NOT NULL,
			shape      TEXT NOT NULL,
			PRIMARY KEY (thread_id, ns, id)
		)`,
	`CREATE INDEX checkpoints_thread_id ON checkpoints (thread_id, id)`,
	`CREATE INDEX checkpoints_id ON checkpoints (id)`,
	`CREATE TABLE blobs (
			thread_id TEXT NOT NULL,
			ns        TEXT NOT NULL,
			channel   TEXT NOT NULL,
			version   INTEGER NOT NULL,
			base      INTEGER,
			depth     INTEGER NOT NULL,
			size      INTEGER NOT NULL,
			hash      BLOB NOT NULL,
			data      BLOB NOT NULL,
			PRIMARY KEY (thread_id, ns, channel, version)
		)`,
	`CREATE TABLE writes (
			thread_id     TEXT NOT NULL,
			ns            TEXT NOT NULL,
			checkpoint_id TEXT NOT NULL,
			task_id       TEXT NOT NULL,
			idx           INTEGER NOT NULL,
			channel       TEXT NOT NULL,
			task_path     TEXT NOT NULL,
			value         BLOB NOT NULL,
			PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, idx)
		)`,
}, {
	// Version 2: thread leases (lease.go); expires_at is in Unix
	// nanoseconds.
	`CREATE TABLE leases (
			thread_id  TEXT PRIMARY KEY NOT NULL,
			holder     TEXT NOT NULL,
			token      TEXT NOT NULL,
			expires_at INTEGER NOT NULL
		)`,
}, {
	// Version 3: fencing tokens (fence grows with every acquisition; a
	// released lease keeps its row with an empty token) and the process
	// that holds the lease (host, pid, pid_start: see internal/liveness).
	`ALTER TABLE leases ADD COLUMN fence INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE leases ADD COLUMN host TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE leases ADD COLUMN pid INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE leases ADD COLUMN pid_start INTEGER NOT NULL DEFAULT 0`,
}, {
	// Version 4: no index on (thread_id, id). Its entries went in at a
	// random place for each Put of many threads, beside the primary
	// key's: one more page of every batch to change, log and checkpoint.
	// Listing a thread's checkpoints across namespaces now searches the
	// primary key by thread_id and sorts them by id, as LangGraph's saver
	// does.
	`DROP INDEX IF EXISTS checkpoints_thread_id`,
}}

// SchemaVersion is the schema version this package writes.
func SchemaVersion() int { return len(migrations) }

// writeQueries and readQueries are prepared when the Saver opens.
var (
	writeQueries = []string{selectLeaf, selectMetaPath, insertBlob, upsertCheckpoint, insertWriteIgnore, insertWriteReplace, deleteThread[0], deleteThread[1], deleteThread[2], acquireLease, selectLease, renewLease, releaseLease, holdsLease, selectLatestOther}
	readQueries  = []string{selectLatest, selectByID, selectPaths, selectWrites}
)
