package sqlite_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/backendtest"
	"github.com/agentgraph/agentgraph/server/sqlite"
)

// open opens a Backend on path, closed when the test ends.
func open(t *testing.T, path string) *sqlite.Backend {
	t.Helper()
	b, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	paths := map[server.Backend]string{}
	backendtest.Run(t, func(t *testing.T) server.Backend {
		path := filepath.Join(t.TempDir(), "server.db")
		b := open(t, path)
		mu.Lock()
		paths[b] = path
		mu.Unlock()
		return b
	}, backendtest.WithSecondInstance(func(t *testing.T, b server.Backend) server.Backend {
		mu.Lock()
		path := paths[b]
		mu.Unlock()
		return open(t, path)
	}))
}

func TestConformanceInMemory(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) server.Backend { return open(t, ":memory:") })
}
