//go:build unix

package durabilitytest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", for raw reads

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
)

// Saver is what the tests need of a checkpointer: a saver that leases.
type Saver interface {
	checkpoint.Saver
	checkpoint.Leaser
	Close() error
}

// Row is a stored checkpoint of the root namespace, read from the database
// without decoding any value.
type Row struct {
	ID, Parent, Source string
	Step               int
}

// Backend is one kind of database under test.
type Backend struct {
	Name string
	// Fresh makes a new, empty database for t and returns its address: a
	// file path (SQLite) or a schema name (PostgreSQL, on the server of
	// pgdbtest.URLEnv, which child processes inherit). It skips t when the
	// backend is not available.
	Fresh func(t testing.TB) string
	// Open opens a saver on a database made by Fresh.
	Open func(ctx context.Context, addr string) (Saver, error)
	// Rows returns the checkpoints of thread in the root namespace, in ID
	// order.
	Rows func(t testing.TB, addr, thread string) []Row
	// Integrity checks the database's own consistency after a kill.
	Integrity func(t testing.TB, addr string)
	// WriteProbe returns a function reporting whether process pid is
	// inside a write transaction on the database right now; it fails
	// the test on errors.
	WriteProbe func(t testing.TB, addr string) func(pid int) bool
	// WriteProbeDoc says how WriteProbe knows, for the test's log.
	WriteProbeDoc string
	// Settle, when set, waits until the database has finished with the
	// dead process pid: a COMMIT the process sent just before it was
	// killed may still be in the server's hands, and what was committed
	// must be read after it landed (or was rolled back).
	Settle func(t testing.TB, addr string, pid int)
}

// SQLite is the backend of checkpoint/sqlite.
var SQLite = Backend{
	Name: "sqlite",
	Fresh: func(t testing.TB) string {
		return filepath.Join(t.TempDir(), "durability.db")
	},
	Open: func(ctx context.Context, path string) (Saver, error) {
		return sqlite.Open(ctx, path)
	},
	Rows: func(t testing.TB, path, thread string) []Row {
		t.Helper()
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
		require.NoError(t, err)
		defer db.Close()
		rows, err := db.QueryContext(context.Background(), `SELECT id, parent_id, json_extract(metadata, '$.step'), json_extract(metadata, '$.source')
			FROM checkpoints WHERE thread_id = ? AND ns = '' ORDER BY id`, thread)
		if err != nil && strings.Contains(err.Error(), "no such table") {
			return nil // killed before the schema was made
		}
		require.NoError(t, err)
		defer rows.Close()
		return scanRows(t, rows)
	},
	Integrity: func(t testing.TB, path string) {
		t.Helper()
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return // killed before the file was created
		}
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
		require.NoError(t, err)
		defer db.Close()
		var res string
		require.NoError(t, db.QueryRowContext(context.Background(), `PRAGMA integrity_check`).Scan(&res))
		require.Equal(t, "ok", res)
	},
	WriteProbe: sqliteWriteProbe,
	WriteProbeDoc: "the child holds SQLite's WAL write lock (a POSIX lock on byte 120 of the -shm file, " +
		"taken by BEGIN IMMEDIATE and held until COMMIT or ROLLBACK), seen with fcntl(F_GETLK) from the parent",
}

// scanRows reads the Rows of the query of a Backend's Rows (columns ID,
// parent, step, source), from database/sql or pgx.
func scanRows(t testing.TB, rows interface {
	Next() bool
	Scan(...any) error
	Err() error
}) []Row {
	t.Helper()
	var out []Row
	for rows.Next() {
		var r Row
		require.NoError(t, rows.Scan(&r.ID, &r.Parent, &r.Step, &r.Source))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// sqliteWALWriteLock is the offset in the -shm file of the lock a WAL-mode
// writer holds for the whole of its transaction (WAL_WRITE_LOCK: lock 0
// after UNIX_SHM_BASE = (22+SQLITE_SHM_NLOCK)*4 = 120).
const sqliteWALWriteLock = 120

func sqliteWriteProbe(t testing.TB, path string) func(pid int) bool {
	var f *os.File
	t.Cleanup(func() {
		if f != nil {
			f.Close()
		}
	})
	return func(pid int) bool {
		if f == nil {
			var err error
			// Read-only: the parent must not create the file, nor take
			// any lock (F_GETLK takes none).
			f, err = os.Open(path + "-shm")
			if errors.Is(err, os.ErrNotExist) {
				return false
			}
			require.NoError(t, err)
		}
		lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: sqliteWALWriteLock, Len: 1}
		require.NoError(t, syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk))
		return lk.Type != syscall.F_UNLCK && (int(lk.Pid) == pid || lk.Pid == -1)
	}
}

