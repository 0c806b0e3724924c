package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server"
)

func TestSharedOptionsRefuseBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  server.Option
		want string
	}{
		{"nil backend", server.WithBackend(nil), "nil backend"},
		{"no workers", server.WithWorkers(0), "at least 1"},
		{"lease too short", server.WithRunLeaseTTL(time.Millisecond), "at least 100ms"},
		{"no poll interval", server.WithPollInterval(0), "must be positive"},
		{"empty holder", server.WithHolder(""), "empty name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := server.New(server.WithoutAuthLoopbackOnly(), tc.opt)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
