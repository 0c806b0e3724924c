package graph_test

// Helpers shared by the ports of LangGraph's behavioural scenarios
// (scenario_*_test.go) and the invariant tests (invariants_test.go). Their
// names carry a prefix ("abcf", "dex") so that they cannot collide with
// helpers of the package's other test files.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// ---------------------------------------------------------------------------
// Runs: contexts, streams, goroutines, completion order.

// dexCtx is a test context with a deadlock guard (not a timing assertion: a
// correct run never comes near it).
func dexCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// dexCollect drains a stream and returns its events and its final error.
func dexCollect(seq iter.Seq2[graph.Event, error]) ([]graph.Event, error) {
	var evs []graph.Event
	var last error
	for ev, err := range seq {
		if err != nil {
			last = err
			continue
		}
		evs = append(evs, ev)
	}
	return evs, last
}

// abcfNoLeak records the goroutine count and returns a check that waits
// for it to settle back.
func abcfNoLeak(t testing.TB) func() {
	t.Helper()
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		var now int
		for range 200 {
			runtime.GC()
			now = runtime.NumGoroutine()
			if now <= before {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Errorf("goroutine leak: %d goroutines before, %d after\n%s", before, now, buf[:n])
	}
}

// abcfSeen is a broadcast register of "node X finished n times", used to
// force a completion order between parallel tasks without sleeps: a task
// waits until another task's event has been observed.
type abcfSeen struct {
	mu     sync.Mutex
	counts map[string]int
	ch     chan struct{}
}

// newAbcfSeen returns a register where nothing was marked yet.
func newAbcfSeen() *abcfSeen {
	return &abcfSeen{counts: map[string]int{}, ch: make(chan struct{})}
}

// mark records that name finished once more and wakes the waiters.
func (s *abcfSeen) mark(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[name]++
	close(s.ch)
	s.ch = make(chan struct{})
}

// wait blocks until name was marked at least n times.
func (s *abcfSeen) wait(ctx context.Context, name string, n int) error {
	for {
		s.mu.Lock()
		c, ch := s.counts[name], s.ch
		s.mu.Unlock()
		if c >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s #%d: %w", name, n, ctx.Err())
		}
	}
}

// ---------------------------------------------------------------------------
// Views of events, states and interrupts.

// abcfWrites describes the writes of an update or a task result,
// Python-style: field name → written value. A last-value write is the
// value; a reducer write is the list of its updates, or {"overwrite": x,
// "updates": [...]}.
func abcfWrites(t testing.TB, w graph.Writes) map[string]any {
	t.Helper()
	if w == nil {
		return nil
	}
	out := map[string]any{}
	for name, b := range w {
		var x any
		require.NoError(t, json.Unmarshal(b, &x))
		if m, ok := x.(map[string]any); ok {
			if _, ow := m["overwrite"]; !ow && len(m) <= 1 {
				if u, ok := m["updates"]; ok || len(m) == 0 {
					if u == nil {
						u = []any{}
					}
					x = u
				}
			}
		}
		out[name] = x
	}
	return out
}

// abcfUpdate is one updates event, Python-style {node: writes}.
type abcfUpdate struct {
	NS     string
	Node   string
	Writes map[string]any
	Cached bool
}

// abcfUpdates keeps the node updates (not interrupt notifications) of evs.
func abcfUpdates(t testing.TB, evs []graph.Event) []abcfUpdate {
	t.Helper()
	var out []abcfUpdate
	for _, ev := range evs {
		if ev.Mode != graph.ModeUpdates || ev.Node == "" {
			continue
		}
		out = append(out, abcfUpdate{NS: ev.Namespace, Node: ev.Node, Writes: abcfWrites(t, ev.Writes), Cached: ev.Cached})
	}
	return out
}

// abcfUpdateNodes lists the node names of the updates of evs.
func abcfUpdateNodes(t testing.TB, evs []graph.Event) []string {
	var out []string
	for _, u := range abcfUpdates(t, evs) {
		out = append(out, u.Node)
	}
	return out
}

