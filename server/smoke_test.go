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

// sdkEntry is where `npm ci` in server/testdata installs the official
// client, pinned by server/testdata/package-lock.json (.ci/run does it).
const sdkEntry = "testdata/node_modules/@langchain/langgraph-sdk/dist/index.js"

// officialClient returns node and the official client's entry point, or
// skips the test without them (fails it in CI, which installs them: a
// missing client is a broken CI, not a skip).
func officialClient(t *testing.T) (node, entry string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	entry, err = filepath.Abs(sdkEntry)
	require.NoError(t, err)
	if _, err := os.Stat(entry); err != nil {
		msg := fmt.Sprintf("the LangGraph JS client is not installed at %s: run npm ci in server/testdata", entry)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node, entry
}

func TestOfficialJSClientDrivesTheServer(t *testing.T) {
	node, entry := officialClient(t)
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
