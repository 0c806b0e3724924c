package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// A task's context makes its ID on first use, and a task detached before
// that shares a stand-in record that the first TaskID replaces. These
// tests keep contexts whose node asked nothing of them, and ask for the
// first time from goroutines that race the runtime's detach (the node is
// returning) or come after it (the node returned, timed out, or its run
// ended), under -race: every reading must be the first forever, the IDs
// of a step's tasks distinct, and each the ID the runtime gave the task.

type lateReading struct {
	name, id   string
	step, left int
}

func readLate(ctx context.Context) lateReading {
	return lateReading{graph.NodeName(ctx), graph.TaskID(ctx), graph.Step(ctx), graph.RemainingSteps(ctx)}
}

// lateKeeper holds the contexts of one run's nodes and the goroutines
// that read them.
type lateKeeper struct {
	t    *testing.T
	wg   sync.WaitGroup
	stop chan struct{}

	mu       sync.Mutex
	kept     []*lateKept
	problems []string
}

type lateKept struct {
	ctx   context.Context
	label string // what the node knows of its task (its node and Send)
	// first is what the first goroutine to look read, set once.
	first    lateReading
	hasFirst bool
}

func newLateKeeper(t *testing.T) *lateKeeper {
	k := &lateKeeper{t: t, stop: make(chan struct{})}
	t.Cleanup(k.end)
	return k
}

// keep starts goroutines that read ctx once returning is closed, and
// once more when the keeper ends. It returns without asking ctx anything.
func (k *lateKeeper) keep(ctx context.Context, label string, returning <-chan struct{}) {
	kc := &lateKept{ctx: ctx, label: label}
	k.mu.Lock()
	k.kept = append(k.kept, kc)
	k.mu.Unlock()
	look := func(r lateReading) {
		k.mu.Lock()
		defer k.mu.Unlock()
		switch {
		case !kc.hasFirst:
			kc.first, kc.hasFirst = r, true
		case r != kc.first:
			k.problems = append(k.problems, fmt.Sprintf("%s: read %+v, first %+v", label, r, kc.first))
		}
	}
	// A few readings each, as the node returns, and one more at the end:
	// the race detector needs the accesses, not a long loop.
	for g := range 3 {
		k.wg.Go(func() {
			<-returning
			for i := range 20 {
				switch g {
				case 0:
					look(readLate(ctx))
				case 1:
					look(lateReading{graph.NodeName(ctx), graph.TaskID(ctx), graph.Step(ctx), graph.RemainingSteps(ctx)})
					graph.StreamWriter(ctx)(i) // asks the ID too, when the run streams custom events
				case 2:
					graph.MessageWriter(ctx)(graph.MessageChunk{Text: "late"})
					look(readLate(ctx))
				}
				runtime.Gosched()
			}
			<-k.stop
			look(readLate(ctx))
		})
	}
}

// check asks every kept context from the test's goroutine: the same
// reading as its goroutines', and Interrupt refused. It returns the
// readings by label.
func (k *lateKeeper) check() map[string]lateReading {
	k.t.Helper()
	k.mu.Lock()
	kept := append([]*lateKept(nil), k.kept...)
	k.mu.Unlock()
	got := make(map[string]lateReading, len(kept))
	for _, kc := range kept {
		r := readLate(kc.ctx)
		k.mu.Lock()
		if kc.hasFirst {
			require.Equal(k.t, kc.first, r, kc.label)
		}
		k.mu.Unlock()
		_, err := graph.Interrupt(kc.ctx, "late")
		require.Error(k.t, err, "%s: a node that returned can no longer interrupt", kc.label)
		require.NotContains(k.t, got, kc.label)
		got[kc.label] = r
	}
	return got
}

// end stops the goroutines and fails the test on any reading that changed.
func (k *lateKeeper) end() {
	select {
	case <-k.stop:
		return
	default:
	}
	close(k.stop)
	k.wg.Wait()
	require.Empty(k.t, k.problems)
}

type lateState struct {
	L state.Append[string]
}

// requireDistinctIDs fails unless the readings name n distinct task IDs.
func requireDistinctIDs(t *testing.T, readings map[string]lateReading, n int) {
	t.Helper()
	ids := map[string]string{}
	for label, r := range readings {
		require.NotEmpty(t, r.id, label)
		if other, ok := ids[r.id]; ok {
			t.Fatalf("%s and %s read the same task ID %s", label, other, r.id)
		}
		ids[r.id] = label
	}
	require.Len(t, ids, n)
}

