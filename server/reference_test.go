package server_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// refModules is where `npm ci --prefix server/testdata/ref` installs
// LangGraph's own JS server and the client, pinned by
// server/testdata/ref/package-lock.json.
const refModules = "testdata/ref/node_modules/@langchain/langgraph-api"

// TestReferenceComparison runs the smoke test's client scenario against
// this server and against LangGraph's own JS server on equivalent graphs,
// and fails on any difference not listed (and classified) in
// testdata/ref/known-differences.json, on a listed one that is gone, and
// on a failed smoke check (server/COMPARISON.md explains each difference).
// With -v it prints the comparison.
func TestReferenceComparison(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(refModules); err != nil {
		msg := fmt.Sprintf("LangGraph's JS server is not installed at %s: run npm ci --prefix server/testdata/ref", refModules)
		if os.Getenv("CI") != "" {
			t.Fatal(msg) // CI installs it: a missing reference is a broken CI, not a skip
		}
		t.Skip(msg)
	}
	script, err := filepath.Abs("testdata/ref/compare.mjs")
	require.NoError(t, err)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a hung server fails instead of hanging the suite
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = filepath.Dir(script)
	cmd.Env = append(os.Environ(), "GO_API_URL="+e.srv.URL, "GO_API_KEY="+token,
		"LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	require.NoError(t, err, "the comparison found differences not in testdata/ref/known-differences.json (see the log)")
}