// dexEv is a compact, comparable view of a stream event.
type dexEv struct {
	Mode   string
	Node   string
	Cached bool
	// Writes is the JSON of the task's writes (updates) or of the state
	// (values); Interrupts the payloads of the interrupts it carries.
	Writes     map[string]any
	Interrupts []any
}

// dexEvents turns events into dexEvs; modes selects which are kept.
func dexEvents(t testing.TB, evs []graph.Event, modes graph.Mode) []dexEv {
	t.Helper()
	var out []dexEv
	for _, ev := range evs {
		if ev.Mode == graph.ModeInterrupts {
			// Python's {"__interrupt__": (...)} chunk of the updates
			// stream, one per interrupted task (no node key).
			if modes&graph.ModeUpdates == 0 {
				continue
			}
			e := dexEv{Mode: "updates", Interrupts: []any{}}
			for _, in := range ev.Interrupts {
				e.Interrupts = append(e.Interrupts, dexJSONAny(t, in.Value))
			}
			out = append(out, e)
			continue
		}
		if ev.Mode&modes == 0 {
			continue
		}
		e := dexEv{Mode: ev.Mode.String(), Node: ev.Node, Cached: ev.Cached}
		switch ev.Mode {
		case graph.ModeUpdates:
			if ev.Node != "" {
				e.Writes = abcfWrites(t, ev.Writes)
			}
		case graph.ModeValues:
			e.Writes = dexVals(t, ev.Payload)
		}
		for _, in := range ev.Interrupts {
			e.Interrupts = append(e.Interrupts, dexJSONAny(t, in.Value))
		}
		if ev.Interrupts != nil && e.Interrupts == nil {
			e.Interrupts = []any{}
		}
		out = append(out, e)
	}
	return out
}

// dexJSONAny normalizes v through JSON (so that a payload read back from a
// checkpoint compares equal to the one the node passed).
func dexJSONAny(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var x any
	require.NoError(t, json.Unmarshal(b, &x))
	return x
}

// dexJSON is the JSON text of v (for comparing state values).
func dexJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// dexVals is the JSON view of a state value (unset last-value fields
// dropped, as Python omits unset LastValue channels).
func dexVals(t testing.TB, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for k, x := range m {
		if x == nil {
			delete(m, k)
		}
	}
	return m
}

// dexInterrupted asserts err is a *graph.Interrupted and returns it.
func dexInterrupted(t testing.TB, err error) *graph.Interrupted {
	t.Helper()
	var intr *graph.Interrupted
	require.Error(t, err)
	require.True(t, errors.As(err, &intr), "want *graph.Interrupted, got %T: %v", err, err)
	return intr
}

// dexInterruptValues lists the (JSON-normalized) payloads of interrupts.
func dexInterruptValues(t testing.TB, ins []graph.Interruption) []any {
	t.Helper()
	out := []any{}
	for _, in := range ins {
		out = append(out, dexJSONAny(t, in.Value))
	}
	return out
}

// abcfTexts lists the texts of messages.
func abcfTexts(ms []state.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text()
	}
	return out
}

// abcfUUIDv4 matches a random (version 4) UUID.
var abcfUUIDv4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// ---------------------------------------------------------------------------
// Snapshots and history.

// dexState returns the latest snapshot of a thread.
func dexState[S any](t testing.TB, g *graph.Graph[S], thread string, opts ...graph.RunOption) *graph.Snapshot[S] {
	t.Helper()
	s, err := g.GetState(dexCtx(t), append([]graph.RunOption{graph.WithThread(thread)}, opts...)...)
	require.NoError(t, err)
	return s
}