// appName is the application_name of the PostgreSQL sessions of a process,
// so that the parent can find a child's sessions in pg_stat_activity.
func appName(pid int) string { return fmt.Sprintf("agentgraph-durability-%d", pid) }

func pgURL(t testing.TB) string {
	if t != nil {
		return pgdbtest.URL(t)
	}
	return os.Getenv(pgdbtest.URLEnv)
}

// withAppName adds application_name to a postgres:// URL.
func withAppName(raw string, name string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func pgConnect(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), pgURL(t))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Postgres is the backend of checkpoint/postgres; it skips tests unless
// AGENTGRAPH_TEST_POSTGRES_URL is set.
var Postgres = Backend{
	Name: "postgres",
	Fresh: func(t testing.TB) string {
		return pgdbtest.FreshSchema(t, "agt_dur")
	},
	Open: func(ctx context.Context, schema string) (Saver, error) {
		raw := pgURL(nil)
		if raw == "" {
			return nil, errors.New(pgdbtest.URLEnv + " is not set")
		}
		u, err := withAppName(raw, appName(os.Getpid()))
		if err != nil {
			return nil, err
		}
		return postgres.Open(ctx, u, postgres.WithSchema(schema), postgres.WithMaxConns(4))
	},
	Rows: func(t testing.TB, schema, thread string) []Row {
		t.Helper()
		conn, err := pgx.Connect(context.Background(), pgURL(t))
		require.NoError(t, err)
		defer conn.Close(context.Background())
		var exists bool
		require.NoError(t, conn.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`,
			pgx.Identifier{schema, "agentgraph_checkpoints"}.Sanitize()).Scan(&exists))
		if !exists {
			return nil // killed before the schema was made
		}
		rows, err := conn.Query(context.Background(), `SELECT id, parent_id, (metadata->>'step')::int, metadata->>'source'
			FROM `+pgx.Identifier{schema, "agentgraph_checkpoints"}.Sanitize()+` WHERE thread_id = $1 AND ns = '' ORDER BY id`, thread)
		require.NoError(t, err)
		defer rows.Close()
		return scanRows(t, rows)
	},
	Integrity: func(testing.TB, string) {
		// The server aborts a dead client's transaction; there is no file
		// to check.
	},
	WriteProbe: func(t testing.TB, schema string) func(pid int) bool {
		conn := pgConnect(t)
		return func(pid int) bool {
			// A Put or PutWrites is one pipelined batch (an implicit
			// transaction the server commits on its own) or, the long
			// way, one BEGIN … COMMIT block; reads and lease statements
			// run alone (autocommit). So a session of the child that is
			// idle inside a transaction block, or that has written (it
			// has a transaction ID) in a statement other than a lease's,
			// is inside a saver write transaction — for a pipelined
			// batch this may be a moment before the server commits it,
			// which only makes the trial stop A again.
			var n int
			err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
				WHERE application_name = $1
				AND (state = 'idle in transaction' OR (backend_xid IS NOT NULL AND query NOT LIKE '%agentgraph_leases%'))`,
				appName(pid)).Scan(&n)
			require.NoError(t, err)
			return n > 0
		}
	},
	Settle: func(t testing.TB, _ string, pid int) {
		conn := pgConnect(t)
		deadline := time.Now().Add(30 * time.Second)
		for {
			var n int
			require.NoError(t, conn.QueryRow(context.Background(),
				`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, appName(pid)).Scan(&n))
			if n == 0 {
				return
			}
			require.True(t, time.Now().Before(deadline), "the server still has %d sessions of the dead child %d", n, pid)
			time.Sleep(5 * time.Millisecond)
		}
	},
	WriteProbeDoc: "a session of the child (found by application_name in pg_stat_activity) is idle in a transaction block " +
		"or has a transaction ID in a statement that is not a lease's: the saver's Put and PutWrites are its only " +
		"write transactions (a pipelined batch, or a BEGIN … COMMIT block the long way)",
}
