package graph_test

// Stored data that cannot be read back as what was written — damaged by
// hand with SQL in a real SQLite file and in a real PostgreSQL schema after
// a real run — makes GetState, Resume and History return a
// *checkpoint.CorruptError naming the thread, namespace and checkpoint:
// never a crash (a 1 TiB size field once killed the process), a hang, or a
// silently wrong state (an empty frontier once made a paused run look
// finished).

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
	"github.com/agentgraph/agentgraph/state"
)

type corruptState struct {
	Log  state.Append[string]
	Note state.Value[string]
}

// corruptGraph appends to Log (and sets Note) over three steps, so that
// Log is stored as deltas, then runs ask, which interrupts, beside side,
// which finishes: the run pauses with side's writes and ask's interrupt
// pending.
func corruptGraph(t testing.TB, saver checkpoint.Saver) *graph.Graph[corruptState] {
	t.Helper()
	appendNode := func(name string) graph.NodeFunc[corruptState] {
		return func(context.Context, corruptState) (corruptState, error) {
			return corruptState{Log: state.Items(name), Note: state.Set(name)}, nil
		}
	}
	g, err := graph.New[corruptState]().
		AddNode("a1", appendNode("a1")).
		AddNode("a2", appendNode("a2")).
		AddNode("a3", appendNode("a3")).
		AddNode("ask", func(ctx context.Context, _ corruptState) (corruptState, error) {
			answer, err := graph.InterruptAs[string](ctx, "question")
			if err != nil {
				return corruptState{}, err
			}
			return corruptState{Log: state.Items("ask:" + answer)}, nil
		}).
		AddNode("side", func(context.Context, corruptState) (corruptState, error) {
			return corruptState{Log: state.Items("side"), Note: state.Set("side")}, nil
		}).
		AddNode("b", appendNode("b")).
		AddEdge(graph.Start, "a1").AddEdge("a1", "a2").AddEdge("a2", "a3").
		AddEdge("a3", "ask").AddEdge("a3", "side").
		AddEdge("ask", "b").AddEdge("side", "b").AddEdge("b", graph.End).
		Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

const corruptThread = "thread-1"

// corruptTarget is what a damage aims at: the paused run's latest
// checkpoint and the versions of its channels.
type corruptTarget struct {
	cp              string
	logVer, noteVer int64
	sqliteFile      string // "" for PostgreSQL
	postgresBackend bool
	// exec runs a query and returns the number of rows it changed.
	exec func(t *testing.T, query string, args ...any) int64
}

// q adapts a query written for SQLite, with tables checkpoints, blobs and
// writes and ? placeholders, to the backend.
func (tg *corruptTarget) q(query string) string {
	if !tg.postgresBackend {
		return query
	}
	for _, table := range []string{"checkpoints", "blobs", "writes"} {
		query = strings.ReplaceAll(query, " "+table+" ", " agentgraph_"+table+" ")
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mustExec runs a damaging statement, which must change one row at least.
func (tg *corruptTarget) mustExec(t *testing.T, query string, args ...any) {
	t.Helper()
	require.Positive(t, tg.exec(t, tg.q(query), args...), "no row changed by %s", query)
}

// setBlob stores data as version v of channel, with a matching size and
// hash, so that only its meaning is wrong.
func (tg *corruptTarget) setBlob(t *testing.T, channel string, v int64, data string) {
	t.Helper()
	h := sha256.Sum256([]byte(data))
	tg.mustExec(t, `UPDATE blobs SET data = ?, size = ?, hash = ?, base = NULL, depth = 0 WHERE channel = ? AND version = ?`,
		[]byte(data), len(data), h[:], channel, v)
}

func (tg *corruptTarget) setFrontier(t *testing.T, frontier string) {
	t.Helper()
	tg.mustExec(t, `UPDATE checkpoints SET frontier = ? WHERE id = ?`, []byte(frontier), tg.cp)
}

// corruptCase damages stored data. file marks damage to the SQLite file
// itself, which no one checkpoint is to blame for: its errors match
// checkpoint.ErrCorrupt and wrap a *sqlite.CorruptFileError (Open returns
// one when the damage is where it reads).
type corruptCase struct {
	name    string
	sqlite  bool // SQLite only
	file    bool
	corrupt func(t *testing.T, tg *corruptTarget)
}

var corruptCases = []corruptCase{
	{name: "value size 1 TiB", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `UPDATE blobs SET size = ? WHERE channel = 'Log' AND version = ?`, int64(1)<<40, tg.logVer)
	}},
	{name: "value size negative", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `UPDATE blobs SET size = -1 WHERE channel = 'Log' AND version = ?`, tg.logVer)
	}},
	{name: "truncated delta data", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `UPDATE blobs SET data = substr(data, 1, length(data) - 3) WHERE channel = 'Log' AND version = ? AND base IS NOT NULL`, tg.logVer)
	}},
	{name: "delta is its own base", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `UPDATE blobs SET base = version WHERE channel = 'Log' AND version = ? AND base IS NOT NULL`, tg.logVer)
	}},
	{name: "delta base missing", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `DELETE FROM blobs WHERE channel = 'Log' AND version < ?`, tg.logVer)
	}},
	{name: "flipped byte in value", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `UPDATE blobs SET data = ? WHERE channel = 'Note' AND version = ?`, []byte(`"a4"`), tg.noteVer)
	}},
	{name: "value missing", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `DELETE FROM blobs WHERE channel = 'Note' AND version = ?`, tg.noteVer)
	}},
	{name: "value garbage", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `UPDATE blobs SET data = ? WHERE channel = 'Note' AND version = ?`, []byte("garbage"), tg.noteVer)
	}},
	{name: "value not JSON, hash matching", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.setBlob(t, "Note", tg.noteVer, `"a3`)
	}},
	{name: "value of another type, hash matching", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.setBlob(t, "Note", tg.noteVer, `42`)
	}},
	{name: "empty frontier", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.setFrontier(t, "")
	}},
	{name: "frontier null", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.setFrontier(t, "null")
	}},
	{name: "frontier names unknown node", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.setFrontier(t, `{"nodes":["nope"]}`)
	}},
	{name: "frontier not JSON", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.setFrontier(t, `{"nodes":["ask",`)
	}},
	{name: "frontier unknown field", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.setFrontier(t, `{"nodes":["ask","side"],"last":["a3"],"later":true}`)
	}},
	{name: "frontier unknown join", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.setFrontier(t, `{"nodes":["ask","side"],"joins":{"x":["a3"]}}`)
	}},
	{name: "metadata garbage", corrupt: func(t *testing.T, tg *corruptTarget) {
		if tg.postgresBackend { // jsonb: valid JSON, but not the metadata object
			tg.mustExec(t, `UPDATE checkpoints SET metadata = '"garbage"'::jsonb WHERE id = ?`, tg.cp)
			return
		}
		tg.mustExec(t, `UPDATE checkpoints SET metadata = 'garbage' WHERE id = ?`, tg.cp)
	}},
	{name: "metadata step impossible", corrupt: func(t *testing.T, tg *corruptTarget) {
		if tg.postgresBackend {
			tg.mustExec(t, `UPDATE checkpoints SET metadata = jsonb_set(metadata, '{step}', '-7') WHERE id = ?`, tg.cp)
			return
		}
		tg.mustExec(t, `UPDATE checkpoints SET metadata = json_set(metadata, '$.step', -7) WHERE id = ?`, tg.cp)
	}},
	{name: "versions garbage", corrupt: func(t *testing.T, tg *corruptTarget) {
		if tg.postgresBackend {
			tg.mustExec(t, `UPDATE checkpoints SET versions = '[1]'::jsonb WHERE id = ?`, tg.cp)
			return
		}
		tg.mustExec(t, `UPDATE checkpoints SET versions = '{"Log":' WHERE id = ?`, tg.cp)
	}},
	{name: "created_at not a time", sqlite: true, corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `UPDATE checkpoints SET created_at = 'yesterday' WHERE id = ?`, tg.cp)
	}},
	{name: "unknown task ID of an interrupt", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `UPDATE writes SET task_id = 'feedfacefeedfacefeedfacefeedface' WHERE task_path = 'ask'`)
	}},
	{name: "unknown task ID of a finished task", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `UPDATE writes SET task_id = 'feedfacefeedfacefeedfacefeedface' WHERE task_path = 'side'`)
	}},
	{name: "pending write of another node", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `UPDATE writes SET task_path = 'b' WHERE task_path = 'side'`)
	}},
	{name: "pending write value not JSON", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `UPDATE writes SET value = ? WHERE task_path = 'side' AND channel = 'Log'`, []byte(`["side"`))
	}},
	{name: "pending write to unknown field", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `UPDATE writes SET channel = 'Nope' WHERE task_path = 'side' AND channel = 'Log'`)
	}},
	{name: "pending route to End", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `UPDATE writes SET value = ? WHERE task_path = 'side' AND channel = '__route__'`, []byte(`{"nodes":["__end__"]}`))
	}},
	{name: "pending interrupt not JSON", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `UPDATE writes SET value = ? WHERE task_path = 'ask' AND channel = ?`, []byte(`[{"id":`), checkpoint.ChannelInterrupt)
	}},
	{name: "command routes to unknown node", corrupt: func(t *testing.T, tg *corruptTarget) {
		tg.mustExec(t, `INSERT INTO writes (thread_id, ns, checkpoint_id, task_id, idx, channel, task_path, value) VALUES (?, '', ?, '~cmd-0', 0, '__route__', 'command', ?)`,
			corruptThread, tg.cp, []byte(`{"nodes":["nope"]}`))
	}},
	{name: "zero-length database file", sqlite: true, file: true, corrupt: func(t *testing.T, tg *corruptTarget) {
		require.NoError(t, os.Truncate(tg.sqliteFile, 0))
	}},
	{name: "truncated database file", sqlite: true, file: true, corrupt: func(t *testing.T, tg *corruptTarget) {
		fi, err := os.Stat(tg.sqliteFile)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(tg.sqliteFile, fi.Size()/2))
	}},
	{name: "damaged page of the checkpoints table", sqlite: true, file: true, corrupt: func(t *testing.T, tg *corruptTarget) {
		db, err := sql.Open("sqlite", "file:"+tg.sqliteFile)
		require.NoError(t, err)
		var page, size int64
		require.NoError(t, db.QueryRowContext(t.Context(), `SELECT rootpage FROM sqlite_master WHERE name = 'checkpoints'`).Scan(&page))
		require.NoError(t, db.QueryRowContext(t.Context(), `PRAGMA page_size`).Scan(&size))
		require.NoError(t, db.Close())
		f, err := os.OpenFile(tg.sqliteFile, os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteAt([]byte(strings.Repeat("\xff", 64)), (page-1)*size)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}},
}

