package graph_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

func TestReadmeSnippet(t *testing.T) {
	ctx := context.Background()
	type State struct {
		Messages state.Messages
		Drafts   state.Append[string]
		Approved state.Value[bool]
	}
	b := graph.New[State]()
	b.AddNode("write", func(ctx context.Context, s State) (State, error) {
		return State{Drafts: state.Items("draft " + strconv.Itoa(s.Drafts.Len()+1))}, nil
	})
	b.AddNode("review", func(ctx context.Context, s State) (State, error) {
		ok, err := graph.InterruptAs[bool](ctx, "approve "+s.Drafts.Get()[s.Drafts.Len()-1]+"?")
		if err != nil {
			return s, err
		}
		s.Approved.Set(ok)
		return s, nil
	})
	b.AddEdge(graph.Start, "write")
	b.AddEdge("write", "review")
	b.AddConditionalEdges("review", func(ctx context.Context, s State) (string, error) {
		if s.Approved.Get() {
			return graph.End, nil
		}
		return "write", nil
	})
	g, _ := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	_, err := g.Invoke(ctx, State{}, graph.WithThread("t1"))
	t.Log(err)
	out, err := g.Resume(ctx, graph.Command[State]{Resume: false}, graph.WithThread("t1"))
	t.Log(out.Drafts.Get(), err)
	out, err = g.Resume(ctx, graph.Command[State]{Resume: true}, graph.WithThread("t1"))
	t.Log(out.Drafts.Get(), out.Approved.Get(), err)
	if err != nil || !out.Approved.Get() || out.Drafts.Len() != 2 {
		t.Fatal("unexpected")
	}
}
