package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/agentgraph/agentgraph/codeindex"
	"github.com/agentgraph/agentgraph/tools"
)

// codebase is what the agent's tools stand on: the index of a root, the
// workspace confining file access to that root, and the root's call
// graphs, loaded on first use (the Go one takes a go list and an SSA
// build).
type codebase struct {
	ix *codeindex.Index
	ws *tools.Workspace

	cgMu sync.Mutex
	cg   *callGraphs
}

// newCodebase returns the codebase of the open index ix; file access is
// confined to ix's root.
func newCodebase(ix *codeindex.Index) (*codebase, error) {
	ws, err := tools.NewWorkspace(ix.Root())
	if err != nil {
		return nil, err
	}
	return &codebase{ix: ix, ws: ws}, nil
}

// callGraphs returns the call graphs of the root, loading them on first
// use. A load that fails is tried again by the next call: the failure
// may be the caller's cancelled context.
func (c *codebase) callGraphs(ctx context.Context) (*callGraphs, error) {
	c.cgMu.Lock()
	defer c.cgMu.Unlock()
	if c.cg == nil {
		cg, err := loadCallGraphs(ctx, c.ix.Root())
		if err != nil {
			return nil, err
		}
		c.cg = cg
	}
	return c.cg, nil
}

// searchArgs are the arguments of search_codebase.
type searchArgs struct {
	Query string `json:"query" jsonschema:"required" jsonschema_description:"What to look for: words, identifiers or a question."`
	Mode  string `json:"mode,omitempty" jsonschema:"enum=hybrid,enum=bm25,enum=vector" jsonschema_description:"Ranking: hybrid (default), bm25 (keywords) or vector."`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50" jsonschema_description:"Hits to return at most. Default: 10."`
}

// callArgs are the arguments of get_callers and get_callees.
type callArgs struct {
	Name string `json:"name" jsonschema:"required" jsonschema_description:"A function: a symbol as search_codebase prints it (Go: pkg.Func or pkg.(*T).Method; Python, JavaScript, TypeScript: module.func or module.Class.method) or a bare function name."`
}

// maxToolOutput bounds the output of each tool the agent is given, in
// characters: every result goes into the step's finding, and from there
// into every later prompt of the run.
const maxToolOutput = 24_000

// agentTools returns the tools of the agent: search_codebase, read_file,
// list_directory, get_callers and get_callees, each output cut to
// maxToolOutput characters. read_file and list_directory are the tools
// package's file_read and file_list under the names the agent's prompts
// use, with their workspace confinement.
func (c *codebase) agentTools() []tools.Tool {
	return []tools.Tool{
		capped(tools.New("search_codebase",
			"Search the indexed code base. Returns the best matching code chunks, one a line: "+
				"path:start-end, the kind and symbol of the definition, and the score. "+
				"Read a hit with read_file and its start_line/end_line.",
			c.search), maxToolOutput),
		capped(renamed[tools.FileReadArgs]("read_file", tools.FileRead(c.ws)), maxToolOutput),
		capped(renamed[tools.FileListArgs]("list_directory", tools.FileList(c.ws)), maxToolOutput),
		capped(tools.New("get_callers",
			"List the call sites of a function: file:line, the function that contains the call, and the function called. "+
				"Go calls come from the type-checked call graph; Python and JavaScript calls are resolved by name and marked approximate.",
			func(ctx context.Context, a callArgs) (string, error) { return c.calls(ctx, "callers", a.Name) }), maxToolOutput),
		capped(tools.New("get_callees",
			"List the calls a function makes: file:line of each call and the function called. "+
				"Go calls come from the type-checked call graph; Python and JavaScript calls are resolved by name and marked approximate.",
			func(ctx context.Context, a callArgs) (string, error) { return c.calls(ctx, "callees", a.Name) }), maxToolOutput),
	}
}

// search is search_codebase.
func (c *codebase) search(ctx context.Context, a searchArgs) (string, error) {
	opts := []codeindex.SearchOption{codeindex.WithLimit(10)}
	if a.Limit > 0 {
		opts[0] = codeindex.WithLimit(min(a.Limit, 50))
	}
	if a.Mode != "" {
		m, err := codeindex.ParseMode(a.Mode)
		if err != nil {
			return "", err
		}
		opts = append(opts, codeindex.WithMode(m))
	}
	hits, err := c.ix.Search(ctx, a.Query, opts...)
	if err != nil {
		return "", err
	}
	if len(hits) == 0 {
		return fmt.Sprintf("no hits for %q", a.Query), nil
	}
	return strings.TrimSuffix(formatHits(hits), "\n"), nil
}

// calls is get_callers (cmd "callers") and get_callees (cmd "callees").
func (c *codebase) calls(ctx context.Context, cmd, name string) (string, error) {
	cg, err := c.callGraphs(ctx)
	if err != nil {
		return "", fmt.Errorf("no call graph for this code base: %w", err)
	}
	calls, err := cg.query(cmd, name)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(formatCalls(cmd, name, calls)+cg.note(), "\n"), nil
}

// renamed returns t under the name name, with t's description and
// arguments.
func renamed[Args any](name string, t tools.Tool) tools.Tool {
	return tools.New(name, t.Description(), func(ctx context.Context, a Args) (string, error) {
		raw, err := json.Marshal(a)
		if err != nil {
			return "", err
		}
		return t.Call(ctx, raw)
	})
}

// cappedTool is a tool whose output is cut to max characters.
type cappedTool struct {
	tools.Tool
	max int
}

// capped returns t with its output cut to at most max characters, the
// way the tools package cuts its own (tools.Truncate: the head and the
// tail around a line saying how many characters were left out).
func capped(t tools.Tool, max int) tools.Tool { return cappedTool{Tool: t, max: max} }

// Description is the tool's, with the limit.
func (t cappedTool) Description() string {
	return fmt.Sprintf("%s Output over %d characters is cut: its head and tail are kept, around a line saying how much was left out.",
		t.Tool.Description(), t.max)
}

// Call calls the tool and cuts its output.
func (t cappedTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	out, err := t.Tool.Call(ctx, args)
	return tools.Truncate(out, t.max), err
}
