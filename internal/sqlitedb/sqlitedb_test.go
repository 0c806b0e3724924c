package sqlitedb

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func testConfig() Config {
	return Config{
		Options:         Options{BusyTimeout: time.Second, Synchronous: "NORMAL", MaxReaders: 2},
		MigrationsTable: "test_migrations",
		Migrations:      [][]string{{`CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)`}},
		WriteQueries:    []string{`INSERT INTO t (k, v) VALUES (?, ?)`},
		ReadQueries:     []string{`SELECT v FROM t WHERE k = ?`},
	}
}

func open(t *testing.T, path string, cfg Config) *DB {
	t.Helper()
	db, err := Open(t.Context(), path, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

func TestDSNEscapesPath(t *testing.T) {
	q := url.Values{"_txlock": {"immediate"}}
	require.Equal(t, "file:/d/a b%3fc%23d%25e.db?_txlock=immediate", dsn("/d/a b?c#d%e.db", q))
}

func TestOpenTakesPathLiterally(t *testing.T) {
	dir := t.TempDir()
	name := "a b?c#d%25.db"
	db := open(t, filepath.Join(dir, name), testConfig())
	require.NoError(t, db.Write(t.Context(), func(tx Tx) error {
		_, err := tx.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, "k", "v")
		return err
	}))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	require.Equal(t, name, entries[0].Name())
}

func TestOpenReadersAreReadOnly(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "x.db"), testConfig())
	require.NotSame(t, db.W, db.R)
	_, err := db.R.ExecContext(t.Context(), `INSERT INTO t (k, v) VALUES ('k', 'v')`)
	require.Error(t, err)
	require.NotContains(t, db.RS, `INSERT INTO t (k, v) VALUES (?, ?)`)
	require.Contains(t, db.RS, `SELECT v FROM t WHERE k = ?`)

	var v string
	require.NoError(t, db.Write(t.Context(), func(tx Tx) error {
		_, err := tx.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, "k", "v")
		return err
	}))
	require.NoError(t, db.Read(t.Context(), func(tx Tx) error {
		return tx.QueryRow(`SELECT v FROM t WHERE k = ?`, "k").Scan(&v)
	}))
	require.Equal(t, "v", v)
}

func TestOpenMemorySharesTheWriter(t *testing.T) {
	db := open(t, ":memory:", testConfig())
	require.Same(t, db.W, db.R)
	require.Len(t, db.WS, 2)
	require.Len(t, db.RS, 2)
}

func TestOpenForeignKeys(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := testConfig()
		cfg.ForeignKeys = on
		db := open(t, filepath.Join(t.TempDir(), "x.db"), cfg)
		var w, r bool
		require.NoError(t, db.W.QueryRowContext(t.Context(), `PRAGMA foreign_keys`).Scan(&w))
		require.NoError(t, db.R.QueryRowContext(t.Context(), `PRAGMA foreign_keys`).Scan(&r))
		require.Equal(t, on, w)
		require.Equal(t, on, r)
	}
}

func TestOpenMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	cfg := testConfig()
	db, err := Open(t.Context(), path, cfg)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	cfg.Migrations = append(cfg.Migrations, []string{`CREATE TABLE u (x INTEGER)`})
	db = open(t, path, cfg)
	var n, maxV int
	require.NoError(t, db.W.QueryRowContext(t.Context(), `SELECT COUNT(*), MAX(version) FROM test_migrations`).Scan(&n, &maxV))
	require.Equal(t, 2, n)
	require.Equal(t, 2, maxV)

	cfg.Migrations = cfg.Migrations[:1]
	_, err = Open(t.Context(), path, cfg)
	verr, ok := errors.AsType[*SchemaVersionError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, SchemaVersionError{Path: path, Found: 2, Supported: 1}, *verr)

	cfg.Migrations = [][]string{cfg.Migrations[0], {`CREATE TABLE u (x INTEGER)`}, {`NONSENSE`}}
	_, err = Open(t.Context(), path, cfg)
	require.ErrorContains(t, err, "migration 3: ")
}

func TestOpenAcceptsEverySynchronousMode(t *testing.T) {
	for _, mode := range []string{"OFF", "normal", "Full", "EXTRA"} {
		cfg := testConfig()
		cfg.Synchronous = mode
		open(t, filepath.Join(t.TempDir(), "x.db"), cfg)
	}
}

