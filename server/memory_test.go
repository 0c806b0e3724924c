package server_test

import (
	"testing"

	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/backendtest"
)

// The memory Backend keeps the promises the SQL ones keep; one instance
// serves as both "processes" of the cases that need two.
func TestMemoryBackendConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) server.Backend { return server.NewMemoryBackend() },
		backendtest.WithSecondInstance(func(t *testing.T, b server.Backend) server.Backend { return b }))
}
