package sqlite_test

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/sqlite"
)

// rawDB opens path with the driver alone, on one connection, with CHECK
// constraints off: what a bad write by hand could do.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=ignore_check_constraints(1)")
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// fixture is a thread with a claimed run that has an event.
type fixture struct {
	path, thread, run string
	b                 *sqlite.Backend
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	f := fixture{path: filepath.Join(t.TempDir(), "server.db"), thread: "t1", run: "r1"}
	f.b = open(t, f.path)
	_, err := f.b.CreateThread(t.Context(), server.ThreadRecord{ID: f.thread, CreatedAt: time.Now(), Status: "idle"}, "")
	require.NoError(t, err)
	_, err = f.b.CreateRun(t.Context(), server.RunRecord{ID: f.run, ThreadID: f.thread, AssistantID: "a", CreatedAt: time.Now(),
		MultitaskStrategy: "reject", GraphID: "g", Kwargs: json.RawMessage(`{}`)}, nil)
	require.NoError(t, err)
	c, err := f.b.ClaimRun(t.Context(), "h", time.Minute, nil)
	require.NoError(t, err)
	_, err = f.b.AppendEvent(t.Context(), c, "values", json.RawMessage(`{}`))
	require.NoError(t, err)
	return f
}

func TestDamagedRowsAreCorruptRowErrors(t *testing.T) {
	for _, tc := range []struct {
		name, query        string
		table, key, column string
		read               func(f fixture) error
	}{
		{"thread created_at text", `UPDATE agentgraph_server_threads SET created_at = 'noon'`, "threads", "t1", "created_at",
			func(f fixture) error { _, err := f.b.Thread(t.Context(), f.thread); return err }},
		{"thread metadata not an object", `UPDATE agentgraph_server_threads SET metadata = '[1]'`, "threads", "t1", "metadata",
			func(f fixture) error { _, err := f.b.Thread(t.Context(), f.thread); return err }},
		{"thread values not JSON, found by a search", `UPDATE agentgraph_server_threads SET vals = '{oops'`, "threads", "t1", "vals",
			func(f fixture) error {
				_, _, err := f.b.SearchThreads(t.Context(), server.ThreadQuery{Limit: 10})
				return err
			}},
		{"run kwargs not JSON", `UPDATE agentgraph_server_runs SET kwargs = 'garbage'`, "runs", "r1", "kwargs",
			func(f fixture) error { _, err := f.b.Run(t.Context(), f.run); return err }},
		{"run attempt text, found by a listing", `UPDATE agentgraph_server_runs SET attempt = 'first'`, "runs", "r1", "attempt",
			func(f fixture) error { _, _, err := f.b.ListRuns(t.Context(), f.thread, "", 10, 0); return err }},
		{"run metadata a blob", `UPDATE agentgraph_server_runs SET metadata = x'00ff'`, "runs", "r1", "metadata",
			func(f fixture) error { _, err := f.b.Run(t.Context(), f.run); return err }},
		{"event data not JSON", `UPDATE agentgraph_server_events SET data = 'garbage'`, "events", "r1", "data",
			func(f fixture) error { _, err := f.b.Events(t.Context(), f.run, 0); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			_, err := rawDB(t, f.path).ExecContext(t.Context(), tc.query)
			require.NoError(t, err)
			err = tc.read(f)
			var ce *sqlite.CorruptRowError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.table, ce.Table)
			require.Equal(t, tc.key, ce.Key)
			require.Equal(t, tc.column, ce.Column)
			require.ErrorIs(t, err, sqlite.ErrCorrupt)
			require.Contains(t, err.Error(), tc.column)
		})
	}
}

// A run whose row cannot be handed over ends in error at its claim, and
// the claim goes on to the next run: a damaged row never blocks the queue.
func TestClaimEndsADamagedRunAndGoesOn(t *testing.T) {
	for _, damage := range []string{
		`UPDATE agentgraph_server_runs SET kwargs = 'garbage' WHERE run_id = 'bad'`,
		`UPDATE agentgraph_server_runs SET metadata = '"not an object"' WHERE run_id = 'bad'`,
		`UPDATE agentgraph_server_runs SET created_at = 'noon' WHERE run_id = 'bad'`,
	} {
		t.Run(damage, func(t *testing.T) {
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "server.db")
			b := open(t, path)
			for _, id := range []string{"t1", "t2"} {
				_, err := b.CreateThread(ctx, server.ThreadRecord{ID: id, CreatedAt: time.Now(), Status: "idle"}, "")
				require.NoError(t, err)
			}
			for _, r := range [][2]string{{"bad", "t1"}, {"next", "t1"}, {"other", "t2"}} {
				_, err := b.CreateRun(ctx, server.RunRecord{ID: r[0], ThreadID: r[1], AssistantID: "a", CreatedAt: time.Now(),
					MultitaskStrategy: "enqueue", GraphID: "g", Kwargs: json.RawMessage(`{}`)}, nil)
				require.NoError(t, err)
			}
			raw := rawDB(t, path)
			_, err := raw.ExecContext(ctx, damage)
			require.NoError(t, err)

			var got []string
			for {
				c, err := b.ClaimRun(ctx, "h", time.Minute, nil)
				require.NoError(t, err)
				if c == nil {
					break
				}
				got = append(got, c.Run.ID)
				require.NoError(t, b.FinishRun(ctx, c, server.RunResult{Status: "success", Thread: server.ThreadState{Status: "idle"}}))
			}
			require.Equal(t, []string{"next", "other"}, got)
			var status, result string
			require.NoError(t, raw.QueryRowContext(ctx, `SELECT status, result FROM agentgraph_server_runs WHERE run_id = 'bad'`).Scan(&status, &result))
			require.Equal(t, "error", status)
			require.Contains(t, result, "CorruptRun")
			require.Contains(t, result, "is damaged")
			evs, err := b.Events(ctx, "bad", 0)
			require.NoError(t, err)
			require.Len(t, evs, 1)
			require.Equal(t, "end", evs[0].Name)
		})
	}
}

func TestOpenDamagedFileFails(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"empty", ""},
		{"not a database", "# notes\nthis file was never a SQLite database\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "server.db")
			require.NoError(t, os.WriteFile(path, []byte(tc.data), 0o600))
			_, err := sqlite.Open(t.Context(), path, sqlite.WithBusyTimeout(0))
			var fe *sqlite.CorruptFileError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, path, fe.Path)
			require.ErrorIs(t, err, sqlite.ErrCorrupt)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, tc.data, string(got), "the file is left as it was")
		})
	}
}

func TestOpenRefusesASchemaFromANewerVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.db")
	require.NoError(t, open(t, path).Close())
	_, err := rawDB(t, path).ExecContext(t.Context(), `INSERT INTO agentgraph_server_schema_migrations (version, applied_at) VALUES (?, 0)`, sqlite.SchemaVersion()+1)
	require.NoError(t, err)
	_, err = sqlite.Open(t.Context(), path)
	var sv *sqlite.SchemaVersionError
	require.ErrorAs(t, err, &sv)
	require.Equal(t, sqlite.SchemaVersion()+1, sv.Found)
	require.Equal(t, sqlite.SchemaVersion(), sv.Supported)
}

func TestOpenRefusesABadSynchronousMode(t *testing.T) {
	_, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "server.db"), sqlite.WithSynchronous("SOMETIMES"))
	require.ErrorContains(t, err, "invalid synchronous mode")
}
