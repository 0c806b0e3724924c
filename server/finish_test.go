package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	ckptsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/server"
	srvsqlite "github.com/agentgraph/agentgraph/server/sqlite"
)

// refusingResults is a real Backend whose FinishRun refuses every
// successful result, as a database refuses a value it cannot hold.
type refusingResults struct {
	server.Backend
	refused atomic.Int32
}

func (b *refusingResults) FinishRun(ctx context.Context, c *server.Claim, res server.RunResult) error {
	if res.Status == "success" {
		b.refused.Add(1)
		return errors.New("value too large to store")
	}
	return b.Backend.FinishRun(ctx, c, res)
}

// A run whose result cannot be recorded ends once, failed, saying why:
// it is not claimed and run again at every lease.
func TestRunWhoseResultCannotBeRecordedFailsOnce(t *testing.T) {
	saver, b := sqliteEnv(t)
	rb := &refusingResults{Backend: b}
	e := serve(t, server.Graph("agent", agentGraph(t, saver)), server.WithCheckpointer(saver), server.WithBackend(rb))
	tid := e.newThread(nil)
	var out map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"}}, &out)
	require.Equal(t, "StorageError", out["__error__"].(map[string]any)["error"])
	require.Contains(t, out["__error__"].(map[string]any)["message"], "value too large to store")
	var runs []map[string]any
	e.ok("GET", "/threads/"+tid+"/runs", nil, &runs)
	require.Len(t, runs, 1)
	require.Equal(t, "error", runs[0]["status"])
	require.Equal(t, int32(1), rb.refused.Load(), "the run was not run again")
	r := e.do("GET", "/threads/"+tid+"/runs/"+runs[0]["run_id"].(string)+"/stream", nil)
	require.Equal(t, http.StatusOK, r.status)
	evs := parseSSE(t, r.body)
	require.Equal(t, []string{"error", "end"}, names(evs)[len(evs)-2:], "its stream says why, once, before its end")
	require.Equal(t, 1, strings.Count(string(r.body), "event: error"))
	require.Contains(t, string(evs[len(evs)-2].Data), "StorageError")
}

// flakyFailure is refusingResults whose first recording of the failed
// run meets a transient fault, as a dropped connection is.
type flakyFailure struct {
	refusingResults
	faults atomic.Int32
}

func (b *flakyFailure) FinishRun(ctx context.Context, c *server.Claim, res server.RunResult) error {
	if res.Status != "success" && b.faults.Add(1) == 1 {
		return fmt.Errorf("finish: %w", server.ErrTransient)
	}
	return b.refusingResults.FinishRun(ctx, c, res)
}

// The failed end of a run whose result cannot be recorded is retried
// through a transient fault, as the first FinishRun is, and after a try
// that was made but whose answer was lost: the run still ends once,
// failed, is not run again, and its stream says so once.
func TestRunWhoseResultCannotBeRecordedFailsOnceThroughAFaultOfItsFailedEnd(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend func(server.Backend) (server.Backend, *refusingResults, *atomic.Int32)
	}{
		{"a transient fault", func(b server.Backend) (server.Backend, *refusingResults, *atomic.Int32) {
			rb := &flakyFailure{refusingResults: refusingResults{Backend: b}}
			return rb, &rb.refusingResults, &rb.faults
		}},
		{"an answer lost after the commit", func(b server.Backend) (server.Backend, *refusingResults, *atomic.Int32) {
			rb := &lostFailure{refusingResults: refusingResults{Backend: b}}
			return rb, &rb.refusingResults, &rb.tries
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saver, b := sqliteEnv(t)
			rb, refusing, tries := tc.backend(b)
			e := serve(t, server.Graph("agent", agentGraph(t, saver)), server.WithCheckpointer(saver), server.WithBackend(rb))
			tid := e.newThread(nil)
			var out map[string]any
			e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"}}, &out)
			require.Equal(t, "StorageError", out["__error__"].(map[string]any)["error"])
			var runs []map[string]any
			e.ok("GET", "/threads/"+tid+"/runs", nil, &runs)
			require.Len(t, runs, 1)
			require.Equal(t, "error", runs[0]["status"])
			require.Equal(t, int32(1), refusing.refused.Load(), "the run was not run again")
			require.Equal(t, int32(2), tries.Load(), "the failed end was tried again")
			r := e.do("GET", "/threads/"+tid+"/runs/"+runs[0]["run_id"].(string)+"/stream", nil)
			require.Equal(t, http.StatusOK, r.status)
			require.Equal(t, 1, strings.Count(string(r.body), "event: error"), "one error event")
			require.Equal(t, 1, strings.Count(string(r.body), "event: end"), "one end event")
		})
	}
}

