package server_test

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTheSuiteOnEveryBackend runs this package's tests again, in a child
// process for each shared Backend (SQLite, and PostgreSQL when
// AGENTGRAPH_TEST_POSTGRES_URL is set), with AGENTGRAPH_TEST_SERVER_BACKEND
// naming it: every handler is then exercised on every Backend by the one
// test command, as on the server's own MemoryBackend in this process.
func TestTheSuiteOnEveryBackend(t *testing.T) {
	if onBackend() {
		t.Skip("a child run already")
	}
	if testing.Short() {
		t.Skip("-short: the suite runs on the server's own MemoryBackend only")
	}
	for _, b := range []string{"sqlite", "postgres"} {
		t.Run(b, func(t *testing.T) {
			if b == "postgres" && os.Getenv("AGENTGRAPH_TEST_POSTGRES_URL") == "" {
				t.Skip("AGENTGRAPH_TEST_POSTGRES_URL is not set")
			}
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.count=1")
			cmd.Env = append(os.Environ(), backendEnv+"="+b)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			require.NoError(t, err, "the suite on %s:\n%s", b, lastLines(out.Bytes(), 80))
		})
	}
}

// lastLines returns the last n lines of b.
func lastLines(b []byte, n int) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	return bytes.Join(lines[max(len(lines)-n, 0):], nil)
}
