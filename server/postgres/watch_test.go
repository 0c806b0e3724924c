package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/postgres"
)

// pollingOnly hides a Backend's optional interfaces (server.RunWatcher):
// the server then polls it for every request waiting on a run, as it did
// before the Backend told of changes.
type pollingOnly struct{ server.Backend }

// readCounting counts the reads of a run's events, keeping the Backend's
// other methods (its WatchRun among them).
type readCounting struct {
	*postgres.Backend
	reads atomic.Int64
}

// Events counts a read once it returned: a read counted is done.
func (c *readCounting) Events(ctx context.Context, runID string, from int) ([]server.Event, error) {
	defer c.reads.Add(1)
	return c.Backend.Events(ctx, runID, from)
}

// createIdleRuns stores n pending runs, each on a thread of its own, of a
// graph no test server serves: no process claims them, and they never
// change.
func createIdleRuns(t *testing.T, b server.Backend, n int) []server.RunRecord {
	t.Helper()
	now := time.Now()
	runs := make([]server.RunRecord, n)
	for i := range runs {
		tid, rid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i), fmt.Sprintf("00000000-0000-4000-9000-%012d", i)
		r, err := b.CreateRun(t.Context(), server.RunRecord{ID: rid, ThreadID: tid, AssistantID: "elsewhere", CreatedAt: now, UpdatedAt: now,
			Status: "pending", MultitaskStrategy: "reject", Kwargs: json.RawMessage(`{}`), GraphID: "elsewhere"},
			&server.ThreadRecord{ID: tid, CreatedAt: now, UpdatedAt: now})
		require.NoError(t, err)
		runs[i] = r
	}
	return runs
}

// joinStreams opens a join stream (GET …/runs/{id}/stream) on each run and
// returns once every one answered its headers; the streams stay open
// until stop is called or the test ends.
func joinStreams(t *testing.T, base string, runs []server.RunRecord) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	started := make(chan error, len(runs))
	for _, r := range runs {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/threads/"+r.ThreadID+"/runs/"+r.ID+"/stream", nil)
			if err != nil {
				started <- err
				return
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				started <- err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				started <- fmt.Errorf("join stream of %s: %s", r.ID, resp.Status)
				return
			}
			started <- nil
			_, _ = io.Copy(io.Discard, resp.Body)
		})
	}
	for range runs {
		require.NoError(t, <-started)
	}
	return stop
}

// freshDatabase creates a database of its own for the test, dropped when
// it ends, so that its transaction counts are the test's alone; it
// returns the database's name and a connection to the test database for
// reading them.
func freshDatabase(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	url := pgdbtest.URL(t)
	admin, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "agentgraph_watch_" + strconv.Itoa(os.Getpid()) + "_" + hex.EncodeToString(b[:])
	_, err = admin.Exec(t.Context(), `CREATE DATABASE `+pgx.Identifier{name}.Sanitize())
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
		require.NoError(t, err)
		require.NoError(t, admin.Close(ctx))
	})
	return name, admin
}