// slowFinish is a real Backend whose FinishRun starts late, as a loaded
// machine or a slow database makes it: the window in which a stream's
// end could be read before its run ended is then wide open.
type slowFinish struct {
	server.Backend
	delay time.Duration
}

func (b slowFinish) FinishRun(ctx context.Context, c *server.Claim, res server.RunResult) error {
	select {
	case <-time.After(b.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.Backend.FinishRun(ctx, c, res)
}

// A client that read a stream's "end", or its "error" (where the Go
// client, as others may, stops reading a failed run's stream), finds the
// run ended and its thread no longer busy, so that its next run on the
// thread (with the default "reject" strategy) is accepted at once, on
// every Backend.
func TestAStreamsEndComesWithItsRunEnded(t *testing.T) {
	if onBackend() {
		t.Skip("runs on every backend itself: in the run without " + backendEnv)
	}
	backends := sharedBackends()
	for _, tc := range stopCases {
		for name, open := range backends {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				saver, b := open(t)
				e := serve(t, server.Graph("agent", agentGraph(t, saver)), server.Graph("boom", boomGraph(t, saver)),
					server.WithCheckpointer(saver), server.WithBackend(slowFinish{Backend: b, delay: 300 * time.Millisecond}),
					server.WithPollInterval(10*time.Millisecond))
				tid := e.newThread(nil)
				hdr := e.readUntil("POST", "/threads/"+tid+"/runs/stream",
					map[string]any{"assistant_id": tc.assistant, "input": map[string]any{"topic": "x"}, "stream_mode": []string{"values"}}, tc.stopAt)
				tc.requireStopped(e, tid, path.Base(hdr.Get("Content-Location")))
				tc.requireNextAccepted(e, tid)
			})
		}
	}
}

// faultyFinish is a real Backend whose first fails calls of FinishRun
// meet a transient fault: before the call is made, or, when after, once
// it was made (its answer lost, as when a connection drops after the
// commit).
type faultyFinish struct {
	server.Backend
	fails int32
	after bool
	calls atomic.Int32
}

func (b *faultyFinish) FinishRun(ctx context.Context, c *server.Claim, res server.RunResult) error {
	if b.calls.Add(1) > b.fails {
		return b.Backend.FinishRun(ctx, c, res)
	}
	if b.after {
		if err := b.Backend.FinishRun(ctx, c, res); err != nil {
			return err
		}
	}
	return fault("finish")
}

