package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
)

// Options are the settings of a database that the options of the SQLite
// backends set. [DefaultOptions] returns the defaults they document.
type Options struct {
	// BusyTimeout is how long a statement waits for a database locked by
	// another connection or process before failing with SQLITE_BUSY
	// (PRAGMA busy_timeout).
	BusyTimeout time.Duration
	// Synchronous is PRAGMA synchronous of the writer connection: OFF,
	// NORMAL, FULL or EXTRA, in any case. [Open] refuses any other value.
	Synchronous string
	// MaxReaders caps the read-only connections; below 1 means 1.
	MaxReaders int
}

// DefaultOptions returns a busy timeout of 5s, PRAGMA synchronous NORMAL
// and max(4, GOMAXPROCS) readers.
func DefaultOptions() Options {
	return Options{BusyTimeout: 5 * time.Second, Synchronous: "NORMAL", MaxReaders: max(4, runtime.GOMAXPROCS(0))}
}

// Config configures [Open].
type Config struct {
	Options
	// ForeignKeys turns PRAGMA foreign_keys on for every connection.
	ForeignKeys bool
	// MigrationsTable is the table that records the applied schema
	// versions.
	MigrationsTable string
	// Migrations are the schema versions in order: Migrations[i] brings a
	// database from version i to version i+1.
	Migrations [][]string
	// WriteQueries are prepared on the writer connection, ReadQueries on
	// the read-only ones.
	WriteQueries, ReadQueries []string
	// ErrCorrupt, if not nil, is matched (with [errors.Is]) by every
	// [*CorruptError] of the database, so that a backend's callers can
	// recognise a damaged file whichever operation met it.
	ErrCorrupt error
}

// DB is a SQLite database opened by [Open]. Close it when done.
type DB struct {
	// W is the one writer connection; its transactions BEGIN IMMEDIATE.
	W *sql.DB
	// R is the pool of read-only connections, or W itself for ":memory:".
	R *sql.DB
	// WS and RS are the statements of Config.WriteQueries prepared on W
	// and of Config.ReadQueries prepared on R. For ":memory:" they are
	// the same map, of all the queries prepared on W.
	WS, RS Stmts

	path       string
	errCorrupt error
	ckpt       *checkpointer // nil for ":memory:"

	// more holds the statements of PrepareWrite, copied on every
	// addition, so that a transaction reads its map without a lock.
	more   atomic.Pointer[Stmts]
	moreMu sync.Mutex // serializes PrepareWrite's additions
}

// SchemaVersionError is returned by [Open] for a database whose recorded
// schema version is newer than the last of Config.Migrations: the file was
// written by a newer version of the program. The SQLite backends export it
// under their own names.
type SchemaVersionError struct {
	// Path is the database file.
	Path string
	// Found is the schema version recorded in the file.
	Found int
	// Supported is the newest schema version the program knows.
	Supported int
}

// Error describes the mismatch.
func (e *SchemaVersionError) Error() string {
	return fmt.Sprintf("%s has schema version %d, newer than version %d known to this program; upgrade the program", e.Path, e.Found, e.Supported)
}

// CorruptError reports a database file that is damaged or is not a SQLite
// database: SQLite said so (SQLITE_CORRUPT, SQLITE_NOTADB), or the file
// exists with zero length, which SQLite would take for a new, empty
// database although it can only be a truncated one (SQLite writes a
// database's first page as it creates the file).
type CorruptError struct {
	// Path is the database file.
	Path string
	// Err is SQLite's error, or what is wrong with the file.
	Err error

	is error // Config.ErrCorrupt
}

// Error names the file and the reason.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("database file %s is damaged or not a SQLite database: %v", e.Path, e.Err)
}

// Unwrap returns the underlying error.
func (e *CorruptError) Unwrap() error { return e.Err }

// Is reports whether target is the Config.ErrCorrupt of the database.
func (e *CorruptError) Is(target error) bool { return e.is != nil && target == e.is }

// errEmptyFile is the Err of a [*CorruptError] for a zero-length file.
var errEmptyFile = errors.New("the file is empty (truncated)")

// checkSynchronous returns an error unless mode, in any case, is a mode of
// PRAGMA synchronous: OFF, NORMAL, FULL or EXTRA.
func checkSynchronous(mode string) error {
	switch strings.ToUpper(mode) {
	case "OFF", "NORMAL", "FULL", "EXTRA":
		return nil
	}
	return fmt.Errorf("invalid synchronous mode %q", mode)
}

