package codeindex

import (
	"cmp"
	"context"
	"fmt"
	"go/types"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/callgraph/cha"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

// A CallGraph answers who calls a Go function and what it calls, for the Go
// packages under a root. It is built with class hierarchy analysis (CHA,
// golang.org/x/tools/go/callgraph/cha): a call through an interface or a
// function value leads to every function of matching signature that could
// be its target. CHA was chosen because it is sound — for "who could call
// X" an agent would rather see an extra caller than miss one — needs no
// program roots (RTA does, which a library has none of) and is cheap (0.2 s
// for net/http and its dependencies, against about 0.9 s for VTA). Calls
// that CHA resolved through dispatch are marked [Call].Dynamic, so the
// over-approximation is visible. A CallGraph is immutable and safe for
// concurrent use.
type CallGraph struct {
	root      string
	cg        *callgraph.Graph
	bySymbol  map[string][]*ssa.Function // "pkg.(*T).M"
	byString  map[string][]*ssa.Function // "(*example.com/pkg.T).M"
	byName    map[string][]*ssa.Function // "M"
	instances map[*ssa.Function][]*ssa.Function
}

// A Call is one call site.
type Call struct {
	Path    string `json:"path"`    // slash-separated, relative to the root
	Line    int    `json:"line"`    // 1-based line of the call
	Caller  string `json:"caller"`  // the named function enclosing the call site
	Callee  string `json:"callee"`  // the function called
	Dynamic bool   `json:"dynamic"` // resolved through an interface or function value
}

// A LoadError reports Go packages that could not be loaded or type-checked.
type LoadError struct {
	Errors []packages.Error
}

func (e *LoadError) Error() string {
	msgs := make([]string, 0, min(len(e.Errors), 3))
	for _, pe := range e.Errors[:min(len(e.Errors), 3)] {
		msgs = append(msgs, pe.Error())
	}
	more := ""
	if len(e.Errors) > 3 {
		more = fmt.Sprintf(" (and %d more)", len(e.Errors)-3)
	}
	return "codeindex: load packages: " + strings.Join(msgs, "; ") + more
}

// An UnknownFunctionError reports a name that matches no function.
type UnknownFunctionError struct {
	Name string
}

func (e *UnknownFunctionError) Error() string {
	return fmt.Sprintf("codeindex: no function named %q", e.Name)
}

// LoadCallGraph loads the Go packages matching patterns ("./..." if none) in
// the module at root, with the go command, and builds their call graph. Load
// and build take about a second per hundred packages of dependencies.
func LoadCallGraph(ctx context.Context, root string, patterns ...string) (*CallGraph, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("codeindex: load packages: %w", err)
	}
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	cfg := &packages.Config{Context: ctx, Dir: root, Mode: packages.LoadAllSyntax}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, fmt.Errorf("codeindex: load packages: %w", err)
	}
	var errs []packages.Error
	packages.Visit(pkgs, nil, func(p *packages.Package) { errs = append(errs, p.Errors...) })
	if len(errs) > 0 {
		return nil, &LoadError{Errors: errs}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("codeindex: load packages: %w", err)
	}
	prog, _ := ssautil.AllPackages(pkgs, ssa.InstantiateGenerics)
	prog.Build()
	g := &CallGraph{
		root:      root,
		cg:        cha.CallGraph(prog),
		bySymbol:  map[string][]*ssa.Function{},
		byString:  map[string][]*ssa.Function{},
		byName:    map[string][]*ssa.Function{},
		instances: map[*ssa.Function][]*ssa.Function{},
	}
	for fn := range g.cg.Nodes {
		if fn == nil {
			continue
		}
		if o := fn.Origin(); o != nil {
			g.instances[o] = append(g.instances[o], fn)
			continue
		}
		if fn.Pkg == nil || fn.Synthetic != "" || fn.Parent() != nil {
			continue
		}
		g.bySymbol[funcSymbol(fn)] = append(g.bySymbol[funcSymbol(fn)], fn)
		g.byString[fn.String()] = append(g.byString[fn.String()], fn)
		g.byName[fn.Name()] = append(g.byName[fn.Name()], fn)
	}
	return g, nil
}

// lookup resolves a name: a symbol as the index writes it ("pkg.(*T).M"),
// else a full SSA name ("(*example.com/pkg.T).M"), else a bare name ("M",
// every function or method so named).
func (g *CallGraph) lookup(name string) ([]*ssa.Function, error) {
	for _, m := range []map[string][]*ssa.Function{g.bySymbol, g.byString, g.byName} {
		if fns := m[name]; len(fns) > 0 {
			return fns, nil
		}
	}
	return nil, &UnknownFunctionError{Name: name}
}

// Callers returns the call sites, in files under the root, of the functions
// name denotes (see lookup rules in [CallGraph.Callees]), sorted by file and
// line. A call from inside a function literal is reported with the named
// function that encloses it.
func (g *CallGraph) Callers(name string) ([]Call, error) {
	fns, err := g.lookup(name)
	if err != nil {
		return nil, err
	}
	var calls []Call
	for _, fn := range fns {
		for _, target := range append([]*ssa.Function{fn}, g.instances[fn]...) {
			for _, e := range g.inEdges(target) {
				if c, ok := g.call(e, fn); ok {
					calls = append(calls, c)
				}
			}
		}
	}
	return sortCalls(calls), nil
}