// pauseRun runs corruptGraph until it pauses and returns the target.
func pauseRun(t *testing.T, saver checkpoint.Saver) *corruptTarget {
	t.Helper()
	g := corruptGraph(t, saver)
	_, err := g.Invoke(t.Context(), corruptState{}, graph.WithThread(corruptThread))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	tup, err := saver.Get(t.Context(), checkpoint.Ref{ThreadID: corruptThread})
	require.NoError(t, err)
	tg := &corruptTarget{cp: tup.ID, logVer: tup.Version("Log"), noteVer: tup.Version("Note")}
	require.NotZero(t, tg.logVer)
	require.NotZero(t, tg.noteVer)
	return tg
}

// requireIntact checks the undamaged paused run: its interrupt is pending,
// and resuming it finishes the run.
func requireIntact(t *testing.T, g *graph.Graph[corruptState]) {
	t.Helper()
	ctx := t.Context()
	snap, err := g.GetState(ctx, graph.WithThread(corruptThread))
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)
	require.Equal(t, []string{"ask"}, snap.Next)
	n := 0
	for _, err := range g.History(ctx, corruptThread) {
		require.NoError(t, err)
		n++
	}
	require.Equal(t, 5, n)
	out, err := g.Resume(ctx, graph.Command[corruptState]{Resume: "yes"}, graph.WithThread(corruptThread))
	require.NoError(t, err)
	require.Equal(t, []string{"a1", "a2", "a3", "ask:yes", "side", "b"}, out.Log.Get())
}