func TestAContextFirstAskedAsItsNodeReturnsReadsItsTasksValuesForever(t *testing.T) {
	const sends = 200 // more than a slab of contexts
	for _, tc := range []struct {
		name  string
		saver bool
		modes graph.Mode
	}{
		{name: "invoke: nothing but the node's goroutines asks the IDs"},
		{name: "with a checkpointer, which asks them for the pending writes", saver: true},
		{name: "streaming, where the node runs on a copy of the task's header", modes: graph.ModeUpdates | graph.ModeCustom | graph.ModeMessages | graph.ModeTasks},
		{name: "streaming with a checkpointer", saver: true, modes: graph.ModeUpdates | graph.ModeCustom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newLateKeeper(t)
			b := graph.New[lateState]()
			b.AddNode("fan", func(ctx context.Context, s lateState) (lateState, error) {
				returning := make(chan struct{})
				k.keep(ctx, "fan", returning)
				close(returning)
				return lateState{}, nil
			})
			b.AddEdge(graph.Start, "fan")
			b.AddBranch("fan", func(context.Context, lateState) (graph.Route[lateState], error) {
				r := graph.Route[lateState]{Nodes: []string{"pulled"}}
				for i := range sends {
					r.Sends = append(r.Sends, graph.Send[lateState]{Node: "w", Arg: lateState{L: state.Items(strconv.Itoa(i))}})
				}
				return r, nil
			})
			node := func(ctx context.Context, s lateState) (lateState, error) {
				label := graph.NodeName(ctx)
				if label == "w" {
					label += s.L.Get()[0]
				}
				returning := make(chan struct{})
				k.keep(ctx, label, returning)
				close(returning) // the goroutines race the runtime's detach
				return lateState{L: state.Items(label)}, nil
			}
			b.AddNode("pulled", node)
			b.AddNode("w", node)
			var opts []graph.CompileOption
			var run []graph.RunOption
			if tc.saver {
				opts = append(opts, graph.WithCheckpointer(checkpoint.NewMemory()))
				run = append(run, graph.WithThread("t"))
			}
			g, err := b.Compile(opts...)
			require.NoError(t, err)

			runtimeIDs := map[string]string{} // label: the ID of the runtime's updates event
			if tc.modes == 0 {
				out, err := g.Invoke(t.Context(), lateState{}, run...)
				require.NoError(t, err)
				require.Len(t, out.L.Get(), sends+1)
			} else {
				for ev, err := range g.Stream(t.Context(), lateState{}, append(run, graph.WithStreamModes(tc.modes))...) {
					require.NoError(t, err)
					if ev.Mode == graph.ModeUpdates && (ev.Node == "w" || ev.Node == "pulled") {
						var written struct{ Updates []string }
						require.NoError(t, json.Unmarshal(ev.Writes["L"], &written), "%v", ev.Writes)
						require.Len(t, written.Updates, 1)
						runtimeIDs[written.Updates[0]] = ev.TaskID
					}
				}
			}
			got := k.check()
			require.Len(t, got, sends+2)
			fan := got["fan"]
			delete(got, "fan")
			requireDistinctIDs(t, got, sends+1)
			for label, id := range runtimeIDs {
				require.Equal(t, id, got[label].id, "%s: the ID its context reads is its task's", label)
			}
			if tc.modes != 0 {
				require.Len(t, runtimeIDs, sends+1)
			}
			for label, r := range got {
				require.Equal(t, fan.step+1, r.step, label)
				require.Equal(t, label[:1], r.name[:1], label)
			}
			k.end()
		})
	}
}

// A node that outlived its timeout is abandoned: detached while it still
// runs. Its goroutines ask its context for the first time once it was
// abandoned, then once it returned, and read the values of its task.
func TestAnAbandonedNodesContextFirstAskedLateReadsItsTasksValues(t *testing.T) {
	for _, modes := range []graph.Mode{0, graph.ModeCustom | graph.ModeUpdates} {
		t.Run(fmt.Sprintf("modes %v", modes), func(t *testing.T) {
			k := newLateKeeper(t)
			release, abandoned := make(chan struct{}), make(chan struct{})
			b := graph.New[lateState]()
			b.AddNode("fan", func(context.Context, lateState) (lateState, error) { return lateState{}, nil })
			b.AddEdge(graph.Start, "fan")
			b.AddBranch("fan", func(context.Context, lateState) (graph.Route[lateState], error) {
				r := graph.Route[lateState]{}
				for i := range 70 {
					r.Sends = append(r.Sends, graph.Send[lateState]{Node: "slow", Arg: lateState{L: state.Items(strconv.Itoa(i))}})
				}
				return r, nil
			})
			b.AddNode("slow", func(ctx context.Context, s lateState) (lateState, error) {
				k.keep(ctx, "slow"+s.L.Get()[0], abandoned)
				<-release // ignores ctx: abandoned at its timeout
				return s, nil
			}, graph.WithNodeTimeout(time.Millisecond))
			g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			var wg sync.WaitGroup
			run := []graph.RunOption{graph.WithThread("t"), graph.WithAbandonedNodes(&wg)}
			if modes == 0 {
				_, err = g.Invoke(t.Context(), lateState{}, run...)
			} else {
				for _, e := range g.Stream(t.Context(), lateState{}, append(run, graph.WithStreamModes(modes))...) {
					if e != nil {
						err = e
					}
				}
			}
			var te *graph.NodeTimeoutError
			require.ErrorAs(t, err, &te)
			close(abandoned) // the goroutines ask, the nodes still running
			got := k.check()
			// The step's first failure cancels it: the tasks that had not
			// started by then never do.
			require.NotEmpty(t, got)
			requireDistinctIDs(t, got, len(got))
			close(release)
			wg.Wait() // every abandoned node returned
			require.Equal(t, got, k.check(), "the same readings once the nodes returned")
			// The failed step's tasks are the snapshot's, under these IDs.
			snap, err := g.GetState(t.Context(), graph.WithThread("t"))
			require.NoError(t, err)
			ids := map[string]bool{}
			for _, tk := range snap.Tasks {
				ids[tk.ID] = true
			}
			for label, r := range got {
				require.True(t, ids[r.id], "%s: task ID %s is not one of the snapshot's tasks", label, r.id)
			}
			k.end()
		})
	}
}

