package backendtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server"
)

// Run tests a [server.Backend] against the promises of its contract, one
// subtest per promise.
//
// newBackend is called once per subtest. It must return a backend that
// holds no threads and is not shared with any other subtest, and release
// it with t.Cleanup. Backends must keep times to at least the microsecond.
//
// The cases that need two instances of the backend on one database run
// only with [WithSecondInstance]; they are skipped otherwise. The cases
// of concurrent claims and creations use both instances when there are
// two.
func Run(t *testing.T, newBackend func(t *testing.T) server.Backend, opts ...Option) {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	for _, c := range slices.Concat(cases, assistantCases, cronCases, watchCases) {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("promise: %s", c.explanation)
				}
			})
			if c.twoInstances && o.secondInstance == nil {
				t.Skip("needs two instances on one database: see backendtest.WithSecondInstance")
			}
			e := &env{t: t, ctx: t.Context(), b: newBackend(t), now: time.Now().UTC().Truncate(time.Microsecond)}
			e.b2 = e.b
			if o.secondInstance != nil {
				e.b2 = o.secondInstance(t, e.b)
			}
			c.run(e)
		})
	}
}

// An Option configures [Run].
type Option func(*options)

type options struct {
	secondInstance func(t *testing.T, b server.Backend) server.Backend
}

// WithSecondInstance runs the cases that need two instances of the
// backend on one database, as two processes would have: open must return
// a new backend on the same database as b (a backend returned by Run's
// newBackend), and release it with t.Cleanup.
func WithSecondInstance(open func(t *testing.T, b server.Backend) server.Backend) Option {
	return func(o *options) { o.secondInstance = open }
}

type testCase struct {
	// name names the subtest.
	name string
	// explanation states the promise the case checks.
	explanation string
	// twoInstances marks a case that needs a second instance.
	twoInstances bool
	run          func(e *env)
}

// env is one subtest's backend(s) and helpers.
type env struct {
	t   *testing.T
	ctx context.Context
	b   server.Backend
	b2  server.Backend // a second instance on the same database, or b
	now time.Time
	n   atomic.Int64
}

// id returns a new id with the given prefix, in the shape of a UUID.
func (e *env) id(kind int) string {
	return fmt.Sprintf("00000000-0000-4000-%d000-%012d", 8+kind, e.n.Add(1))
}

func (e *env) thread(md map[string]any) server.ThreadRecord {
	e.t.Helper()
	th, err := e.b.CreateThread(e.ctx, server.ThreadRecord{ID: e.id(0), CreatedAt: e.now.Add(time.Duration(e.n.Load()) * time.Millisecond),
		Status: "idle", Metadata: md}, "")
	require.NoError(e.t, err)
	return th
}

// newRun returns a run of the graph "agent" on thread tid.
func (e *env) newRun(tid, strategy, kwargs string) server.RunRecord {
	return server.RunRecord{ID: e.id(1), ThreadID: tid, AssistantID: "asst", CreatedAt: e.now, Status: "pending",
		Metadata: map[string]any{"k": "v"}, MultitaskStrategy: strategy, GraphID: "agent", Kwargs: json.RawMessage(kwargs)}
}

func (e *env) run(tid, strategy string) server.RunRecord {
	e.t.Helper()
	r, err := e.b.CreateRun(e.ctx, e.newRun(tid, strategy, `{"input":{"x":1}}`), nil)
	require.NoError(e.t, err)
	return r
}

func (e *env) claim(b server.Backend, holder string, ttl time.Duration) *server.Claim {
	e.t.Helper()
	c, err := b.ClaimRun(e.ctx, holder, ttl, nil)
	require.NoError(e.t, err)
	return c
}

// claimRun claims, requiring the run with the given id.
func (e *env) claimRun(id string) *server.Claim {
	e.t.Helper()
	c := e.claim(e.b, "h1", time.Minute)
	require.NotNil(e.t, c, "no run to claim; want %s", id)
	require.Equal(e.t, id, c.Run.ID)
	return c
}

func (e *env) noClaim(b server.Backend) {
	e.t.Helper()
	c := e.claim(b, "hx", time.Minute)
	if c != nil {
		e.t.Fatalf("claimed run %s (status %s, attempt %d); want none", c.Run.ID, c.Run.Status, c.Run.Attempt)
	}
}

func (e *env) finish(c *server.Claim, status string) {
	e.t.Helper()
	require.NoError(e.t, e.b.FinishRun(e.ctx, c, server.RunResult{Status: status, Result: json.RawMessage(`{"done":true}`),
		Thread: server.ThreadState{Status: "idle"}}))
}

func (e *env) status(runID string) string {
	e.t.Helper()
	r, err := e.b.Run(e.ctx, runID)
	require.NoError(e.t, err)
	return r.Status
}

func (e *env) threadStatus(tid string) string {
	e.t.Helper()
	th, err := e.b.Thread(e.ctx, tid)
	require.NoError(e.t, err)
	return th.Status
}

func (e *env) eventNames(runID string, from int) []string {
	e.t.Helper()
	evs, err := e.b.Events(e.ctx, runID, from)
	require.NoError(e.t, err)
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Name)
	}
	return out
}

// eventually polls cond until it holds, failing after a generous bound
// (a bound on a broken backend, not a timing the test measures).
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// takeOver claims run id with a lease that expires at once, then waits
// for another holder to take it over; it returns both claims.
func (e *env) takeOver(id string) (stale, fresh *server.Claim) {
	e.t.Helper()
	stale = e.claim(e.b, "h1", time.Millisecond)
	require.NotNil(e.t, stale)
	require.Equal(e.t, id, stale.Run.ID)
	e.eventually("the lease expires and h2 takes the run over", func() bool {
		fresh = e.claim(e.b2, "h2", time.Minute)
		return fresh != nil
	})
	return stale, fresh
}

func ids(ts []server.ThreadRecord) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

func runIDs(rs []server.RunRecord) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// concurrently runs f(i) for i in [0, n) at once, on goroutines.
func concurrently(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}