// A run whose FinishRun meets a fault ends its stream once: a retry that
// finds the run ended adds nothing, and a run released after the fault
// lasted has no end until the attempt that claims it again ends it. The
// stream, and a join of it from its start, end with that one "end",
// read once the run ended and its thread was updated.
func TestARunWhoseFinishFaultedEndsItsStreamOnce(t *testing.T) {
	if onBackend() {
		t.Skip("runs on every backend itself: in the run without " + backendEnv)
	}
	backends := sharedBackends()
	for _, tc := range []struct {
		name     string
		fails    int32
		after    bool
		attempts int // the claims of the run
	}{
		{"its answer lost", 1, true, 1},
		{"until it is released", 8, false, 2}, // retryTries
	} {
		for name, open := range backends {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				saver, b := open(t)
				fb := &faultyFinish{Backend: b, fails: tc.fails, after: tc.after}
				s, err := server.New(server.Graph("agent", agentGraph(t, saver)), server.WithCheckpointer(saver),
					server.WithBackend(fb), server.WithPollInterval(10*time.Millisecond),
					server.WithRunLeaseTTL(2*time.Second), server.WithAuthToken(token))
				require.NoError(t, err)
				hs := httptest.NewServer(s)
				t.Cleanup(func() {
					require.NoError(t, s.Shutdown(context.Background()))
					hs.Close()
				})
				e := &env{t: t, srv: hs}
				tid := e.newThread(nil)
				r := e.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"},
					"stream_mode": []string{"values"}, "stream_resumable": true})
				require.Equal(t, http.StatusOK, r.status, "%s", r.body)
				evs := parseSSE(t, r.body)
				ends, attempts := 0, 0
				for i, ev := range evs {
					switch ev.Name {
					case "end":
						ends++
					case "metadata":
						attempts++
					case "error":
						t.Fatalf("an error event: %s", ev.Data)
					}
					if i > 0 {
						require.Greater(t, ev.ID, evs[i-1].ID)
					}
				}
				require.Equal(t, 1, ends, "one end: %v", names(evs))
				require.Equal(t, "end", evs[len(evs)-1].Name)
				require.Equal(t, tc.attempts, attempts, "%v", names(evs))

				var run map[string]any
				e.ok("GET", r.header.Get("Content-Location"), nil, &run)
				require.Equal(t, "success", run["status"])
				var th map[string]any
				e.ok("GET", "/threads/"+tid, nil, &th)
				require.Equal(t, "interrupted", th["status"], "the thread once its stream ended (its graph asks for an approval)")
				joined := faultFreeStream(t, hs.URL, r.header.Get("Location"))
				require.Equal(t, evs, joined, "a join from the start reads the same stream")

				// The try after the one whose answer was lost adds nothing
				// (the executor is done once the server shut down).
				require.Eventually(t, func() bool { return fb.calls.Load() > tc.fails }, 10*time.Second, 10*time.Millisecond)
				require.NoError(t, s.Shutdown(context.Background()))
				stored, err := b.Events(t.Context(), path.Base(r.header.Get("Content-Location")), 0)
				require.NoError(t, err)
				require.Len(t, stored, len(evs), "%v", stored)
				require.Equal(t, "end", stored[len(stored)-1].Name)
			})
		}
	}
}

// A stream one server serves of a run another server executes, on the
// Backend they share (two processes on one SQLite file; two Servers on
// one MemoryBackend), ends as the run does: a client that stopped at its
// "end" or "error" finds, on either server, the run ended and the thread
// free for its next run.
func TestAStreamServedByAnotherServerEndsWithTheRun(t *testing.T) {
	if onBackend() {
		t.Skip("runs on every backend itself: in the run without " + backendEnv)
	}
	// Each opens the Backend of the executing server and of the one
	// serving the stream, with their savers.
	backends := map[string]func(*testing.T) (checkpoint.Saver, server.Backend, checkpoint.Saver, server.Backend){
		"memory-backend": func(*testing.T) (checkpoint.Saver, server.Backend, checkpoint.Saver, server.Backend) {
			saver, b := checkpoint.NewMemory(), server.NewMemoryBackend()
			return saver, b, saver, b
		},
		"sqlite": func(t *testing.T) (checkpoint.Saver, server.Backend, checkpoint.Saver, server.Backend) {
			file := filepath.Join(t.TempDir(), "server.db")
			var savers [2]checkpoint.Saver
			var bs [2]server.Backend
			for i := range 2 {
				saver, err := ckptsqlite.Open(t.Context(), file)
				require.NoError(t, err)
				b, err := srvsqlite.Open(t.Context(), file)
				require.NoError(t, err)
				t.Cleanup(func() { // after the servers' own cleanup
					require.NoError(t, b.Close())
					require.NoError(t, saver.Close())
				})
				savers[i], bs[i] = saver, b
			}
			return savers[0], bs[0], savers[1], bs[1]
		},
	}
	for _, tc := range stopCases {
		for name, open := range backends {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				execSaver, execB, streamSaver, streamB := open(t)
				serve := func(b server.Backend, graphs ...server.Option) *env {
					return serve(t, append(graphs, server.WithBackend(b), server.WithPollInterval(10*time.Millisecond))...)
				}
				executor := serve(slowFinish{Backend: execB, delay: 300 * time.Millisecond},
					server.Graph("agent", agentGraph(t, execSaver)), server.Graph("boom", boomGraph(t, execSaver)), server.WithCheckpointer(execSaver))
				// It serves another graph: it claims none of the runs.
				streamer := serve(streamB, server.Graph("other", agentGraph(t, streamSaver)), server.WithCheckpointer(streamSaver))

				tid := executor.newThread(nil)
				var rn map[string]any
				executor.ok("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": tc.assistant, "input": map[string]any{"topic": "x"},
					"stream_mode": []string{"values"}}, &rn)
				runID := rn["run_id"].(string)
				streamer.readUntil("GET", "/threads/"+tid+"/runs/"+runID+"/stream", nil, tc.stopAt)
				for _, e := range []*env{streamer, executor} {
					tc.requireStopped(e, tid, runID)
				}
				tc.requireNextAccepted(executor, tid)
			})
		}
	}
}

