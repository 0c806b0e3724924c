package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgraph/agentgraph/tools/mcp"
)

func ExampleConnectHTTP() {
	// An MCP server with one tool, served over streamable HTTP. A real one
	// would run elsewhere; ConnectStdio starts one as a subprocess instead,
	// e.g. mcp.ConnectStdio(ctx, "npx", []string{"-y", "@modelcontextprotocol/server-everything"}).
	type greetIn struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	server := sdk.NewServer(&sdk.Implementation{Name: "greeter", Version: "v1"}, nil)
	sdk.AddTool(server, &sdk.Tool{Name: "greet", Description: "Greet someone."},
		func(ctx context.Context, req *sdk.CallToolRequest, in greetIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	defer hs.Close()

	ctx := context.Background()
	session, err := mcp.ConnectHTTP(ctx, hs.URL, mcp.WithToolPrefix("greeter__"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer session.Close()

	// The server's tools as tools.Tool, ready for agent.NewReAct & co.
	ts, err := session.Tools(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range ts {
		fmt.Printf("%s: %s %s\n", t.Name(), t.Description(), t.Parameters())
		out, err := t.Call(ctx, json.RawMessage(`{"name":"Ada"}`))
		fmt.Println(out, err)
	}
	// Output:
	// greeter__greet: Greet someone. {"additionalProperties":false,"properties":{"name":{"description":"who to greet","type":"string"}},"required":["name"],"type":"object"}
	// Hello, Ada! <nil>
}