// Contexts kept from an interrupted concurrent step (Sends and a
// subgraph) read the same values after the run resumed, and the resumed
// tasks' contexts read their IDs: the same task, the same ID; an
// interrupt answered by its ID is taken by the task that raised it.
func TestContextsKeptAcrossAnInterruptAndItsResumeReadTheirTasksIDs(t *testing.T) {
	k := newLateKeeper(t)
	var mu sync.Mutex
	runIDs := map[string][]string{} // label: the ID read by each run of its task
	record := func(ctx context.Context, label string) {
		returning := make(chan struct{})
		k.keep(ctx, fmt.Sprintf("%s#%d", label, len(runIDs[label])), returning)
		runIDs[label] = append(runIDs[label], graph.TaskID(ctx))
		close(returning)
	}

	cb := graph.New[lateState]()
	cb.AddNode("inner", func(ctx context.Context, s lateState) (lateState, error) {
		mu.Lock()
		record(ctx, "inner")
		mu.Unlock()
		v, err := graph.Interrupt(ctx, "inner?")
		if err != nil {
			return lateState{}, err
		}
		return lateState{L: state.Items(fmt.Sprint("inner:", v))}, nil
	})
	cb.AddEdge(graph.Start, "inner")
	child, err := cb.Compile()
	require.NoError(t, err)

	const sends = 80
	b := graph.New[lateState]()
	b.AddNode("fan", func(context.Context, lateState) (lateState, error) { return lateState{}, nil })
	b.AddEdge(graph.Start, "fan")
	b.AddBranch("fan", func(context.Context, lateState) (graph.Route[lateState], error) {
		r := graph.Route[lateState]{Nodes: []string{"sub"}}
		for i := range sends {
			r.Sends = append(r.Sends, graph.Send[lateState]{Node: "w", Arg: lateState{L: state.Items(strconv.Itoa(i))}})
		}
		return r, nil
	})
	b.AddNode("w", func(ctx context.Context, s lateState) (lateState, error) {
		label := "w" + s.L.Get()[0]
		mu.Lock()
		record(ctx, label)
		mu.Unlock()
		if label == "w7" || label == "w70" {
			v, err := graph.Interrupt(ctx, label+"?")
			if err != nil {
				return lateState{}, err
			}
			return lateState{L: state.Items(fmt.Sprint(label, ":", v))}, nil
		}
		return lateState{L: state.Items(label)}, nil
	})
	b.AddCommandNode("sub", graph.Subgraph[lateState, lateState](child, nil, nil))
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)

	_, err = g.Invoke(t.Context(), lateState{}, graph.WithThread("t"))
	var in *graph.Interrupted
	require.ErrorAs(t, err, &in)
	first := k.check()
	snap, err := g.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 3)
	answers := map[string]any{}
	for _, in := range snap.Interrupts {
		answers[in.ID] = "yes " + in.Node
	}
	taskIDs := map[string]bool{}
	for _, tk := range snap.Tasks {
		taskIDs[tk.ID] = true
	}
	for label, ids := range runIDs {
		if label != "inner" {
			require.True(t, taskIDs[ids[0]], "%s: its ID %s is one of the paused step's tasks", label, ids[0])
		}
	}

	out, err := g.Resume(t.Context(), graph.Command[lateState]{ResumeMap: answers}, graph.WithThread("t"))
	require.NoError(t, err)
	require.Contains(t, out.L.Get(), "w7:yes w")
	require.Contains(t, out.L.Get(), "w70:yes w")
	require.Contains(t, out.L.Get(), "inner:yes inner")
	require.Len(t, out.L.Get(), sends+1)

	again := k.check()
	for label, r := range first {
		require.Equal(t, r, again[label], "%s read another value after the resume", label)
	}
	mu.Lock()
	defer mu.Unlock()
	for label, ids := range runIDs {
		switch label {
		case "w7", "w70", "inner":
			require.Len(t, ids, 2, "%s runs again on resume", label)
			require.Equal(t, ids[0], ids[1], "%s: the resumed task has its ID", label)
		default:
			require.Len(t, ids, 1, "%s finished: its writes are restored, it does not run again", label)
		}
	}
	k.end()
}