// sharedBackends opens each real Backend a server can share, with its
// saver: a MemoryBackend given with WithBackend, SQLite and PostgreSQL
// (which skips without AGENTGRAPH_TEST_POSTGRES_URL).
func sharedBackends() map[string]func(*testing.T) (checkpoint.Saver, server.Backend) {
	return map[string]func(*testing.T) (checkpoint.Saver, server.Backend){
		"memory-backend": func(*testing.T) (checkpoint.Saver, server.Backend) {
			return checkpoint.NewMemory(), server.NewMemoryBackend()
		},
		"sqlite": sqliteEnv, "postgres": postgresEnv,
	}
}

// stopCase is a run, the stream event a client stops reading it at, and
// what the client then finds and may do next.
type stopCase struct {
	name      string
	assistant string
	stopAt    string // the event the client stops reading at
	run       string // the run's status then
	thread    string // and its thread's
	next      map[string]any
}

var stopCases = []stopCase{
	// The agent graph asks for an approval: the next run resumes it.
	{"a run that succeeded, at its end", "agent", "end", "success", "interrupted", map[string]any{"command": map[string]any{"resume": "ok"}}},
	{"a run that failed, at its error", "boom", "error", "error", "error", map[string]any{"input": map[string]any{"topic": "y"}}},
}

// requireStopped requires, through e, the run's and its thread's status
// once the client stopped reading.
func (tc stopCase) requireStopped(e *env, tid, runID string) {
	e.t.Helper()
	var th map[string]any
	e.ok("GET", "/threads/"+tid, nil, &th)
	require.Equal(e.t, tc.thread, th["status"], "the thread once the client stopped reading")
	var run map[string]any
	e.ok("GET", "/threads/"+tid+"/runs/"+runID, nil, &run)
	require.Equal(e.t, tc.run, run["status"], "the run once the client stopped reading")
}

// requireNextAccepted requires the thread's next run (with the default
// "reject" strategy) accepted through e.
func (tc stopCase) requireNextAccepted(e *env, tid string) {
	e.t.Helper()
	next := map[string]any{"assistant_id": tc.assistant}
	maps.Copy(next, tc.next)
	r := e.do("POST", "/threads/"+tid+"/runs/wait", next)
	require.Equal(e.t, http.StatusOK, r.status, "the thread's next run: %s", r.body)
}

// readUntil opens the stream of method target (with body, JSON-encoded,
// unless nil) and reads it as a client that stops at the event named
// stopAt does, not to the stream's close; it returns the answer's header.
func (e *env) readUntil(method, target string, body any, stopAt string) http.Header {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		require.NoError(e.t, err)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.srv.URL+target, rd)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := e.srv.Client().Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	require.Equal(e.t, http.StatusOK, res.StatusCode)
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() && sc.Text() != "event: "+stopAt {
	}
	require.NoError(e.t, sc.Err())
	return res.Header
}
