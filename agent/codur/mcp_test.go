package codur_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/tools/mcp"
)

type shoutIn struct {
	Text string `json:"text"`
}

func TestMCPServerOfTheConfigGivesTools(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "shouter", Version: "v1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "shout", Description: "Upper-case a text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in shoutIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "LOUD " + in.Text}}}, nil, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)

	cfg, err := codur.ParseConfig([]byte("mcp_servers:\n  loud: {url: \"" + srv.URL + "\"}\n"))
	require.NoError(t, err)
	dir, ws := workspace(t, nil)
	mcpTools, closeMCP, err := cfg.MCPTools(t.Context(), dir)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, closeMCP()) })
	var names []string
	for _, tl := range mcpTools {
		names = append(names, tl.Name())
	}
	require.ElementsMatch(t, []string{"loud__shout", "list_mcp_tools", "call_mcp_tool", "read_mcp_resource"}, names)

	// The planner calls the MCP tool directly, as it would a file tool.
	model := llm.NewScripted(
		text(`{"task_type": "other", "confidence": 0.5, "action": "plan"}`),
		text(`{"action": "tool", "tool_calls": [{"tool": "loud__shout", "args": {"text": "hi"}}]}`))
	reg := codur.NewRegistry()
	require.NoError(t, reg.Register(codur.AgentInfo{Ref: codur.DefaultAgent}, &codur.ModelAgent{Model: model}))
	g, err := codur.New(model, reg, append(codur.DefaultTools(ws), mcpTools...))
	require.NoError(t, err)
	r := run(t, g, codur.Input("say hi through the shouter", false))
	require.NoError(t, r.err)
	require.Contains(t, r.out.FinalResponse.Get(), "LOUD hi")
	out, err := mcpTools[0].Call(t.Context(), json.RawMessage(`{"text": "x"}`))
	require.NoError(t, err)
	require.Contains(t, out, "LOUD x")
}

func TestMCPToolsWithoutServers(t *testing.T) {
	ts, closeMCP, err := codur.Config{}.MCPTools(t.Context(), t.TempDir())
	require.NoError(t, err)
	require.Empty(t, ts)
	require.NoError(t, closeMCP())
}

func TestMCPServerOfTheConfigGetsItsHeaders(t *testing.T) {
	t.Setenv("CODUR_TEST_MCP_TOKEN", "t0ken")
	s := sdk.NewServer(&sdk.Implementation{Name: "guarded", Version: "v1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "shout", Description: "Upper-case a text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in shoutIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "LOUD " + in.Text}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0ken" && r.Header.Get("Authorization") != "Basic pa$$w0rd$x" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		name, headers string
		ok            bool
		err           string
	}{
		{"with the header", `headers: {Authorization: "Bearer ${CODUR_TEST_MCP_TOKEN}"}`, true, ""},
		{"without", ``, false, ""},
		{"a dollar kept as written", `headers: {Authorization: "Basic pa$$w0rd$x"}`, true, ""},
		{"an unset variable", `headers: {Authorization: "Bearer ${CODUR_TEST_MCP_UNSET}"}`, false, "variable CODUR_TEST_MCP_UNSET is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entry := `url: "` + srv.URL + `"`
			if tc.headers != "" {
				entry += ", " + tc.headers
			}
			cfg, err := codur.ParseConfig([]byte("mcp_servers:\n  guarded: {" + entry + "}\n"))
			require.NoError(t, err)
			ts, closeMCP, err := cfg.MCPTools(t.Context(), t.TempDir())
			if !tc.ok {
				require.ErrorContains(t, err, "guarded")
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, closeMCP()) })
			require.NotEmpty(t, ts)
		})
	}
	_, err := codur.ParseConfig([]byte("mcp_servers:\n  local: {command: srv, headers: {A: b}}\n"))
	require.ErrorContains(t, err, "headers need a url")
}

func TestMCPServerThatFailsIsNamedAndTheOthersToolsRemain(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "shouter", Version: "v1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "shout", Description: "Upper-case a text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in shoutIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "LOUD " + in.Text}}}, nil, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	// "mute" reads the handshake and never answers: its connect time
	// limit ends it.
	cfg, err := codur.ParseConfig([]byte("mcp_servers:\n  loud: {url: \"" + srv.URL + "\"}\n" +
		"  mute: {command: sh, args: [\"-c\", \"cat > /dev/null\"], connect_timeout: 300ms}\n" +
		"  gone: {command: /nonexistent/mcp-server}\n"))
	require.NoError(t, err)
	ts, closeMCP, err := cfg.MCPTools(t.Context(), t.TempDir())
	var partial *codur.MCPServersError
	require.ErrorAs(t, err, &partial)
	require.Len(t, partial.Failed, 2)
	var te *mcp.TimeoutError
	require.ErrorAs(t, partial.Failed["mute"], &te)
	require.Equal(t, 300*time.Millisecond, te.Limit)
	require.ErrorIs(t, partial.Failed["gone"], os.ErrNotExist)
	require.ErrorContains(t, err, "MCP server mute: ")
	require.ErrorContains(t, err, "(the run goes on without its tools)")
	var names []string
	for _, tl := range ts {
		names = append(names, tl.Name())
	}
	require.ElementsMatch(t, []string{"loud__shout", "list_mcp_tools", "call_mcp_tool", "read_mcp_resource"}, names)
	require.NoError(t, closeMCP())
}
