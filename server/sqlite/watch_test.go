package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ckptsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/sqlite"
)

// pollingOnly hides a Backend's optional interfaces (server.RunWatcher):
// the server then polls it for every request waiting on a run.
type pollingOnly struct{ server.Backend }

// createIdleRuns stores n pending runs, each on a thread of its own, of a
// graph no test server serves: nobody claims them, and they never change.
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
// until the test ends.
func joinStreams(t *testing.T, base string, runs []server.RunRecord) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
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
}

// One poller per Backend: however many requests of a process wait on
// runs, the process reads them in one query per poll interval, and the
// requests read nothing while their runs do not change. The control, a
// server that polls the Backend for each request, shows that the test
// tells the two apart.
func TestIdleWatchersCostOnePollerQueryPerInterval(t *testing.T) {
	const watchers = 100
	for _, tc := range []struct {
		name    string
		hide    bool // the control: the server polls for each watcher
		windows int  // windows of 300ms to wait for one where only the poller read
		settles bool
	}{
		{name: "with the poller, idle watchers read nothing", windows: 30, settles: true},
		{name: "control: each watcher polls on its own", hide: true, windows: 3, settles: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "server.db")
			b, err := sqlite.Open(ctx, path, sqlite.WithPollInterval(20*time.Millisecond))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, b.Close()) })
			saver, err := ckptsqlite.Open(ctx, path)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, saver.Close()) })
			gb := graph.New[State]()
			gb.AddNode("first", func(context.Context, State) (State, error) { return State{}, nil })
			gb.AddEdge(graph.Start, "first")
			g, err := gb.Compile(graph.WithCheckpointer(saver))
			require.NoError(t, err)
			var backend server.Backend = b
			if tc.hide {
				backend = pollingOnly{b}
			}
			srv, err := server.New(server.Graph("agent", g), server.WithCheckpointer(saver), server.WithBackend(backend),
				server.WithoutAuthLoopbackOnly(), server.WithPollInterval(10*time.Millisecond))
			require.NoError(t, err)
			hs := httptest.NewServer(srv)
			t.Cleanup(func() {
				hs.Close()
				sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				require.NoError(t, srv.Shutdown(sctx))
			})

			joinStreams(t, hs.URL, createIdleRuns(t, b, watchers))
			if !tc.hide {
				// The headers are sent before a stream watches its run.
				require.Eventually(t, func() bool { return sqlite.WatchedForTest(b) == watchers }, time.Minute, time.Millisecond)
			}
			// A window in which the only reads of runs and events were
			// the poller's: the watchers are idle. Those that came before
			// the poller saw their run are woken once (the poller cannot
			// know what they read), so the first windows may have more.
			settled := false
			var reads, polls int64
			for range tc.windows {
				r0, p0 := sqlite.ReadsForTest(b), sqlite.PollsForTest(b)
				time.Sleep(300 * time.Millisecond)
				reads, polls = sqlite.ReadsForTest(b)-r0, sqlite.PollsForTest(b)-p0
				if reads == polls {
					settled = true
					break
				}
			}
			t.Logf("%d watchers, last window of 300ms: %d reads of runs and events, %d of them the poller's; %d polls and %d wakes in all", watchers, reads, polls, sqlite.PollsForTest(b), sqlite.WokenForTest(b))
			require.Equal(t, tc.settles, settled)
			if tc.settles {
				require.Positive(t, polls, "the poller polls while runs are watched")
			}
		})
	}
}
