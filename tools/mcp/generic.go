package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentgraph/agentgraph/tools"
)

// Names of the generic tools.
const (
	ListToolsName    = "list_mcp_tools"
	CallToolName     = "call_mcp_tool"
	ReadResourceName = "read_mcp_resource"
)

// GenericTools returns three tools that reach the MCP servers of sessions
// through fixed names, for agents that discover servers' tools at run time
// rather than having each one as a tool of their own:
//
//   - list_mcp_tools {server?}: the servers' tools (name, description,
//     input schema) and resources, as JSON;
//   - call_mcp_tool {server?, tool, arguments?}: calls a tool, with the
//     result and errors of [Session.CallTool];
//   - read_mcp_resource {server?, uri}: reads a resource, as
//     [Session.ReadResource].
//
// server names a session ([Session.Name]); it may be left out when there is
// only one. An unknown server or missing argument is a *tools.ArgumentError.
// It fails if sessions is empty, holds nil, or two sessions share a name.
func GenericTools(sessions ...*Session) ([]tools.Tool, error) {
	if len(sessions) == 0 {
		return nil, errors.New("mcp: GenericTools needs at least one session")
	}
	byName := make(map[string]*Session, len(sessions))
	for i, s := range sessions {
		if s == nil {
			return nil, fmt.Errorf("mcp: GenericTools: session %d is nil", i)
		}
		if _, dup := byName[s.Name()]; dup {
			return nil, fmt.Errorf("mcp: GenericTools: two sessions are named %q (use WithName)", s.Name())
		}
		byName[s.Name()] = s
	}
	g := &generic{sessions: slices.Clone(sessions), byName: byName}
	return []tools.Tool{
		&genericTool[listArgs]{name: ListToolsName, desc: listDesc, schema: listSchema, fn: g.list},
		&genericTool[callArgs]{name: CallToolName, desc: callDesc, schema: callSchema, fn: g.call},
		&genericTool[readArgs]{name: ReadResourceName, desc: readDesc, schema: readSchema, fn: g.read},
	}, nil
}

const (
	listDesc = "List the tools and resources of the connected MCP servers: " +
		"each tool's name, description and JSON input schema, and each resource's URI. " +
		"Call a tool with call_mcp_tool and read a resource with read_mcp_resource."
	callDesc = "Call a tool of an MCP server with JSON arguments that follow the tool's input schema " +
		"(see list_mcp_tools), and return its result."
	readDesc = "Read a resource of an MCP server by its URI (see list_mcp_tools) and return its contents."
)

var (
	listSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"server":{"type":"string","description":"Name of the MCP server; leave out to list every server"}},` +
		`"additionalProperties":false}`)
	callSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"server":{"type":"string","description":"Name of the MCP server (optional when there is only one)"},` +
		`"tool":{"type":"string","description":"Name of the tool"},` +
		`"arguments":{"type":"object","description":"Arguments of the tool, following its input schema"}},` +
		`"required":["tool"],"additionalProperties":false}`)
	readSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"server":{"type":"string","description":"Name of the MCP server (optional when there is only one)"},` +
		`"uri":{"type":"string","description":"URI of the resource"}},` +
		`"required":["uri"],"additionalProperties":false}`)
)

type listArgs struct {
	Server string `json:"server"`
}

type callArgs struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

type readArgs struct {
	Server string `json:"server"`
	URI    string `json:"uri"`
}

type generic struct {
	sessions []*Session
	byName   map[string]*Session
}

// session picks the session named name ("" when there is only one).
func (g *generic) session(tool, name string) (*Session, error) {
	if name == "" {
		if len(g.sessions) == 1 {
			return g.sessions[0], nil
		}
		return nil, &tools.ArgumentError{Tool: tool, Err: fmt.Errorf("server is required: one of %s", g.names())}
	}
	s, ok := g.byName[name]
	if !ok {
		return nil, &tools.ArgumentError{Tool: tool, Err: fmt.Errorf("unknown server %q: one of %s", name, g.names())}
	}
	return s, nil
}

func (g *generic) names() string {
	names := make([]string, len(g.sessions))
	for i, s := range g.sessions {
		names[i] = s.Name()
	}
	return strings.Join(names, ", ")
}

type serverListing struct {
	Server       string         `json:"server"`
	Instructions string         `json:"instructions,omitempty"`
	Tools        []ToolInfo     `json:"tools"`
	Resources    []ResourceInfo `json:"resources,omitempty"`
}

func (g *generic) list(ctx context.Context, a listArgs) (string, error) {
	sessions := g.sessions
	if a.Server != "" {
		s, err := g.session(ListToolsName, a.Server)
		if err != nil {
			return "", err
		}
		sessions = []*Session{s}
	}
	parts := make([]string, 0, len(sessions))
	for _, s := range sessions {
		ts, err := s.ListTools(ctx)
		if err != nil {
			return "", err
		}
		if ts == nil {
			ts = []ToolInfo{}
		}
		rs, err := s.ListResources(ctx)
		if err != nil {
			return "", err
		}
		b, err := json.MarshalIndent(serverListing{Server: s.Name(), Instructions: s.Instructions(), Tools: ts, Resources: rs}, "  ", "  ")
		if err != nil {
			return "", err
		}
		// Each server's listing is cut to its own output limit
		// (WithOutputLimit), so that one with many tools cannot push
		// the others out of the answer.
		parts = append(parts, tools.Truncate(string(b), s.limit))
	}
	if len(parts) == 0 {
		return "[]", nil
	}
	return "[\n  " + strings.Join(parts, ",\n  ") + "\n]", nil
}

func (g *generic) call(ctx context.Context, a callArgs) (string, error) {
	if a.Tool == "" {
		return "", &tools.ArgumentError{Tool: CallToolName, Err: errors.New("tool must not be empty")}
	}
	s, err := g.session(CallToolName, a.Server)
	if err != nil {
		return "", err
	}
	return s.callTool(ctx, CallToolName, a.Tool, a.Arguments)
}

func (g *generic) read(ctx context.Context, a readArgs) (string, error) {
	if a.URI == "" {
		return "", &tools.ArgumentError{Tool: ReadResourceName, Err: errors.New("uri must not be empty")}
	}
	s, err := g.session(ReadResourceName, a.Server)
	if err != nil {
		return "", err
	}
	return s.ReadResource(ctx, a.URI)
}

// genericTool is a tool with a fixed schema whose arguments are decoded
// strictly into Args.
type genericTool[Args any] struct {
	name, desc string
	schema     json.RawMessage
	fn         func(context.Context, Args) (string, error)
}

func (t *genericTool[Args]) Name() string                { return t.name }
func (t *genericTool[Args]) Description() string         { return t.desc }
func (t *genericTool[Args]) Parameters() json.RawMessage { return bytes.Clone(t.schema) }

func (t *genericTool[Args]) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var args Args
	data := bytes.TrimSpace(raw)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		data = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		return "", &tools.ArgumentError{Tool: t.name, Err: err}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", &tools.ArgumentError{Tool: t.name, Err: errors.New("unexpected data after the arguments object")}
	}
	return t.fn(ctx, args)
}
