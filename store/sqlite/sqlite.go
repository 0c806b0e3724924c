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
	"sync/atomic"
	"time"

	"modernc.org/sqlite"

	"github.com/agentgraph/agentgraph/store"
)

// Store is a [store.Store], [store.Sweeper] and [store.ClockSetter] backed
// by a SQLite file. It is safe for concurrent use. Create one with [Open].
type Store struct {
	path  string
	w     *sql.DB // one connection; transactions BEGIN IMMEDIATE
	r     *sql.DB // read-only connections (w itself for ":memory:")
	ws    stmts   // statements prepared on w
	rs    stmts   // statements prepared on r
	clock atomic.Pointer[func() time.Time]
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
	switch strings.ToUpper(o.synchronous) {
	case "OFF", "NORMAL", "FULL", "EXTRA":
	default:
		return nil, fmt.Errorf("store/sqlite: invalid synchronous mode %q", o.synchronous)
	}
	if path == "" {
		return nil, errors.New("store/sqlite: empty database path")
	}
	s := &Store{path: path}
	s.SetClock(o.clock)
	common := url.Values{}
	common.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.busyTimeout.Milliseconds()))
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
		return nil, fmt.Errorf("store/sqlite: open %s: %w", path, err)
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
			return nil, fmt.Errorf("store/sqlite: open %s: %w", path, err)
		}
		s.rs = s.ws
		return s, nil
	}
	r := cloneValues(common)
	r.Add("_pragma", "query_only(1)")
	s.r, err = sql.Open("sqlite", dsn(path, r))
	if err != nil {
		s.w.Close()
		return nil, fmt.Errorf("store/sqlite: open %s: %w", path, err)
	}
	s.r.SetMaxOpenConns(max(o.readers, 1))
	s.r.SetMaxIdleConns(max(o.readers, 1))
	if s.ws, err = prepare(ctx, s.w, writeQueries); err == nil {
		s.rs, err = prepare(ctx, s.r, readQueries)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("store/sqlite: open %s: %w", path, err)
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	s.ws.close()
	if s.r != s.w {
		s.rs.close()
	}
	var err error
	if s.r != nil && s.r != s.w {
		err = s.r.Close()
	}
	return errors.Join(err, s.w.Close())
}

// SetClock implements [store.ClockSetter]; nil restores time.Now.
func (s *Store) SetClock(now func() time.Time) {
	if now == nil {
		s.clock.Store(nil)
		return
	}
	s.clock.Store(&now)
}

func (s *Store) now() time.Time {
	if f := s.clock.Load(); f != nil {
		return (*f)().UTC()
	}
	return time.Now().UTC()
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

func (s *Store) migrate(ctx context.Context) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS agentgraph_store_migrations (
			version    INTEGER PRIMARY KEY,
			applied_at INTEGER NOT NULL
		)`); err != nil {
			return err
		}
		var cur int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM agentgraph_store_migrations`).Scan(&cur); err != nil {
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
			if _, err := tx.ExecContext(ctx, `INSERT INTO agentgraph_store_migrations (version, applied_at) VALUES (?, ?)`, v, time.Now().UnixNano()); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
		}
		return nil
	})
	if _, ok := errors.AsType[*SchemaVersionError](err); ok {
		return err
	}
	if err != nil {
		return fmt.Errorf("store/sqlite: open %s: %w", s.path, err)
	}
	return nil
}

// write runs fn in a write transaction, retrying the whole transaction
// while the database stays busy.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	return retry(ctx, func() error {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}

// stmts holds statements prepared when the Store opens; database/sql
// prepares them again on each new connection as needed.
type stmts map[string]*sql.Stmt

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

const maxAttempts = 8

// retry runs f until it succeeds, fails with an error other than
// SQLITE_BUSY or SQLITE_LOCKED, or has been tried maxAttempts times.
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