// requireCorrupt checks that GetState, Resume and History each fail with
// the error of the damage.
func requireCorrupt(t *testing.T, g *graph.Graph[corruptState], tg *corruptTarget, c corruptCase) {
	t.Helper()
	ctx := t.Context()
	check := func(op string, err error) {
		t.Helper()
		require.ErrorIs(t, err, checkpoint.ErrCorrupt, "%s", op)
		if c.file {
			// The damage spares the table of leases, which Resume
			// writes first: each read meets it.
			var ferr *sqlite.CorruptFileError
			require.ErrorAs(t, err, &ferr, "%s", op)
			require.Equal(t, tg.sqliteFile, ferr.Path, "%s", op)
			return
		}
		var cerr *checkpoint.CorruptError
		require.ErrorAs(t, err, &cerr, "%s", op)
		require.Equal(t, corruptThread, cerr.ThreadID, "%s", op)
		require.Empty(t, cerr.Namespace, "%s", op)
		require.Equal(t, tg.cp, cerr.CheckpointID, "%s", op)
	}
	_, err := g.GetState(ctx, graph.WithThread(corruptThread))
	check("GetState", err)
	_, err = g.Resume(ctx, graph.Command[corruptState]{Resume: "yes"}, graph.WithThread(corruptThread))
	check("Resume", err)
	err = nil
	for _, herr := range g.History(ctx, corruptThread) {
		if herr != nil {
			err = herr
			break
		}
	}
	check("History", err)
}

