package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"runtime"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/deltas"
)

// Saver is a [checkpoint.Saver] and [checkpoint.ThreadDeleter] backed by a
// SQLite file. It is safe for concurrent use. Create one with [Open].
type Saver struct {
	path   string
	w      *sql.DB // one connection; transactions BEGIN IMMEDIATE
	r      *sql.DB // read-only connections (w itself for ":memory:")
	ws, rs stmts   // prepared statements of w and r
	fanout int
}

var (
	_ checkpoint.Saver         = (*Saver)(nil)
	_ checkpoint.ThreadDeleter = (*Saver)(nil)
)

// An Option configures [Open].
type Option func(*options)

type options struct {
	busyTimeout time.Duration
	fanout      int
	readers     int
	synchronous string
}

// WithBusyTimeout sets how long a statement waits for a database locked by
// another connection or process before failing with SQLITE_BUSY (after
// which the transaction is retried a few times). The default is 5s.
func WithBusyTimeout(d time.Duration) Option {
	return func(o *options) { o.busyTimeout = d }
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
	return func(o *options) { o.readers = n }
}

// WithSynchronous sets PRAGMA synchronous: "NORMAL" (the default; in WAL
// mode a power loss may lose the last transactions but never corrupts the
// file) or "FULL" (every commit is durable).
func WithSynchronous(mode string) Option {
	return func(o *options) { o.synchronous = mode }
}

// SchemaVersionError is returned by [Open] for a database whose schema was
// written by a newer version of this package.
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
	return fmt.Sprintf("checkpoint/sqlite: %s has schema version %d, newer than version %d known to this program; upgrade the program", e.Path, e.Found, e.Supported)
}

// Open opens the SQLite database at path, creating it if needed, and runs
// any pending schema migrations. path ":memory:" opens a private in-memory
// database. Close the Saver when done.
func Open(ctx context.Context, path string, opts ...Option) (*Saver, error) {
	o := options{busyTimeout: 5 * time.Second, fanout: deltas.DefaultFanout, readers: max(4, runtime.GOMAXPROCS(0)), synchronous: "NORMAL"}
	for _, opt := range opts {
		opt(&o)
	}
	switch strings.ToUpper(o.synchronous) {
	case "OFF", "NORMAL", "FULL", "EXTRA":
	default:
		return nil, fmt.Errorf("checkpoint/sqlite: invalid synchronous mode %q", o.synchronous)
	}
	if path == "" {
		return nil, errors.New("checkpoint/sqlite: empty database path")
	}
	s := &Saver{path: path, fanout: o.fanout}
	common := url.Values{}
	common.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.busyTimeout.Milliseconds()))
	common.Add("_pragma", "foreign_keys(ON)")
	w := cloneValues(common)
	w.Add("_pragma", "journal_mode(WAL)")
	w.Add("_pragma", "synchronous("+o.synchronous+")")
	w.Set("_txlock", "immediate")

	memory := path == ":memory:"
	var err error
	if memory {
		s.w, err = sql.Open("sqlite", ":memory:?"+w.Encode())
	} else {
		s.w, err = sql.Open("sqlite", dsn(path, w))
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint/sqlite: open %s: %w", path, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	if err := s.migrate(ctx); err != nil {
		s.w.Close()
		return nil, err
	}
	if memory {
		s.r = s.w
		if s.ws, err = prepare(ctx, s.w, append(writeQueries, readQueries...)); err != nil {
			s.Close()
			return nil, fmt.Errorf("checkpoint/sqlite: open %s: %w", path, err)
		}
		s.rs = s.ws
		return s, nil
	}
	r := cloneValues(common)
	r.Add("_pragma", "query_only(1)")
	s.r, err = sql.Open("sqlite", dsn(path, r))
	if err != nil {
		s.w.Close()
		return nil, fmt.Errorf("checkpoint/sqlite: open %s: %w", path, err)
	}
	s.r.SetMaxOpenConns(max(o.readers, 1))
	s.r.SetMaxIdleConns(max(o.readers, 1))
	if s.ws, err = prepare(ctx, s.w, writeQueries); err == nil {
		s.rs, err = prepare(ctx, s.r, readQueries)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("checkpoint/sqlite: open %s: %w", path, err)
	}
	return s, nil
}

