package graph_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// readmeSnippet runs the README's snippet, which is quoted verbatim
// between the markers (TestReadmeQuotesTheSnippet checks it), and checks
// its result.
func readmeSnippet(ctx context.Context) error {
	// README snippet start
	type State struct {
		Messages state.Messages       // add/replace by ID, Remove, RemoveAll
		Drafts   state.Append[string] // parallel writes concatenate, in a deterministic order
		Approved state.Value[bool]    // last value; two writes in one step are an error
	}

	b := graph.New[State]()
	b.AddNode("write", func(ctx context.Context, s State) (State, error) {
		return State{Drafts: state.Items("draft " + strconv.Itoa(s.Drafts.Len()+1))}, nil
	})
	b.AddNode("review", func(ctx context.Context, s State) (State, error) {
		ok, err := graph.InterruptAs[bool](ctx, "approve "+s.Drafts.Get()[s.Drafts.Len()-1]+"?")
		if err != nil {
			return s, err // pauses the run; Resume re-runs this node with the answer
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
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	if err != nil {
		return err // a *graph.CompileError lists every problem at once
	}
	_, err = g.Invoke(ctx, State{}, graph.WithThread("t1")) // a *graph.Interrupted: paused for the answer
	out, err := g.Resume(ctx, graph.Command[State]{Resume: true}, graph.WithThread("t1"))
	// README snippet end
	if err != nil {
		return err
	}
	if !out.Approved.Get() || !slices.Equal(out.Drafts.Get(), []string{"draft 1"}) {
		return fmt.Errorf("approved %v, drafts %q; want true, [draft 1]", out.Approved.Get(), out.Drafts.Get())
	}
	// The refused path: a "no" loops back to write a second draft.
	if _, err := g.Invoke(ctx, State{}, graph.WithThread("t2")); !errors.As(err, new(*graph.Interrupted)) {
		return fmt.Errorf("first review of t2: %v, want a pause", err)
	}
	if _, err := g.Resume(ctx, graph.Command[State]{Resume: false}, graph.WithThread("t2")); !errors.As(err, new(*graph.Interrupted)) {
		return fmt.Errorf("second review of t2: %v, want a pause", err)
	}
	out, err = g.Resume(ctx, graph.Command[State]{Resume: true}, graph.WithThread("t2"))
	if err != nil || !slices.Equal(out.Drafts.Get(), []string{"draft 1", "draft 2"}) {
		return fmt.Errorf("t2 ended with drafts %q, %v; want [draft 1 draft 2]", out.Drafts.Get(), err)
	}
	return nil
}

func TestReadmeSnippet(t *testing.T) {
	require.NoError(t, readmeSnippet(t.Context()))
}

// The README's snippet is the code readmeSnippet runs, character for
// character (less one tab of indentation).
func TestReadmeQuotesTheSnippet(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## Twenty-five lines\n")
	require.True(t, ok, "README.md has no section \"Twenty-five lines\"")
	_, block, ok := strings.Cut(section, "```go\n")
	require.True(t, ok, "the section has no Go block")
	block, _, ok = strings.Cut(block, "```\n")
	require.True(t, ok, "the Go block is not closed")

	src, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	_, body, _ := strings.Cut(string(src), "\t// README snippet start\n")
	body, _, _ = strings.Cut(body, "\t// README snippet end\n")
	var want strings.Builder
	for line := range strings.Lines(body) {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	require.Equal(t, want.String(), block, "README.md's snippet differs from readmeSnippet in graph/readme_test.go")
}
