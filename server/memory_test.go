package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/backendtest"
)

// The memory Backend keeps the promises the SQL ones keep; one instance
// serves as both "processes" of the cases that need two.
func TestMemoryBackendConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) server.Backend { return server.NewMemoryBackend() },
		backendtest.WithSecondInstance(func(t *testing.T, b server.Backend) server.Backend { return b }))
}

// A server without WithBackend runs the runs of as many threads at once
// as have one: its own MemoryBackend's dispatcher is not bounded by
// DefaultWorkers, as a shared Backend's is.
func TestALocalServerRunsEveryThreadsRunAtOnce(t *testing.T) {
	memoryOnly(t, "a server with a Backend executes DefaultWorkers runs at once")
	e := newEnv(t)
	n := server.DefaultWorkers + 2
	for i := range n {
		tid := e.newThread(nil)
		r := e.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": fmt.Sprint(i)}})
		require.Equal(t, 200, r.status, "%s", r.body)
	}
	for i := range n {
		select {
		case <-e.gate.started:
		case <-time.After(30 * time.Second): // a bound on a broken server, not a timing measured
			t.Fatalf("%d of %d runs started while none ended", i, n)
		}
	}
}