// Open opens the SQLite database at path, creating it if needed, runs any
// pending migrations of cfg in one write transaction, and prepares cfg's
// queries. path ":memory:" opens a private in-memory database whose one
// connection serves reads too. The file is opened in WAL mode.
//
// An empty path or an invalid Options.Synchronous fails at once. A
// database recorded with a schema version newer than cfg knows fails with
// a [*SchemaVersionError]; a file that exists but is empty, or that SQLite
// finds damaged or not a database, fails with a [*CorruptError]. Other
// errors name path.
func Open(ctx context.Context, path string, cfg Config) (*DB, error) {
	if path == "" {
		return nil, errors.New("empty database path")
	}
	if err := checkSynchronous(cfg.Synchronous); err != nil {
		return nil, err
	}
	db, err := openDB(ctx, path, cfg)
	if err == nil {
		return db, nil
	}
	err = asCorrupt(path, cfg.ErrCorrupt, err)
	if _, ok := errors.AsType[*SchemaVersionError](err); ok {
		return nil, err
	}
	if _, ok := errors.AsType[*CorruptError](err); ok {
		return nil, err
	}
	return nil, fmt.Errorf("open %s: %w", path, err)
}

func openDB(ctx context.Context, path string, cfg Config) (*DB, error) {
	// temp_store MEMORY keeps statement journals (a savepoint's undo
	// pages, written for the first change of each page inside it) in
	// memory rather than in a temporary file: a write per page otherwise.
	// The writer's page cache and automatic checkpoint: see
	// checkpointer.go.
	w := cfg.pragmas("journal_mode(WAL)", "synchronous("+cfg.Synchronous+")", "temp_store(MEMORY)",
		fmt.Sprintf("cache_size(%d)", -writerCacheKiB), fmt.Sprintf("wal_autocheckpoint(%d)", writerAutocheckpoint))
	w.Set("_txlock", "immediate")

	memory := path == ":memory:"
	if !memory {
		if err := create(ctx, path, cfg); err != nil {
			return nil, err
		}
		if err := checkNotEmpty(path, cfg.ErrCorrupt); err != nil {
			return nil, err
		}
	}
	db := &DB{path: path, errCorrupt: cfg.ErrCorrupt}
	var err error
	if memory {
		db.W, err = sql.Open("sqlite", ":memory:?"+w.Encode())
	} else {
		db.W, err = sql.Open("sqlite", dsn(path, w))
	}
	if err != nil {
		return nil, err
	}
	db.W.SetMaxOpenConns(1)
	db.W.SetMaxIdleConns(1)
	db.W.SetConnMaxLifetime(0)
	db.W.SetConnMaxIdleTime(0)
	if err := db.migrate(ctx, cfg.MigrationsTable, cfg.Migrations); err != nil {
		db.W.Close()
		return nil, err
	}
	if memory {
		db.R = db.W
		if db.WS, err = prepare(ctx, db.W, slices.Concat(cfg.WriteQueries, cfg.ReadQueries)); err != nil {
			db.Close()
			return nil, err
		}
		db.RS = db.WS
		return db, nil
	}
	db.R, err = sql.Open("sqlite", dsn(path, cfg.pragmas("query_only(1)")))
	if err != nil {
		db.W.Close()
		return nil, err
	}
	// The checkpointer's connection syncs the files as the writer's
	// synchronous says: a checkpoint syncs by the connection that runs it.
	if db.ckpt, err = newCheckpointer(dsn(path, cfg.pragmas("synchronous("+cfg.Synchronous+")"))); err != nil {
		db.R.Close()
		db.W.Close()
		return nil, err
	}
	db.R.SetMaxOpenConns(max(cfg.MaxReaders, 1))
	db.R.SetMaxIdleConns(max(cfg.MaxReaders, 1))
	if db.WS, err = prepare(ctx, db.W, cfg.WriteQueries); err == nil {
		db.RS, err = prepare(ctx, db.R, cfg.ReadQueries)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Close closes the prepared statements and the connections.
func (db *DB) Close() error {
	var cerr error
	if db.ckpt != nil {
		cerr = db.ckpt.close()
	}
	db.WS.close()
	db.moreStmts().close()
	var err error
	if db.R != nil && db.R != db.W {
		db.RS.close()
		err = db.R.Close()
	}
	return errors.Join(cerr, err, db.W.Close())
}

// pragmas returns the connection parameters that every connection gets,
// followed by the given extra pragmas.
func (c Config) pragmas(extra ...string) url.Values {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", c.BusyTimeout.Milliseconds()))
	if c.ForeignKeys {
		q.Add("_pragma", "foreign_keys(ON)")
	}
	for _, p := range extra {
		q.Add("_pragma", p)
	}
	return q
}

// dsn returns a SQLite URI naming the file at path, so that any character
// of path, '?' and '#' included, is taken literally.
func dsn(path string, q url.Values) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(path) + "?" + q.Encode()
}

// migrate brings the schema recorded in table up to len(migrations).
func (db *DB) migrate(ctx context.Context, table string, migrations [][]string) error {
	return db.Write(ctx, func(t Tx) error {
		tx := t.Tx
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
			version    INTEGER PRIMARY KEY,
			applied_at INTEGER NOT NULL
		)`); err != nil {
			return err
		}
		var cur int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+table).Scan(&cur); err != nil {
			return err
		}
		if cur > len(migrations) {
			return &SchemaVersionError{Path: db.path, Found: cur, Supported: len(migrations)}
		}
		for v := cur + 1; v <= len(migrations); v++ {
			for _, stmt := range migrations[v-1] {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("migration %d: %w", v, err)
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` (version, applied_at) VALUES (?, ?)`, v, time.Now().UnixNano()); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
		}
		return nil
	})
}

// Write runs fn in a write transaction on W, retrying the whole
// transaction (see [Retry]) while the database stays busy. An error from
// fn rolls the transaction back.
//
// An error saying that the file is damaged is returned as a
// [*CorruptError].
func (db *DB) Write(ctx context.Context, fn func(Tx) error) error {
	return db.corrupt(Retry(ctx, func() error {
		tx, err := db.W.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(Tx{tx, ctx, db.WS, db.moreStmts()}); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		if db.ckpt != nil {
			db.ckpt.committed()
		}
		return nil
	}))
}

// Read runs fn in a read-only transaction on R, so that it sees one
// snapshot, retrying it (see [Retry]) while the database stays busy. An
// error saying that the file is damaged is returned as a [*CorruptError].
func (db *DB) Read(ctx context.Context, fn func(Tx) error) error {
	return db.corrupt(Retry(ctx, func() error {
		tx, err := db.R.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		return fn(Tx{tx, ctx, db.RS, nil})
	}))
}

// corrupt returns err, as a [*CorruptError] if it says that the database
// file is damaged.
func (db *DB) corrupt(err error) error { return asCorrupt(db.path, db.errCorrupt, err) }

// asCorrupt returns err, as a [*CorruptError] for the file at path if it
// says that the file is damaged (unless it already is one).
func asCorrupt(path string, is, err error) error {
	if _, ok := errors.AsType[*CorruptError](err); ok || !isCorrupt(err) {
		return err
	}
	return &CorruptError{Path: path, Err: err, is: is}
}

// Stmts maps queries to the statements prepared for them. database/sql
// prepares a statement again on each new connection as needed, which a
// transaction does on its own connection (so the single writer connection
// never waits for itself).
type Stmts map[string]*sql.Stmt

func prepare(ctx context.Context, db *sql.DB, queries []string) (Stmts, error) {
	m := make(Stmts, len(queries))
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

func (m Stmts) close() {
	for _, st := range m {
		st.Close()
	}
}

// moreStmts returns the statements PrepareWrite has prepared so far.
func (db *DB) moreStmts() Stmts {
	if m := db.more.Load(); m != nil {
		return *m
	}
	return nil
}

// PrepareWrite prepares q on the writer connection, unless it was
// prepared already (by Open, as one of Config.WriteQueries, or by an
// earlier call): the write transactions begun afterwards run q through
// that statement. It is for queries built at run time, such as a
// multi-row INSERT of a given number of rows.
//
// PrepareWrite takes the writer connection, so it must not be called
// inside a write transaction of db (it would wait for it forever).
func (db *DB) PrepareWrite(ctx context.Context, q string) error {
	if db.WS[q] != nil || db.moreStmts()[q] != nil {
		return nil
	}
	db.moreMu.Lock()
	defer db.moreMu.Unlock()
	old := db.moreStmts()
	if old[q] != nil {
		return nil
	}
	st, err := db.W.PrepareContext(ctx, q)
	if err != nil {
		return db.corrupt(err)
	}
	m := make(Stmts, len(old)+1)
	maps.Copy(m, old)
	m[q] = st
	db.more.Store(&m)
	return nil
}

// Tx is a transaction begun by [DB.Write] or [DB.Read]. Its Query,
// QueryRow and Exec run under the context the transaction was begun with,
// through the statement prepared for the query on the transaction's pool
// if there is one.
type Tx struct {
	// Tx is the underlying transaction.
	Tx *sql.Tx

	ctx   context.Context
	stmts Stmts
	more  Stmts // PrepareWrite's, for a write transaction
}

// stmt returns the statement prepared for q, or nil.
func (t Tx) stmt(q string) *sql.Stmt {
	if st := t.stmts[q]; st != nil {
		return st
	}
	return t.more[q]
}

// Query runs a query that returns rows.
func (t Tx) Query(q string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(q); st != nil {
		return t.Tx.StmtContext(t.ctx, st).QueryContext(t.ctx, args...)
	}
	return t.Tx.QueryContext(t.ctx, q, args...)
}

// QueryRow runs a query that returns at most one row.
func (t Tx) QueryRow(q string, args ...any) *sql.Row {
	if st := t.stmt(q); st != nil {
		return t.Tx.StmtContext(t.ctx, st).QueryRowContext(t.ctx, args...)
	}
	return t.Tx.QueryRowContext(t.ctx, q, args...)
}

// Exec runs a query that returns no rows.
func (t Tx) Exec(q string, args ...any) (sql.Result, error) {
	if st := t.stmt(q); st != nil {
		return t.Tx.StmtContext(t.ctx, st).ExecContext(t.ctx, args...)
	}
	return t.Tx.ExecContext(t.ctx, q, args...)
}

// maxAttempts is how many times [Retry] runs a function that keeps
// failing with a busy database.
const maxAttempts = 8

// Retry runs f until it succeeds, fails with an error other than
// SQLITE_BUSY, SQLITE_LOCKED or SQLITE_PROTOCOL, or has been tried 8
// times, waiting a jittered, growing delay between attempts. If ctx is
// done when f fails, the error also wraps ctx.Err().
func Retry(ctx context.Context, f func() error) error {
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
	// sqliteProtocol is SQLite's error for a connection that kept losing
	// the race for a WAL lock when starting a transaction (SQLITE_PROTOCOL:
	// SQLite retries that race itself, and gives up only after many
	// losses, as under heavy contention between processes): busy, too.
	sqliteProtocol = 15
)

const (
	sqliteCorrupt = 11 // SQLITE_CORRUPT
	sqliteNotADB  = 26 // SQLITE_NOTADB
)

// isCorrupt reports whether err is SQLite's error for a damaged file or a
// file that is not a database.
func isCorrupt(err error) bool {
	e, ok := errors.AsType[*sqlite.Error](err)
	if !ok {
		return false
	}
	c := e.Code() & 0xff
	return c == sqliteCorrupt || c == sqliteNotADB
}

// checkNotEmpty returns a [*CorruptError] if path is a regular file of
// zero length. Databases are created whole (see create), so an empty file
// is a truncated one, never one being created.
func checkNotEmpty(path string, is error) error {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 0 {
		return nil // SQLite reports the rest
	}
	return &CorruptError{Path: path, Err: errEmptyFile, is: is}
}

// create makes the database at path, with its schema, if there is no file
// there. It builds the database in a temporary file beside path and links
// it into place, so that path never names a half-made database: a process
// killed while creating leaves at most a stray temporary file, and an
// empty file at path can only be a damaged one. Two processes creating one
// path at once both succeed; the first link wins.
func create(ctx context.Context, path string, cfg Config) error {
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	tmp := fmt.Sprintf("%s.creating-%016x", path, rand.Uint64())
	defer func() {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			_ = os.Remove(tmp + suffix)
		}
	}()
	w := cfg.pragmas("journal_mode(WAL)", "synchronous(FULL)")
	w.Set("_txlock", "immediate")
	sdb, err := sql.Open("sqlite", dsn(tmp, w))
	if err != nil {
		return err
	}
	sdb.SetMaxOpenConns(1)
	db := &DB{W: sdb, path: tmp}
	err = db.migrate(ctx, cfg.MigrationsTable, cfg.Migrations)
	// Closing the last connection checkpoints the WAL into the file.
	if cerr := sdb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	return nil
}

// isBusy reports whether err is SQLite's error for a database another
// connection holds: SQLITE_BUSY, SQLITE_LOCKED or SQLITE_PROTOCOL (an
// error with a Code method, as modernc.org/sqlite's, whose primary code
// is one of those).
func isBusy(err error) bool {
	e, ok := errors.AsType[interface {
		error
		Code() int
	}](err)
	if !ok {
		return false
	}
	switch e.Code() & 0xff {
	case sqliteBusy, sqliteLocked, sqliteProtocol:
		return true
	}
	return false
}

// KeyPath returns the JSON path, for json_extract and json_type, of the
// member key of a top-level object, and false if the path cannot name key:
// SQLite takes a quoted label literally, so key must hold no double quote,
// backslash or control character.
func KeyPath(key string) (string, bool) {
	if strings.ContainsAny(key, `"\`) || strings.ContainsFunc(key, func(r rune) bool { return r < ' ' }) {
		return "", false
	}
	return `$."` + key + `"`, true
}
