package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/agentgraph/agentgraph/codeindex"
)

// callGraphs are the call graphs of a directory: the typed one of its Go
// packages (codeindex.CallGraph) and the approximate ones of its Python
// and its JavaScript/TypeScript files, resolved by name
// (codeindex.NameCallGraph).
type callGraphs struct {
	golang *codeindex.CallGraph // nil when the directory has no Go file or goErr is set
	goErr  error                // why the Go packages could not be loaded
	byName []*codeindex.NameCallGraph
}

// loadCallGraphs builds the call graphs of dir: the Go one when dir holds a
// Go file (outside the folders the index skips), the Python one and the
// JavaScript/TypeScript one. A failure to load the Go packages is kept, not
// returned: the other graphs still answer, and queries that find nothing
// report it.
func loadCallGraphs(ctx context.Context, dir string) (*callGraphs, error) {
	var g callGraphs
	hasGo, err := hasGoFile(dir)
	if err != nil {
		return nil, err
	}
	if hasGo {
		g.golang, g.goErr = codeindex.LoadCallGraph(ctx, dir)
		if g.goErr != nil && ctx.Err() != nil {
			return nil, g.goErr
		}
	}
	for _, build := range []func(context.Context, string) (*codeindex.NameCallGraph, error){codeindex.PythonCalls, codeindex.JSCalls} {
		ng, err := build(ctx, dir)
		if err != nil {
			return nil, err
		}
		g.byName = append(g.byName, ng)
	}
	return &g, nil
}

// hasGoFile reports whether a .go file lies under dir, outside hidden
// folders and the folders the index skips (vendor, testdata, node_modules).
func hasGoFile(dir string) (bool, error) {
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != dir && (strings.HasPrefix(name, ".") || name == "vendor" || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".go") {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("look for Go files: %w", err)
	}
	return found, nil
}

// A callSite is one call of a graph: the Go graph's calls are exact up to
// dynamic dispatch, the Python and JavaScript graphs' are Approximate.
type callSite struct {
	codeindex.Call
	// Approximate marks a Python or JavaScript call, resolved by name
	// alone.
	Approximate bool `json:"approximate"`
	// Unresolved marks such a call of nothing defined under the root (a
	// builtin, a library function): Callee is the called expression. For Go
	// it is codeindex.Call's own field: a dynamic call no loaded function
	// can be the target of.
	Unresolved bool `json:"unresolved,omitempty"`
}

// query returns the callers or the callees (by cmd) of name in both
// graphs, the Go calls first. It fails with a *codeindex.UnknownFunctionError
// when neither graph knows name, wrapped with the reason when the Go
// packages could not be loaded.
func (g *callGraphs) query(cmd, name string) ([]callSite, error) {
	var sites []callSite
	known := false
	if g.golang != nil {
		calls, err := g.golang.Callers(name)
		if cmd == "callees" {
			calls, err = g.golang.Callees(name)
		}
		if err != nil && !isUnknown(err) {
			return nil, err
		}
		known = known || err == nil
		for _, c := range calls {
			sites = append(sites, callSite{Call: c, Unresolved: c.Unresolved})
		}
	}
	for _, ng := range g.byName {
		calls, err := ng.Callers(name)
		if cmd == "callees" {
			calls, err = ng.Callees(name)
		}
		if err != nil && !isUnknown(err) {
			return nil, err
		}
		known = known || err == nil
		for _, c := range calls {
			sites = append(sites, callSite{Call: c.Call, Approximate: c.Approximate, Unresolved: !c.Resolved})
		}
	}
	if known {
		return sites, nil
	}
	unknown := &codeindex.UnknownFunctionError{Name: name}
	if g.goErr != nil {
		return nil, fmt.Errorf("%w in the Python and JavaScript files, and the Go packages could not be loaded: %w", unknown, g.goErr)
	}
	if le := g.goLoadErrors(); le != nil {
		return nil, fmt.Errorf("%w; some Go packages could not be loaded and are left out of the call graph: %w", unknown, le)
	}
	return nil, unknown
}

// goLoadErrors returns the Go packages left out of a partial Go graph, or
// nil.
func (g *callGraphs) goLoadErrors() *codeindex.LoadError {
	if g.golang == nil {
		return nil
	}
	return g.golang.LoadErrors()
}

// note says which Go packages the answer could not look into, or is "".
func (g *callGraphs) note() string {
	le := g.goLoadErrors()
	if le == nil {
		return ""
	}
	return fmt.Sprintf("note: the Go call graph is partial: %d package(s) did not load and are left out, so calls in or into them are missing: %s\n",
		len(le.Packages), strings.Join(le.Packages, ", "))
}

// isUnknown reports whether err is a *codeindex.UnknownFunctionError.
func isUnknown(err error) bool {
	_, ok := errors.AsType[*codeindex.UnknownFunctionError](err)
	return ok
}

// formatCalls renders calls one a line, "path:line  in caller: calls
// callee", with the Python calls marked approximate, or says there are
// none.
func formatCalls(cmd, name string, calls []callSite) string {
	if len(calls) == 0 {
		if cmd == "callees" {
			return fmt.Sprintf("%s calls no function\n", name)
		}
		return fmt.Sprintf("no calls of %s under the indexed root\n", name)
	}
	var b []byte
	for _, c := range calls {
		var notes []string
		if c.Dynamic {
			notes = append(notes, "dynamic: through an interface, a function value or an attribute")
		}
		if c.Approximate {
			notes = append(notes, "approximate: resolved by name")
		}
		switch {
		case c.Unresolved && c.Approximate:
			notes = append(notes, "not defined under the root")
		case c.Unresolved:
			notes = append(notes, "unresolved: no implementation or matching function in the loaded packages")
		}
		note := ""
		if len(notes) > 0 {
			note = "  (" + strings.Join(notes, "; ") + ")"
		}
		b = fmt.Appendf(b, "%s:%d  in %s: calls %s%s\n", c.Path, c.Line, c.Caller, c.Callee, note)
	}
	return string(b)
}
