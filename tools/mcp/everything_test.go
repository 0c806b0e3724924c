package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/tools/mcp"
)

// everything starts the official MCP reference server,
// @modelcontextprotocol/server-everything, pinned in testdata/everything
// (`npm ci --prefix tools/mcp/testdata/everything`, as .ci/run does), over
// stdio. Without Node.js or the installed package the test is skipped and
// says why.
func everything(t *testing.T, opts ...mcp.Option) *mcp.Session {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the test of the MCP reference server needs Node.js")
	}
	entry, err := filepath.Abs(filepath.Join("testdata", "everything", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	require.NoError(t, err)
	if _, err := os.Stat(entry); err != nil {
		t.Skip("@modelcontextprotocol/server-everything is not installed: npm ci --prefix tools/mcp/testdata/everything")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := mcp.ConnectStdio(ctx, node, []string{entry, "stdio"}, append([]mcp.Option{mcp.WithName("everything")}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// The reference server's get-structured-content answers with the weather
// as text (JSON) and as structured content: the model gets it once.
func TestReferenceServersStructuredContentIsNotSentTwice(t *testing.T) {
	s := everything(t)
	out, err := s.CallTool(t.Context(), "get-structured-content", json.RawMessage(`{"location":"Chicago"}`))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(out, "temperature"), "one representation: %s", out)
	var weather map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &weather), out)
	require.Equal(t, map[string]any{"temperature": 36.0, "conditions": "Light rain / drizzle", "humidity": 82.0}, weather)
}

// A call of the reference server that runs past the call time limit is
// cancelled with a TimeoutError, and the session goes on.
func TestReferenceServersLongCallIsCancelledAtTheCallTimeLimit(t *testing.T) {
	s := everything(t, mcp.WithCallTimeout(time.Second))
	_, err := s.CallTool(context.Background(), "trigger-long-running-operation", json.RawMessage(`{"duration":600,"steps":600}`))
	var te *mcp.TimeoutError
	require.ErrorAs(t, err, &te)
	require.Equal(t, mcp.TimeoutError{Server: "everything", Method: "tools/call trigger-long-running-operation", Limit: time.Second}, *te)
	out, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"still here"}`))
	require.NoError(t, err, "the session outlives a timed-out call")
	require.Contains(t, out, "still here")
}
