package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/tools"
	"github.com/agentgraph/agentgraph/tools/mcp"
)

// genericTools returns the generic tools over the sessions, by name.
func genericTools(t *testing.T, sessions ...*mcp.Session) map[string]tools.Tool {
	t.Helper()
	ts, err := mcp.GenericTools(sessions...)
	require.NoError(t, err)
	byName := map[string]tools.Tool{}
	for _, tool := range ts {
		byName[tool.Name()] = tool
		var schema map[string]any
		require.NoError(t, json.Unmarshal(tool.Parameters(), &schema), tool.Name())
		require.Equal(t, "object", schema["type"], tool.Name())
		require.NotEmpty(t, tool.Description(), tool.Name())
	}
	require.Len(t, byName, 3)
	return byName
}

func TestListMCPToolsListsToolsAndResources(t *testing.T) {
	stdio := connectStdio(t, mcp.WithName("local"))
	web := connectHTTP(t, newHooks(), mcp.WithName("web"))
	g := genericTools(t, stdio, web)

	out, err := g[mcp.ListToolsName].Call(context.Background(), json.RawMessage(`{}`))
	require.NoError(t, err)
	var listing []struct {
		Server       string `json:"server"`
		Instructions string `json:"instructions"`
		Tools        []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		Resources []mcp.ResourceInfo `json:"resources"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &listing))
	require.Len(t, listing, 2)
	require.Equal(t, "local", listing[0].Server)
	require.Equal(t, "web", listing[1].Server)
	for _, l := range listing {
		require.Equal(t, "Use add for sums.", l.Instructions)
		var names []string
		for _, tool := range l.Tools {
			names = append(names, tool.Name)
			if tool.Name == "add" {
				require.Equal(t, "Add two integers.", tool.Description)
				require.Contains(t, string(tool.InputSchema), `"the first addend"`)
			}
		}
		require.Contains(t, names, "add")
		want := []mcp.ResourceInfo{
			{URI: "file:///logo.png", Name: "logo", MIMEType: "image/png"},
			{URI: "file:///notes.txt", Name: "notes", MIMEType: "text/plain"},
		}
		if diff := cmp.Diff(want, l.Resources); diff != "" {
			t.Errorf("resources of %s (-want +got):\n%s", l.Server, diff)
		}
	}
	// The stdio server has tools the HTTP one lacks.
	require.Greater(t, len(listing[0].Tools), len(listing[1].Tools))

	out, err = g[mcp.ListToolsName].Call(context.Background(), json.RawMessage(`{"server":"web"}`))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(out), &listing))
	require.Len(t, listing, 1)
	require.Equal(t, "web", listing[0].Server)
}

func TestCallMCPTool(t *testing.T) {
	stdio := connectStdio(t, mcp.WithName("local"))
	web := connectHTTP(t, newHooks(), mcp.WithName("web"))
	call := genericTools(t, stdio, web)[mcp.CallToolName]

	for _, server := range []string{"local", "web"} {
		out, err := call.Call(context.Background(), json.RawMessage(`{"server":"`+server+`","tool":"add","arguments":{"a":2,"b":3}}`))
		require.NoError(t, err, server)
		require.JSONEq(t, `{"sum":5}`, out, server)
	}

	_, err := call.Call(context.Background(), json.RawMessage(`{"server":"web","tool":"fail"}`))
	var te *mcp.ToolError
	require.ErrorAs(t, err, &te)
	require.Equal(t, "disk is full", te.Error())

	_, err = call.Call(context.Background(), json.RawMessage(`{"server":"web","tool":"nope"}`))
	var rpc *mcp.RPCError
	require.ErrorAs(t, err, &rpc)
}

func TestCallMCPToolRejectsBadArguments(t *testing.T) {
	stdio := connectStdio(t, mcp.WithName("local"))
	web := connectHTTP(t, newHooks(), mcp.WithName("web"))
	call := genericTools(t, stdio, web)[mcp.CallToolName]
	for _, tc := range []struct {
		name string
		args string
	}{
		{"no server among several", `{"tool":"add","arguments":{"a":1,"b":2}}`},
		{"unknown server", `{"server":"elsewhere","tool":"add"}`},
		{"no tool", `{"server":"web"}`},
		{"unknown field", `{"server":"web","tool":"add","args":{}}`},
		{"arguments not an object", `{"server":"web","tool":"add","arguments":[1,2]}`},
		{"invalid JSON", `{"server":"web",`},
		{"not an object", `"add"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call.Call(context.Background(), json.RawMessage(tc.args))
			var ae *tools.ArgumentError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, mcp.CallToolName, ae.Tool)
		})
	}
}