func TestCorruptionSQLite(t *testing.T) {
	cases := append([]corruptCase{{name: "intact"}}, corruptCases...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cp.db")
			saver, err := sqlite.Open(t.Context(), path)
			require.NoError(t, err)
			tg := pauseRun(t, saver)
			require.NoError(t, saver.Close())
			_, err = os.Stat(path + "-wal")
			require.ErrorIs(t, err, os.ErrNotExist, "closing the saver moves the WAL into the file")

			tg.sqliteFile = path
			tg.exec = func(t *testing.T, query string, args ...any) int64 {
				t.Helper()
				db, err := sql.Open("sqlite", "file:"+path)
				require.NoError(t, err)
				defer db.Close()
				res, err := db.ExecContext(t.Context(), query, args...)
				require.NoError(t, err)
				n, err := res.RowsAffected()
				require.NoError(t, err)
				return n
			}
			if c.corrupt != nil {
				c.corrupt(t, tg)
			}

			// A new process would open the file again (with no busy
			// timeout, an empty file is refused at once).
			saver, err = sqlite.Open(t.Context(), path, sqlite.WithBusyTimeout(0))
			if err != nil {
				require.True(t, c.file, "open: %v", err)
				var ferr *sqlite.CorruptFileError
				require.ErrorAs(t, err, &ferr)
				require.Equal(t, path, ferr.Path)
				require.ErrorIs(t, err, checkpoint.ErrCorrupt)
				return
			}
			t.Cleanup(func() { saver.Close() })
			g := corruptGraph(t, saver)
			if c.corrupt == nil {
				requireIntact(t, g)
				return
			}
			requireCorrupt(t, g, tg, c)
		})
	}
}

func TestCorruptionPostgres(t *testing.T) {
	pgdbtest.URL(t)
	cases := append([]corruptCase{{name: "intact"}}, corruptCases...)
	for _, c := range cases {
		if c.sqlite {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			schema := pgdbtest.FreshSchema(t, "agt_corrupt")
			saver, err := postgres.Open(t.Context(), pgdbtest.URL(t), postgres.WithSchema(schema), postgres.WithMaxConns(2))
			require.NoError(t, err)
			t.Cleanup(func() { saver.Close() })
			tg := pauseRun(t, saver)
			tg.postgresBackend = true
			cfg, err := pgx.ParseConfig(pgdbtest.URL(t))
			require.NoError(t, err)
			cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
			conn, err := pgx.ConnectConfig(t.Context(), cfg)
			require.NoError(t, err)
			t.Cleanup(func() { conn.Close(context.Background()) })
			tg.exec = func(t *testing.T, query string, args ...any) int64 {
				t.Helper()
				tag, err := conn.Exec(t.Context(), query, args...)
				require.NoError(t, err, "%s", query)
				return tag.RowsAffected()
			}
			g := corruptGraph(t, saver)
			if c.corrupt == nil {
				requireIntact(t, g)
				return
			}
			c.corrupt(t, tg)
			requireCorrupt(t, g, tg, c)
		})
	}
}

// TestStrictDecodingAcceptsCommands checks that what the engine writes
// restores: a command's goto may name End, unlike a node's route.
func TestStrictDecodingAcceptsCommands(t *testing.T) {
	ctx := t.Context()
	g := corruptGraph(t, checkpoint.NewMemory())
	th := graph.WithThread(corruptThread)
	_, err := g.Invoke(ctx, corruptState{}, th)
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	_, err = g.Resume(ctx, graph.Command[corruptState]{Resume: "yes", Update: corruptState{Note: state.Set("cmd")}, Goto: []string{graph.End}}, th)
	require.NoError(t, err)
	n := 0
	for _, err := range g.History(ctx, corruptThread) {
		require.NoError(t, err)
		n++
	}
	require.Equal(t, 7, n)
	_, err = g.GetState(ctx, th)
	require.NoError(t, err)
}