// Close closes the database. It does not wait for iterations of List in
// progress.
func (s *Saver) Close() error {
	s.ws.close()
	s.rs.close()
	var err error
	if s.r != nil && s.r != s.w {
		err = s.r.Close()
	}
	return errors.Join(err, s.w.Close())
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// dsn returns a SQLite URI naming the file at path, so that any character
// of path, '?' and '#' included, is taken literally.
func dsn(path string, q url.Values) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(path) + "?" + q.Encode()
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
}}

// SchemaVersion is the schema version this package writes.
func SchemaVersion() int { return len(migrations) }

func (s *Saver) migrate(ctx context.Context) error {
	err := s.write(ctx, func(t txn) error {
		tx := t.tx
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			applied_at INTEGER NOT NULL
		)`); err != nil {
			return err
		}
		var cur int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&cur); err != nil {
			return err
		}
		if cur > len(migrations) {
			return &SchemaVersionError{Path: s.path, Found: cur, Supported: len(migrations)}
		}
		for v := cur + 1; v <= len(migrations); v++ {
			for _, stmt := range migrations[v-1] {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("migration %d: %w", v, err)
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, v, time.Now().UnixNano()); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
		}
		return nil
	})
	if _, ok := errors.AsType[*SchemaVersionError](err); ok {
		return err
	}
	if err != nil {
		return fmt.Errorf("checkpoint/sqlite: open %s: %w", s.path, err)
	}
	return nil
}

// write runs fn in a write transaction, retrying the whole transaction
// while the database stays busy.
func (s *Saver) write(ctx context.Context, fn func(txn) error) error {
	return retry(ctx, func() error {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(txn{ctx, tx, s.ws}); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}

// read runs fn in a read transaction, so that it sees one snapshot.
func (s *Saver) read(ctx context.Context, fn func(txn) error) error {
	return retry(ctx, func() error {
		tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		return fn(txn{ctx, tx, s.rs})
	})
}

// stmts holds statements prepared when the Saver opens. database/sql
// prepares them again on each new connection as needed, which a
// transaction does on its own connection (so the single writer connection
// never waits for itself).
type stmts map[string]*sql.Stmt

var (
	writeQueries = []string{selectLeaf, selectMetaPath, insertBlob, upsertCheckpoint, insertWriteIgnore, insertWriteReplace, deleteThread[0], deleteThread[1], deleteThread[2]}
	readQueries  = []string{selectLatest, selectByID, selectPaths, selectWrites}
)

func prepare(ctx context.Context, db *sql.DB, queries []string) (stmts, error) {
	m := make(stmts, len(queries))
	for _, q := range queries {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			m.close()
			return nil, err
		}
		m[q] = st
	}
	return m, nil
}

func (m stmts) close() {
	for _, st := range m {
		st.Close()
	}
}

// txn is a transaction that uses the prepared statements of its pool.
type txn struct {
	ctx context.Context
	tx  *sql.Tx
	st  stmts
}

func (t txn) query(q string, args ...any) (*sql.Rows, error) {
	if st := t.st[q]; st != nil {
		return t.tx.StmtContext(t.ctx, st).QueryContext(t.ctx, args...)
	}
	return t.tx.QueryContext(t.ctx, q, args...)
}

func (t txn) queryRow(q string, args ...any) *sql.Row {
	if st := t.st[q]; st != nil {
		return t.tx.StmtContext(t.ctx, st).QueryRowContext(t.ctx, args...)
	}
	return t.tx.QueryRowContext(t.ctx, q, args...)
}

func (t txn) exec(q string, args ...any) (sql.Result, error) {
	if st := t.st[q]; st != nil {
		return t.tx.StmtContext(t.ctx, st).ExecContext(t.ctx, args...)
	}
	return t.tx.ExecContext(t.ctx, q, args...)
}

const maxAttempts = 8

func retry(ctx context.Context, f func() error) error {
	backoff := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := f()
		if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			// A statement interrupted by the context reports SQLite's
			// error; keep the context's for errors.Is.
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		if err == nil || !isBusy(err) || attempt == maxAttempts {
			return err
		}
		d := backoff/2 + rand.N(backoff)
		backoff = min(2*backoff, time.Second)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

const (
	sqliteBusy   = 5 // SQLITE_BUSY
	sqliteLocked = 6 // SQLITE_LOCKED
)

func isBusy(err error) bool {
	e, ok := errors.AsType[*sqlite.Error](err)
	if !ok {
		return false
	}
	c := e.Code() & 0xff
	return c == sqliteBusy || c == sqliteLocked
}