func TestGenericToolsTakeTheOnlyServerByDefault(t *testing.T) {
	g := genericTools(t, connectHTTP(t, newHooks()))
	out, err := g[mcp.CallToolName].Call(context.Background(), json.RawMessage(`{"tool":"echo","arguments":{"message":"solo"}}`))
	require.NoError(t, err)
	require.Equal(t, "solo", out)
	out, err = g[mcp.ReadResourceName].Call(context.Background(), json.RawMessage(`{"uri":"file:///notes.txt"}`))
	require.NoError(t, err)
	require.Equal(t, "buy milk", out)
}

func TestReadMCPResource(t *testing.T) {
	stdio := connectStdio(t, mcp.WithName("local"))
	web := connectHTTP(t, newHooks(), mcp.WithName("web"))
	read := genericTools(t, stdio, web)[mcp.ReadResourceName]
	for _, server := range []string{"local", "web"} {
		out, err := read.Call(context.Background(), json.RawMessage(`{"server":"`+server+`","uri":"file:///notes.txt"}`))
		require.NoError(t, err, server)
		require.Equal(t, "buy milk", out, server)
	}
	_, err := read.Call(context.Background(), json.RawMessage(`{"server":"web","uri":"file:///missing"}`))
	var rpc *mcp.RPCError
	require.ErrorAs(t, err, &rpc)

	_, err = read.Call(context.Background(), json.RawMessage(`{"server":"web"}`))
	var ae *tools.ArgumentError
	require.ErrorAs(t, err, &ae)
}

func TestGenericToolsRefuseBadSessions(t *testing.T) {
	a := connectHTTP(t, newHooks())
	b := connectHTTP(t, newHooks())
	for _, tc := range []struct {
		name     string
		sessions []*mcp.Session
		want     string
	}{
		{"none", nil, "at least one session"},
		{"nil", []*mcp.Session{a, nil}, "session 1 is nil"},
		{"same name", []*mcp.Session{a, b}, `two sessions are named "testsrv"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mcp.GenericTools(tc.sessions...)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestListMCPToolsIsCutToTheServersOutputLimits(t *testing.T) {
	web := connectHTTP(t, newHooks(), mcp.WithName("web"), mcp.WithOutputLimit(300))
	g := genericTools(t, web)
	out, err := g[mcp.ListToolsName].Call(context.Background(), json.RawMessage(`{}`))
	require.NoError(t, err)
	require.Contains(t, out, "chars truncated ...]")
	require.LessOrEqual(t, len([]rune(out)), 300+len("\n[... 100000 chars truncated ...]\n")+len("[\n  \n]"))
	require.Contains(t, out, `"server": "web"`, "the listing's beginning is kept")
}

func TestAServerWithManyToolsDoesNotPushAnotherOutOfTheListing(t *testing.T) {
	hog := newTestServer(newHooks())
	for i := range 300 {
		hog.AddTool(&sdk.Tool{Name: fmt.Sprintf("hog_%d", i), Description: strings.Repeat("x", 100),
			InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{}, nil
			})
	}
	first, err := mcp.ConnectHTTP(context.Background(), startHTTP(t, hog), mcp.WithName("hog"), mcp.WithOutputLimit(2000))
	require.NoError(t, err)
	t.Cleanup(func() { _ = first.Close() })
	middle := connectHTTP(t, newHooks(), mcp.WithName("web"), mcp.WithOutputLimit(2000))
	last, err := mcp.ConnectHTTP(context.Background(), startHTTP(t, hog), mcp.WithName("hog2"), mcp.WithOutputLimit(2000))
	require.NoError(t, err)
	t.Cleanup(func() { _ = last.Close() })
	out, err := genericTools(t, first, middle, last)[mcp.ListToolsName].Call(context.Background(), json.RawMessage(`{}`))
	require.NoError(t, err)
	require.Contains(t, out, `"server": "web"`)
	require.Contains(t, out, `"name": "echo"`)
}