// dexHistory collects a thread's history, newest first.
func dexHistory[S any](t testing.TB, g *graph.Graph[S], thread string, opts ...graph.HistoryOption) []*graph.Snapshot[S] {
	t.Helper()
	var out []*graph.Snapshot[S]
	for s, err := range g.History(dexCtx(t), thread, opts...) {
		require.NoError(t, err)
		out = append(out, s)
	}
	return out
}

// dexTaskNames lists the names of a snapshot's tasks, sorted.
func dexTaskNames(ts []graph.TaskInfo) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}

// dexNext is a snapshot's Next, never nil.
func dexNext(n []string) []string {
	if n == nil {
		return []string{}
	}
	return n
}

// dexSnapView is the comparable part of a snapshot.
type dexSnapView struct {
	ID     string
	Source string
	Step   int
	Next   []string
	Values string
}

// dexView is the comparable part of each snapshot of hist.
func dexView[S any](t testing.TB, hist []*graph.Snapshot[S]) []dexSnapView {
	t.Helper()
	out := make([]dexSnapView, len(hist))
	for i, s := range hist {
		out[i] = dexSnapView{ID: s.CheckpointID, Source: s.Metadata.Source, Step: s.Metadata.Step, Next: dexNext(s.Next), Values: dexJSON(t, s.Values)}
	}
	return out
}

// dexFind returns the first snapshot (newest first) whose Next is next.
func dexFind[S any](t testing.TB, hist []*graph.Snapshot[S], next ...string) *graph.Snapshot[S] {
	t.Helper()
	for _, s := range hist {
		if cmp.Equal(dexNext(s.Next), dexNext(next)) {
			return s
		}
	}
	require.FailNow(t, "no checkpoint with next", "%v", next)
	return nil
}

// ---------------------------------------------------------------------------
// Savers, durability modes, reducers.

// dexSaver wraps the in-memory saver with fault injection and hooks. The
// hooks are set before a run and never changed while it runs.
type dexSaver struct {
	*checkpoint.Memory
	getErr, putErr, putWritesErr error
	// afterPutWrites is called after writes were stored.
	afterPutWrites func(ref checkpoint.Ref, ws []checkpoint.Write)
	// beforePutWrites is called before writes are stored, with the saver
	// call's context.
	beforePutWrites func(ctx context.Context, ref checkpoint.Ref, ws []checkpoint.Write)
	puts            atomic.Int64
}

// newDexSaver returns a dexSaver over an empty in-memory saver, with no
// fault or hook.
func newDexSaver() *dexSaver { return &dexSaver{Memory: checkpoint.NewMemory()} }

func (s *dexSaver) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	if s.getErr != nil {
		return nil, s.getErr
	}
	return s.Memory.Get(ctx, ref)
}

func (s *dexSaver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	if s.putErr != nil {
		return s.putErr
	}
	s.puts.Add(1)
	return s.Memory.Put(ctx, cp)
}

func (s *dexSaver) PutWrites(ctx context.Context, ref checkpoint.Ref, ws []checkpoint.Write) error {
	if s.putWritesErr != nil {
		return s.putWritesErr
	}
	if s.beforePutWrites != nil {
		s.beforePutWrites(ctx, ref, ws)
	}
	if err := s.Memory.PutWrites(ctx, ref, ws); err != nil {
		return err
	}
	if s.afterPutWrites != nil {
		s.afterPutWrites(ref, ws)
	}
	return nil
}

// dexDurabilities is the table of the three durability modes.
var dexDurabilities = []struct {
	name string
	d    graph.Durability
}{
	{"sync", graph.DurabilitySync},
	{"async", graph.DurabilityAsync},
	{"exit", graph.DurabilityExit},
}

// dexConcat is Python's operator.add on strings.
type dexConcat struct{}

func (dexConcat) Reduce(old, update string) string { return old + update }

// dexStr returns a Reduced[string, dexConcat] carrying the write u.
func dexStr(u string) state.Reduced[string, dexConcat] {
	var r state.Reduced[string, dexConcat]
	r.Update(u)
	return r
}
