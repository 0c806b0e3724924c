package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/codur"
)

type echoIn struct {
	Text string `json:"text"`
}

// challengeDir writes one challenge that the chat server's agent fixes.
func challengeDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "add")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, content := range map[string]string{
		"prompt.txt":   "fix add in main.py",
		"main.py":      "def add(a, b):\n    return a - b\n\n\nprint(add(2, 3))\n",
		"expected.txt": "5\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return dir
}

func TestChallengeWithAConfigUsesItsOptionsAndMCPTools(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "echo", Version: "v1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo a text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
		})
	mcpSrv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(mcpSrv.Close)

	// The chat server records the tools the agent is offered.
	chat := chatServer(t)
	var mu sync.Mutex
	offered := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Tools []struct {
				Function struct{ Name string } `json:"function"`
			} `json:"tools"`
		}
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		for _, tl := range body.Tools {
			offered[tl.Function.Name] = true
		}
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(raw))
		chat.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	cfg := filepath.Join(t.TempDir(), "codur.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(
		"default_agent: llm:coder\nprofiles:\n  coder: {model: \"openai-compatible:m@%s/v1\"}\nmcp_servers:\n  echo: {url: %q}\n", srv.URL, mcpSrv.URL)), 0o644))
	code, out, errOut := runCmd(t, "challenge", challengeDir(t), "--config", cfg)
	require.Equal(t, exitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "1/1 passed")
	mu.Lock()
	defer mu.Unlock()
	require.True(t, offered["echo__echo"], "the MCP tool is offered: %v", offered)
}

func TestChallengeExitsWithAnErrorWhenOneFails(t *testing.T) {
	code, out, errOut := runCmd(t, "challenge")
	require.Equal(t, exitError, code)
	require.Contains(t, out, "| impossible | FAIL |")
	require.Contains(t, errOut, "1 challenge(s) failed")
}

// An MCP server that failed is connected to once, not again for every
// challenge after the first: its failure is reported once, and the next
// challenges go on without it.
func TestAnMCPServerThatFailedIsNotStartedAgain(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	cfg := &codur.Config{MCPServers: map[string]codur.MCPServer{
		"broken": {Command: "sh", Args: []string{"-c", "echo start >> " + starts + "; exit 1"}},
	}}
	var stderr bytes.Buffer
	source := mcpTools(cfg, &stderr)
	for range 3 {
		ts, closeMCP, err := source(t.Context(), t.TempDir())
		require.NoError(t, err)
		require.Empty(t, ts)
		require.NoError(t, closeMCP())
	}
	b, err := os.ReadFile(starts)
	require.NoError(t, err)
	require.Equal(t, "start\n", string(b), "started once")
	require.Equal(t, 1, strings.Count(stderr.String(), "MCP server broken"), stderr.String())
}