// committed returns the transactions committed in database name, once
// every connection of pool open now (a LISTEN connection aside: it is not
// the pool's) has ended: PostgreSQL counts a session's transactions in
// pg_stat_database when it goes idle, at most once a second, and when it
// ends, so that a live connection's last second of work may be missing
// from the count, an ended one's never.
func committed(t *testing.T, admin *pgx.Conn, pool *pgxpool.Pool, name string) int64 {
	t.Helper()
	ctx := t.Context()
	rows, err := admin.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND query NOT LIKE 'LISTEN %'`, name)
	require.NoError(t, err)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(t, err)
	pool.Reset()
	eventually(t, "the pool's connections ended", func() bool {
		var left int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)`, pids).Scan(&left))
		return left == 0
	})
	var n int64
	require.NoError(t, admin.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1`, name).Scan(&n))
	return n
}

// Idle watchers cost the database nothing: a process with 1,000 join
// streams open on runs that do not change commits about as many
// transactions as with none (its dispatcher's claims, a safety poll),
// fewer than one per two watchers over the whole window; a process
// polling for each watcher makes several per watcher each second. The
// control, the same server with the Backend's notifications hidden, shows
// that the check tells the two apart. Counted in pg_stat_database, in a
// database of the test's own.
//
// AGENTGRAPH_TEST_WATCH_FIGURES=1 runs the control with 1,000 watchers too
// and longer windows, for the figures of the closing note.
func TestIdleWatchersCostTheDatabaseNoTransactions(t *testing.T) {
	figures := os.Getenv("AGENTGRAPH_TEST_WATCH_FIGURES") != ""
	window := 3 * time.Second
	controlWatchers := 200
	if figures {
		window, controlWatchers = 10*time.Second, 1000
	}
	for _, tc := range []struct {
		name     string
		hide     bool
		watchers int
	}{
		{name: "notified: idle watchers cost nothing", watchers: 1000},
		{name: "control: each watcher polls", hide: true, watchers: controlWatchers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, admin := freshDatabase(t)
			cfg, err := pgxpool.ParseConfig(pgdbtest.URL(t))
			require.NoError(t, err)
			cfg.ConnConfig.Database = name
			cfg.MaxConns = 16
			pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
			require.NoError(t, err)
			t.Cleanup(pool.Close)
			b, err := postgres.New(t.Context(), pool)
			require.NoError(t, err)
			t.Cleanup(func() { _ = b.Close() })
			saver := checkpoint.NewMemory() // no run executes
			gb := graph.New[State]()
			gb.AddNode("first", func(context.Context, State) (State, error) { return State{}, nil })
			gb.AddEdge(graph.Start, "first")
			g, err := gb.Compile(graph.WithCheckpointer(saver))
			require.NoError(t, err)
			counted := &readCounting{Backend: b}
			var backend server.Backend = counted
			if tc.hide {
				backend = pollingOnly{counted}
			}
			// The default poll interval: the dispatcher's claims and the
			// polling watchers' pace are what a deployment sees.
			srv, err := server.New(server.Graph("agent", g), server.WithCheckpointer(saver), server.WithBackend(backend),
				server.WithoutAuthLoopbackOnly())
			require.NoError(t, err)
			hs := httptest.NewServer(srv)
			t.Cleanup(func() {
				hs.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				require.NoError(t, srv.Shutdown(ctx))
			})
			runs := createIdleRuns(t, b, tc.watchers)

			measure := func() int64 {
				start := committed(t, admin, pool, name)
				time.Sleep(window)
				return committed(t, admin, pool, name) - start
			}
			idle := measure()
			stop := joinStreams(t, hs.URL, runs)
			// The headers are sent before a stream reads its run's events
			// a first time; the streams that watched their runs before the
			// LISTEN took effect are woken once by a poll and read again.
			eventually(t, "every stream read its run's events", func() bool {
				return counted.reads.Load() >= int64(tc.watchers)+postgres.WokenForTest(b)
			})
			if !tc.hide {
				watched, _, _ := postgres.WatchStatsForTest(b)
				require.Equal(t, tc.watchers, watched)
			}
			r0 := counted.reads.Load()
			_, p0, _ := postgres.WatchStatsForTest(b)
			watched := measure()
			_, p1, _ := postgres.WatchStatsForTest(b)
			t.Logf("during the window: %d reads of events, %d polls", counted.reads.Load()-r0, p1-p0)
			stop()
			extra := watched - idle
			t.Logf("%d watchers: %.1f transactions/s over %v, %.1f/s with none (%d more in all)",
				tc.watchers, float64(watched)/window.Seconds(), window, float64(idle)/window.Seconds(), extra)
			if tc.hide {
				require.GreaterOrEqual(t, extra, int64(tc.watchers/2), "the control polls for each watcher")
				return
			}
			require.Less(t, extra, int64(tc.watchers/2), "idle watchers made the process query the database")
			_, _, connects := postgres.WatchStatsForTest(b)
			require.Equal(t, int64(1), connects, "one LISTEN connection")
		})
	}
}

// A run's events, written by another process, reach a stream served by
// this one complete and in order: notified, when the notifications are
// lost (the safety poll finds them), and when the LISTEN connection is
// lost (polled until a new one is open).
func TestAStreamGetsEveryEventOfARunAnotherProcessWritesInOrder(t *testing.T) {
	const events = 40
	for _, tc := range []struct {
		name       string
		opts       []postgres.Option
		deaf       bool // the reader's listener drops every notification
		dropListen bool // the reader's LISTEN connection is ended halfway
	}{
		{name: "notified"},
		{name: "notifications lost: pings unanswered, the runs are polled until they come back", deaf: true,
			opts: []postgres.Option{postgres.WithSafetyPollInterval(50 * time.Millisecond)}},
		{name: "LISTEN connection lost: polled until a new one is open", dropListen: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			d := newDB(t)
			reader := startProcessWith(t, d, "reader", tc.opts)
			postgres.DeafForTest(reader.b, tc.deaf)
			writer := openBackend(t, d.url, d.schema)
			t.Cleanup(func() { _ = writer.Close() })
			run := createIdleRuns(t, writer, 1)[0]
			c, err := writer.ClaimRun(ctx, "writer", time.Minute, []string{"elsewhere"})
			require.NoError(t, err)
			require.NotNil(t, c)

			done := make(chan []sseEvent, 1)
			go func() { done <- reader.sse(t, "GET", "/threads/"+run.ThreadID+"/runs/"+run.ID+"/stream", nil) }()
			eventually(t, "the stream watches the run, LISTEN in effect", func() bool {
				watched, _, connects := postgres.WatchStatsForTest(reader.b)
				return watched == 1 && connects == 1
			})
			for i := range events {
				if tc.dropListen && i == events/2 {
					conn, err := pgx.Connect(ctx, d.url)
					require.NoError(t, err)
					var ended int
					require.NoError(t, conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
						WHERE application_name = $1 AND query LIKE 'LISTEN %'`, "srvtest-"+d.schema+"-reader").Scan(&ended))
					require.NoError(t, conn.Close(ctx))
					require.Equal(t, 1, ended, "the reader's LISTEN connection")
				}
				_, err := writer.AppendEvent(ctx, c, "custom", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)))
				require.NoError(t, err)
				time.Sleep(5 * time.Millisecond) // the stream reads as the run goes
			}
			if tc.deaf {
				// Its pings unanswered, the reader takes its LISTEN
				// connection for deaf, and polls every poll interval.
				eventually(t, "the LISTEN connection taken for deaf", func() bool { return !postgres.LiveForTest(reader.b) })
				// Notifications come again: a ping comes back, and the
				// run's end is notified.
				postgres.DeafForTest(reader.b, false)
				eventually(t, "the LISTEN connection taken for live again", func() bool { return postgres.LiveForTest(reader.b) })
			}
			require.NoError(t, writer.FinishRun(ctx, c, server.RunResult{Status: "success", Result: json.RawMessage(`null`),
				Thread: server.ThreadState{Status: "idle"}}))

			var got []sseEvent
			select {
			case got = <-done:
			case <-time.After(time.Minute):
				t.Fatal("the stream did not end")
			}
			want := make([]sseEvent, events)
			for i := range want {
				want[i] = sseEvent{Name: "custom", Data: fmt.Sprintf(`{"i":%d}`, i)}
			}
			want = append(want, sseEvent{Name: "end", Data: "null"}) // FinishRun's
			require.Equal(t, want, got)
			_, polls, connects := postgres.WatchStatsForTest(reader.b)
			switch {
			case tc.deaf:
				require.Positive(t, polls, "the safety poll ran")
			case tc.dropListen:
				eventually(t, "a new LISTEN connection", func() bool {
					_, _, connects := postgres.WatchStatsForTest(reader.b)
					return connects == 2
				})
			default:
				require.Equal(t, int64(1), connects)
				require.True(t, postgres.LiveForTest(reader.b), "the pings come back")
			}
		})
	}
}
