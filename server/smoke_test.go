package server_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sdkEntry is where the repository's JS peer harness installs the
// official client (bench/peers/langgraphjs, `npm ci`).
const sdkEntry = "../bench/peers/langgraphjs/node_modules/@langchain/langgraph-sdk/dist/index.js"

func TestOfficialJSClientDrivesTheServer(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	entry, err := filepath.Abs(sdkEntry)
	require.NoError(t, err)
	if _, err := os.Stat(entry); err != nil {
		t.Skipf("the LangGraph JS client is not installed at %s (run npm ci in bench/peers/langgraphjs)", entry)
	}
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hung client fails instead of hanging the suite
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/smoke.mjs")
	cmd.Env = append(os.Environ(), "API_URL="+e.srv.URL, "API_KEY="+token, "SDK_ENTRY="+entry,
		"LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "smoke: ok")
}