func TestOpenRefusesBadArguments(t *testing.T) {
	bad := testConfig()
	bad.Synchronous = "SOMETIMES"
	tests := []struct {
		name, path string
		cfg        Config
		want       string
	}{
		{"empty path", "", testConfig(), "empty database path"},
		{"unknown synchronous mode", filepath.Join(t.TempDir(), "x.db"), bad, `invalid synchronous mode "SOMETIMES"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(t.Context(), tt.path, tt.cfg)
			require.EqualError(t, err, tt.want)
			if tt.path != "" {
				require.NoFileExists(t, tt.path, "nothing is created")
			}
		})
	}
}

func TestOpenNamesPathInOtherErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "x.db")
	_, err := Open(t.Context(), path, testConfig())
	require.ErrorContains(t, err, "open "+path+": ")
}

func TestRetryStopsAtOtherErrors(t *testing.T) {
	calls := 0
	errOther := errors.New("other")
	err := Retry(t.Context(), func() error { calls++; return errOther })
	require.ErrorIs(t, err, errOther)
	require.Equal(t, 1, calls)
}

// codeError is an error with SQLite's result code, as modernc.org/sqlite's
// *Error reports it (its fields are unexported, and SQLITE_PROTOCOL cannot
// be provoked on demand).
type codeError int

func (e codeError) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e codeError) Code() int     { return int(e) }

func TestRetryRetriesOnlyABusyDatabase(t *testing.T) {
	tests := []struct {
		name  string
		code  int
		calls int
	}{
		{"SQLITE_BUSY", 5, 3},
		{"SQLITE_LOCKED", 6, 3},
		{"SQLITE_PROTOCOL", 15, 3},
		{"SQLITE_BUSY_SNAPSHOT, an extended busy code", 5 | 2<<8, 3},
		{"SQLITE_CORRUPT", 11, 1},
		{"SQLITE_CONSTRAINT", 19, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := Retry(t.Context(), func() error {
				if calls++; calls < 3 {
					return fmt.Errorf("begin: %w", codeError(tt.code))
				}
				return nil
			})
			if tt.calls == 1 {
				require.ErrorIs(t, err, codeError(tt.code))
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tt.calls, calls)
		})
	}
}

func TestKeyPath(t *testing.T) {
	for key, want := range map[string]string{"": `$.""`, "a.b": `$."a.b"`, "é": `$."é"`, `a"b`: "", `a\b`: "", "a\nb": "", "\x1f": ""} {
		got, ok := KeyPath(key)
		if got != want || ok != (want != "") {
			t.Errorf("KeyPath(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
}

var errTestCorrupt = errors.New("test: corrupt")

func TestOpenDamagedFile(t *testing.T) {
	header := []byte("SQLite format 3\x00")
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", []byte{}},
		{"not a database", []byte("this is not a SQLite database, only some text that is long enough to hold a header")},
		{"header only", header},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "db")
			require.NoError(t, os.WriteFile(path, tt.data, 0o600))
			cfg := testConfig()
			cfg.BusyTimeout = 0 // an empty file is refused at once
			cfg.ErrCorrupt = errTestCorrupt
			_, err := Open(t.Context(), path, cfg)
			var cerr *CorruptError
			require.ErrorAs(t, err, &cerr)
			require.Equal(t, path, cerr.Path)
			require.ErrorIs(t, err, errTestCorrupt)
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, int64(len(tt.data)), fi.Size(), "the file is left as it was")
		})
	}
}

func TestOpenCreatesMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	open(t, path, testConfig())
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Positive(t, fi.Size())
}

func TestReadOfTruncatedFileIsCorruptError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	cfg := testConfig()
	cfg.ErrCorrupt = errTestCorrupt
	db, err := Open(t.Context(), path, cfg)
	require.NoError(t, err)
	require.NoError(t, db.Write(t.Context(), func(tx Tx) error {
		for i := range 2000 {
			if _, err := tx.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, fmt.Sprint(i), strings.Repeat("v", 100)); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, db.Close())
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(path, fi.Size()/2))

	db, err = Open(t.Context(), path, cfg)
	if err == nil {
		t.Cleanup(func() { db.Close() })
		err = db.Read(t.Context(), func(tx Tx) error {
			rows, err := tx.Query(`SELECT k, v FROM t`)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
			}
			return rows.Err()
		})
	}
	var cerr *CorruptError
	require.ErrorAs(t, err, &cerr)
	require.Equal(t, path, cerr.Path)
	require.ErrorIs(t, err, errTestCorrupt)
}

// TestOpenConcurrentlyCreates opens a new file from several goroutines at
// once: one creates it, and the others may find it still empty, which
// must not be taken for a truncated database.
func TestOpenConcurrentlyCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	errs := make([]error, 8)
	dbs := make([]*DB, len(errs))
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { dbs[i], errs[i] = Open(t.Context(), path, testConfig()) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err)
		require.NoError(t, dbs[i].Close())
	}
}

func TestPrepareWriteServesLaterWriteTransactions(t *testing.T) {
	const q = `INSERT INTO t (k, v) VALUES (?, ?), (?, ?)`
	for _, path := range []string{":memory:", "file"} {
		t.Run(path, func(t *testing.T) {
			if path == "file" {
				path = filepath.Join(t.TempDir(), "db")
			}
			db := open(t, path, testConfig())
			require.NoError(t, db.PrepareWrite(t.Context(), q))
			first := db.moreStmts()[q]
			require.NotNil(t, first)
			require.NoError(t, db.PrepareWrite(t.Context(), q), "again")
			require.Same(t, first, db.moreStmts()[q], "prepared once")
			require.NoError(t, db.PrepareWrite(t.Context(), testConfig().WriteQueries[0]))
			require.Nil(t, db.moreStmts()[testConfig().WriteQueries[0]], "prepared by Open already")
			require.NoError(t, db.Write(t.Context(), func(tx Tx) error {
				require.Same(t, first, tx.stmt(q))
				_, err := tx.Exec(q, "a", "1", "b", "2")
				return err
			}))
			require.NoError(t, db.Read(t.Context(), func(tx Tx) error {
				var v string
				require.NoError(t, tx.QueryRow(`SELECT group_concat(v, ',') FROM t`).Scan(&v))
				require.Equal(t, "1,2", v)
				return nil
			}))
			require.Error(t, db.PrepareWrite(t.Context(), `INSERT INTO nowhere VALUES (?)`))
		})
	}
}
