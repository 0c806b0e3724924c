package graph_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
)

// A caller can wait for the nodes a run abandoned: one that outlived its
// timeout and ignored its context is counted until it returns.
func TestWithAbandonedNodesCountsNodesUntilTheyReturn(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []graph.NodeOption
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"a node timeout", []graph.NodeOption{graph.WithNodeTimeout(10 * time.Millisecond)},
			func() (context.Context, context.CancelFunc) { return context.WithCancel(t.Context()) }},
		{"a cancelled run", nil,
			func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(t.Context(), 10*time.Millisecond)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release, returned := make(chan struct{}), make(chan struct{})
			b := graph.New[mwState]()
			b.AddNode("stubborn", func(ctx context.Context, s mwState) (mwState, error) {
				<-release // ignores ctx
				close(returned)
				return s, nil
			}, tc.opts...)
			b.AddEdge(graph.Start, "stubborn")
			g, err := b.Compile()
			require.NoError(t, err)
			var wg sync.WaitGroup
			ctx, cancel := tc.ctx()
			defer cancel()
			_, err = g.Invoke(ctx, mwState{}, graph.WithAbandonedNodes(&wg))
			require.Error(t, err)
			waited := make(chan struct{})
			go func() {
				wg.Wait()
				close(waited)
			}()
			select {
			case <-waited:
				t.Fatal("Wait returned while the abandoned node was still running")
			case <-time.After(20 * time.Millisecond):
			}
			close(release)
			<-returned
			<-waited
		})
	}
}
