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
// workspace confining file access to that root, and the root's Go call
// graph, loaded on first use (it takes a go list and an SSA build).
type codebase struct {
	ix *codeindex.Index
	ws *tools.Workspace

	cgOnce sync.Once
	cg     *codeindex.CallGraph
	cgErr  error
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

// callGraph returns the call graph of the root, loading it on first use.
func (c *codebase) callGraph(ctx context.Context) (*codeindex.CallGraph, error) {
	c.cgOnce.Do(func() {
		c.cg, c.cgErr = codeindex.LoadCallGraph(ctx, c.ix.Root())
	})
	return c.cg, c.cgErr
}

// searchArgs are the arguments of search_codebase.
type searchArgs struct {
	Query string `json:"query" jsonschema:"required" jsonschema_description:"What to look for: words, identifiers or a question."`
	Mode  string `json:"mode,omitempty" jsonschema:"enum=hybrid,enum=bm25,enum=vector" jsonschema_description:"Ranking: hybrid (default), bm25 (keywords) or vector."`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50" jsonschema_description:"Hits to return at most. Default: 10."`
}

// callArgs are the arguments of get_callers and get_callees.
type callArgs struct {
	Name string `json:"name" jsonschema:"required" jsonschema_description:"A Go function: a symbol as search_codebase prints it (pkg.Func or pkg.(*T).Method) or a bare function name."`
}

// agentTools returns the tools of the agent: search_codebase, read_file,
// list_directory, get_callers and get_callees. read_file and
// list_directory are the tools package's file_read and file_list under
// the names the agent's prompts use, with their workspace confinement.
func (c *codebase) agentTools() []tools.Tool {
	return []tools.Tool{
		tools.New("search_codebase",
			"Search the indexed code base. Returns the best matching code chunks, one a line: "+
				"path:start-end, the kind and symbol of the definition, and the score. "+
				"Read a hit with read_file and its start_line/end_line.",
			c.search),
		renamed[tools.FileReadArgs]("read_file", tools.FileRead(c.ws)),
		renamed[tools.FileListArgs]("list_directory", tools.FileList(c.ws)),
		tools.New("get_callers",
			"List the call sites of a Go function: file:line, the function that contains the call, and the function called.",
			func(ctx context.Context, a callArgs) (string, error) { return c.calls(ctx, "callers", a.Name) }),
		tools.New("get_callees",
			"List the calls a Go function makes: file:line of each call and the function called.",
			func(ctx context.Context, a callArgs) (string, error) { return c.calls(ctx, "callees", a.Name) }),
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
	cg, err := c.callGraph(ctx)
	if err != nil {
		return "", fmt.Errorf("no Go call graph for this code base: %w", err)
	}
	calls, err := queryCalls(cg, cmd, name)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(formatCalls(cmd, name, calls), "\n"), nil
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
