package graph_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// Task IDs are stored: pending writes are keyed by them, interrupt IDs and
// subgraph namespaces are made from them, and a thread paused by one build
// is resumed by the next. So the way an ID is made is a format, pinned
// here as written out below (FNV-128a, hex, of the checkpoint the step
// starts from, the namespace, the step, the node, pull or push, and the
// position among the step's Sends), not through the runtime's own code.

func wantTaskID(cp, ns string, step int, node string, push bool, idx int) string {
	kind := "pull"
	if push {
		kind = "push"
	}
	return fnvHex(cp + "|" + ns + "|" + strconv.Itoa(step) + "|" + node + "|" + kind + "|" + strconv.Itoa(idx))
}

func fnvHex(s string) string {
	h := fnv.New128a()
	h.Write([]byte(s))
	return hex.EncodeToString(h.Sum(nil))
}

func TestStoredTaskIDsKeepTheirFormat(t *testing.T) {
	type S struct {
		L state.Append[string]
	}
	const sends = 70 // more than a slab of task contexts
	interrupting := func(label string) func(context.Context) (S, error) {
		return func(ctx context.Context) (S, error) {
			v, err := graph.Interrupt(ctx, label+"?")
			if err != nil {
				return S{}, err
			}
			return S{L: state.Items(fmt.Sprint(label, ":", v))}, nil
		}
	}
	cb := graph.New[S]()
	cb.AddNode("inner", func(ctx context.Context, _ S) (S, error) { return interrupting("inner")(ctx) })
	cb.AddEdge(graph.Start, "inner")
	child, err := cb.Compile()
	require.NoError(t, err)

	b := graph.New[S]()
	b.AddNode("fan", func(context.Context, S) (S, error) { return S{}, nil })
	b.AddEdge(graph.Start, "fan")
	b.AddBranch("fan", func(context.Context, S) (graph.Route[S], error) {
		r := graph.Route[S]{Nodes: []string{"sub", "b", "a"}}
		for i := range sends {
			r.Sends = append(r.Sends, graph.Send[S]{Node: "w", Arg: S{L: state.Items(strconv.Itoa(i))}})
		}
		return r, nil
	})
	b.AddNode("a", func(context.Context, S) (S, error) { return S{L: state.Items("a")}, nil })
	b.AddNode("b", func(ctx context.Context, _ S) (S, error) { return interrupting("b")(ctx) })
	b.AddNode("w", func(ctx context.Context, s S) (S, error) {
		label := "w" + s.L.Get()[0]
		if label == "w66" {
			return interrupting(label)(ctx)
		}
		return S{L: state.Items(label)}, nil
	})
	b.AddCommandNode("sub", graph.Subgraph[S, S](child, nil, nil))
	saver := checkpoint.NewMemory()
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)

	_, err = g.Invoke(t.Context(), S{}, graph.WithThread("t"))
	var in *graph.Interrupted
	require.ErrorAs(t, err, &in)
	snap, err := g.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)

	// The paused step's tasks: the triggered nodes, then the Sends.
	cp, step := snap.CheckpointID, snap.Metadata.Step+1
	want := []string{
		wantTaskID(cp, "", step, "a", false, 0),
		wantTaskID(cp, "", step, "b", false, 0),
		wantTaskID(cp, "", step, "sub", false, 0),
	}
	for i := range sends {
		want = append(want, wantTaskID(cp, "", step, "w", true, i))
	}
	var got []string
	for _, tk := range snap.Tasks {
		got = append(got, tk.Name+" "+tk.ID)
	}
	named := []string{"a " + want[0], "b " + want[1], "sub " + want[2]}
	for _, id := range want[3:] {
		named = append(named, "w "+id)
	}
	require.ElementsMatch(t, named, got)

	// The pending writes are stored under those IDs: the finished tasks'
	// writes, and the paused ones' interrupts.
	tup, err := saver.Get(t.Context(), checkpoint.Ref{ThreadID: "t", ID: cp})
	require.NoError(t, err)
	var written []string
	for _, w := range tup.PendingWrites {
		if !slices.Contains(written, w.TaskID) {
			written = append(written, w.TaskID)
		}
	}
	require.ElementsMatch(t, want, written)

	// Interrupt IDs and the subgraph's namespace are made from them.
	var interrupts []string
	for _, x := range snap.Interrupts {
		interrupts = append(interrupts, x.Node+" "+x.Namespace+" "+x.ID)
		if x.Node == "inner" {
			require.Equal(t, "sub:"+want[2], x.Namespace)
		}
	}
	require.Contains(t, interrupts, "b  "+fnvHex(want[1]+":interrupt:0"))
	require.Contains(t, interrupts, "w  "+fnvHex(want[3+66]+":interrupt:0"))
	require.Len(t, interrupts, 3)
}