// Callees returns the calls made by the functions name denotes, function
// literals inside them included, sorted by file and line. name is a symbol
// as the index writes it ("pkg.Func", "pkg.(*T).M"), a full SSA name
// ("(*example.com/pkg.T).M") or a bare function or method name.
func (g *CallGraph) Callees(name string) ([]Call, error) {
	fns, err := g.lookup(name)
	if err != nil {
		return nil, err
	}
	var calls []Call
	for _, fn := range fns {
		bodies := append([]*ssa.Function{fn}, g.instances[fn]...)
		for i := 0; i < len(bodies); i++ {
			bodies = append(bodies, bodies[i].AnonFuncs...)
		}
		for _, body := range bodies {
			for _, e := range g.outEdges(body) {
				if callee := e.Callee.Func; callee.Parent() != nil && enclosing(callee) == fn {
					continue // a call of its own function literal
				}
				if c, ok := g.call(e, unwrap(e.Callee.Func)); ok {
					calls = append(calls, c)
				}
			}
		}
	}
	return sortCalls(calls), nil
}

// inEdges returns the edges into fn, looking through synthetic wrappers
// (such as the (*T).M wrapper of a value method T.M) to their callers.
func (g *CallGraph) inEdges(fn *ssa.Function) []*callgraph.Edge {
	var out []*callgraph.Edge
	seen := map[*ssa.Function]bool{}
	var visit func(*ssa.Function)
	visit = func(fn *ssa.Function) {
		if seen[fn] {
			return
		}
		seen[fn] = true
		n := g.cg.Nodes[fn]
		if n == nil {
			return
		}
		for _, e := range n.In {
			if isWrapper(e.Caller.Func) {
				visit(e.Caller.Func)
				continue
			}
			out = append(out, e)
		}
	}
	visit(fn)
	return out
}

// outEdges returns the edges out of fn, replacing a synthetic wrapper callee
// by the edges of the wrapper, whose callee is the real method.
func (g *CallGraph) outEdges(fn *ssa.Function) []*callgraph.Edge {
	n := g.cg.Nodes[fn]
	if n == nil {
		return nil
	}
	var out []*callgraph.Edge
	for _, e := range n.Out {
		if isWrapper(e.Callee.Func) {
			for _, inner := range g.outEdges(e.Callee.Func) {
				out = append(out, &callgraph.Edge{Caller: e.Caller, Site: e.Site, Callee: inner.Callee})
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

func isWrapper(fn *ssa.Function) bool {
	return fn.Synthetic != "" && fn.Origin() == nil && strings.Contains(fn.Synthetic, "wrapper")
}

// call turns an edge into a Call, naming the callee after callee; ok is false
// for a call site outside the root or without a position.
func (g *CallGraph) call(e *callgraph.Edge, callee *ssa.Function) (Call, bool) {
	if e.Site == nil || !e.Pos().IsValid() {
		return Call{}, false
	}
	pos := e.Caller.Func.Prog.Fset.Position(e.Pos())
	rel, err := filepath.Rel(g.root, pos.Filename)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return Call{}, false
	}
	return Call{
		Path:    filepath.ToSlash(rel),
		Line:    pos.Line,
		Caller:  funcSymbol(enclosing(e.Caller.Func)),
		Callee:  funcSymbol(unwrap(callee)),
		Dynamic: e.Site.Common().StaticCallee() == nil,
	}, true
}

// enclosing returns the named function a function literal is declared in.
func enclosing(fn *ssa.Function) *ssa.Function {
	for fn.Parent() != nil {
		fn = fn.Parent()
	}
	return fn
}

// unwrap returns the generic function an instantiation comes from.
func unwrap(fn *ssa.Function) *ssa.Function {
	if o := fn.Origin(); o != nil {
		return o
	}
	return fn
}

// funcSymbol names fn as the chunker names its declaration: "pkg.Func",
// "pkg.T.M", "pkg.(*T).M".
func funcSymbol(fn *ssa.Function) string {
	fn = unwrap(fn)
	if fn.Pkg == nil {
		return fn.String()
	}
	pkg := fn.Pkg.Pkg.Name()
	recv := fn.Signature.Recv()
	if recv == nil {
		return pkg + "." + fn.Name()
	}
	t := recv.Type()
	star := false
	if p, ok := t.(*types.Pointer); ok {
		star, t = true, p.Elem()
	}
	name := t.String()
	if n, ok := t.(*types.Named); ok {
		name = n.Obj().Name()
	}
	if star {
		name = "(*" + name + ")"
	}
	return pkg + "." + name + "." + fn.Name()
}

func sortCalls(calls []Call) []Call {
	slices.SortFunc(calls, func(a, b Call) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Caller, b.Caller), cmp.Compare(a.Callee, b.Callee))
	})
	return slices.Compact(calls)
}
