package graph_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// crossState and crossGraph are the graph of the stored thread in
// testdata/review_main_paused.sqlite, paused by the build of main before
// the task header's name became an index (see
// TestAThreadPausedByMainsBuildResumes). Do not change them: the stored
// checkpoint's pending writes are keyed by the task IDs this graph's
// tasks had then.
type crossState struct {
	L state.Append[string]
}

const crossSends = 90 // more than a slab of contexts

func crossGraph(t *testing.T, saver *sqlite.Saver, mu *sync.Mutex, runs map[string]int) *graph.Graph[crossState] {
	count := func(label string) {
		mu.Lock()
		runs[label]++
		mu.Unlock()
	}
	ask := func(ctx context.Context, label string) (crossState, error) {
		v, err := graph.Interrupt(ctx, label+"?")
		if err != nil {
			return crossState{}, err
		}
		return crossState{L: state.Items(fmt.Sprint(label, ":", v))}, nil
	}
	cb := graph.New[crossState]()
	cb.AddNode("first", func(ctx context.Context, _ crossState) (crossState, error) {
		count("first")
		return crossState{L: state.Items("first")}, nil
	})
	cb.AddNode("inner", func(ctx context.Context, _ crossState) (crossState, error) {
		count("inner")
		return ask(ctx, "inner")
	})
	cb.AddEdge(graph.Start, "first")
	cb.AddEdge("first", "inner")
	child, err := cb.Compile()
	require.NoError(t, err)

	b := graph.New[crossState]()
	b.AddNode("fan", func(context.Context, crossState) (crossState, error) { return crossState{}, nil })
	b.AddEdge(graph.Start, "fan")
	b.AddBranch("fan", func(context.Context, crossState) (graph.Route[crossState], error) {
		r := graph.Route[crossState]{Nodes: []string{"sub", strings.Clone("b"), fmt.Sprint("a")}}
		for i := range crossSends {
			r.Sends = append(r.Sends, graph.Send[crossState]{Node: fmt.Sprint("w"), Arg: crossState{L: state.Items(strconv.Itoa(i))}})
		}
		return r, nil
	})
	b.AddNode("a", func(context.Context, crossState) (crossState, error) {
		count("a")
		return crossState{L: state.Items("a")}, nil
	})
	b.AddNode("b", func(ctx context.Context, _ crossState) (crossState, error) {
		count("b")
		return ask(ctx, "b")
	})
	b.AddNode("w", func(ctx context.Context, s crossState) (crossState, error) {
		label := "w" + s.L.Get()[0]
		count(label)
		if label == "w7" || label == "w88" {
			return ask(ctx, label)
		}
		return crossState{L: state.Items(label)}, nil
	})
	b.AddCommandNode("sub", graph.Subgraph[crossState, crossState](child, nil, nil))
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// A thread paused by the build of main (written with
// REVIEW_WRITE_FIXTURE=path on main) resumes with this one: its pending
// writes, keyed by task IDs main computed, are found under the IDs this
// build computes, so the tasks that finished are not run again, and the
// interrupts (whose IDs are made from task IDs) take their answers, in
// the subgraph too.
func TestAThreadPausedByMainsBuildResumes(t *testing.T) {
	var mu sync.Mutex
	runs := map[string]int{}
	if path := os.Getenv("REVIEW_WRITE_FIXTURE"); path != "" {
		saver, err := sqlite.Open(t.Context(), path)
		require.NoError(t, err)
		defer saver.Close()
		_, err = crossGraph(t, saver, &mu, runs).Invoke(t.Context(), crossState{}, graph.WithThread("cross"))
		var in *graph.Interrupted
		require.ErrorAs(t, err, &in)
		return
	}
	data, err := os.ReadFile(filepath.Join("testdata", "review_main_paused.sqlite"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "paused.sqlite")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	saver, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	defer saver.Close()
	g := crossGraph(t, saver, &mu, runs)
	opts := []graph.RunOption{graph.WithThread("cross")}

	snap, err := g.GetState(t.Context(), opts...)
	require.NoError(t, err)
	answers := map[string]any{}
	for _, x := range snap.Interrupts {
		answers[x.ID] = "yes"
	}
	require.Len(t, answers, 4, "b, w7, w88 and the subgraph's inner")

	out, err := g.Resume(t.Context(), graph.Command[crossState]{ResumeMap: answers}, opts...)
	require.NoError(t, err)
	mu.Lock()
	require.Equal(t, map[string]int{"b": 1, "w7": 1, "w88": 1, "inner": 1}, runs,
		"only the paused tasks run again (and the subgraph's paused node)")
	mu.Unlock()
	got := out.L.Get()
	require.Len(t, got, 2+crossSends+2) // a, b, the Sends, the subgraph's two
	for _, want := range []string{"a", "b:yes", "w7:yes", "w88:yes", "w0", "w89", "first", "inner:yes"} {
		require.Equal(t, 1, countOf(got, want), "%s in %v", want, got)
	}
}
