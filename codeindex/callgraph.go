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
	failed    *LoadError // packages left out, nil when every package loaded
}

// A Call is one call site.
type Call struct {
	Path    string `json:"path"`    // slash-separated, relative to the root
	Line    int    `json:"line"`    // 1-based line of the call
	Caller  string `json:"caller"`  // the named function enclosing the call site
	Callee  string `json:"callee"`  // the function called
	Dynamic bool   `json:"dynamic"` // resolved through an interface or function value
	// Unresolved marks a dynamic call that no function of the loaded
	// packages can be the target of: a method of an interface none of them
	// implements ("io.Writer.Write"), or a function value of a signature no
	// function of theirs has. Callee names the interface method or the
	// value ("func value f").
	Unresolved bool `json:"unresolved,omitempty"`
}

// A LoadError reports Go packages that could not be loaded or type-checked.
type LoadError struct {
	// Packages are the import paths of the packages with errors, sorted.
	Packages []string
	// Errors are their errors.
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
	in := ""
	if len(e.Packages) > 0 {
		in = " (in " + strings.Join(e.Packages, ", ") + ")"
	}
	return "codeindex: load packages: " + strings.Join(msgs, "; ") + more + in
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
//
// Packages that do not load or type-check are left out, and the graph is
// built from the others: [CallGraph.LoadErrors] says which were left out
// (their calls, and calls into them, are missing). LoadCallGraph fails
// with a [*LoadError] only when none of the packages matching patterns
// loaded.
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
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("codeindex: load packages: %w", err)
	}
	var failed LoadError
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if len(p.Errors) > 0 || p.IllTyped {
			failed.Packages = append(failed.Packages, p.PkgPath)
			failed.Errors = append(failed.Errors, p.Errors...)
		}
	})
	slices.Sort(failed.Packages)
	// ssautil builds every package that type-checked and skips the others.
	prog, built := ssautil.AllPackages(pkgs, ssa.InstantiateGenerics)
	if len(failed.Packages) > 0 && !slices.ContainsFunc(built, func(p *ssa.Package) bool { return p != nil }) {
		return nil, &failed
	}
	prog.Build()
	g := &CallGraph{
		root:      root,
		cg:        cha.CallGraph(prog),
		bySymbol:  map[string][]*ssa.Function{},
		byString:  map[string][]*ssa.Function{},
		byName:    map[string][]*ssa.Function{},
		instances: map[*ssa.Function][]*ssa.Function{},
	}
	if len(failed.Packages) > 0 {
		g.failed = &failed
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

// LoadErrors reports the packages left out of the graph because they did
// not load or type-check, or returns nil when none was.
func (g *CallGraph) LoadErrors() *LoadError { return g.failed }

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
			resolved := map[ssa.CallInstruction]bool{}
			for _, e := range g.outEdges(body) {
				resolved[e.Site] = true
				if callee := e.Callee.Func; callee.Parent() != nil && enclosing(callee) == fn {
					continue // a call of its own function literal
				}
				if c, ok := g.call(e, unwrap(e.Callee.Func)); ok {
					calls = append(calls, c)
				}
			}
			calls = append(calls, g.unresolved(body, resolved)...)
		}
	}
	return sortCalls(calls), nil
}

// unresolved returns the dynamic calls of body that have no edge in the
// graph (none of resolved): CHA found no function they could call.
func (g *CallGraph) unresolved(body *ssa.Function, resolved map[ssa.CallInstruction]bool) []Call {
	var out []Call
	for _, b := range body.Blocks {
		for _, instr := range b.Instrs {
			site, ok := instr.(ssa.CallInstruction)
			if !ok || resolved[site] || !site.Pos().IsValid() {
				continue
			}
			common := site.Common()
			if common.StaticCallee() != nil {
				continue
			}
			if _, builtin := common.Value.(*ssa.Builtin); builtin {
				continue
			}
			pos := body.Prog.Fset.Position(site.Pos())
			rel, err := filepath.Rel(g.root, pos.Filename)
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				continue
			}
			out = append(out, Call{
				Path:       filepath.ToSlash(rel),
				Line:       pos.Line,
				Caller:     funcSymbol(enclosing(body)),
				Callee:     dynamicCallee(common),
				Dynamic:    true,
				Unresolved: true,
			})
		}
	}
	return out
}

// dynamicCallee names what a dynamic call calls: "pkg.Iface.Method" for a
// method of a named interface, "interface{...}.Method" for an unnamed one,
// "func value f" for a function value.
func dynamicCallee(c *ssa.CallCommon) string {
	if c.IsInvoke() {
		t := c.Value.Type()
		if n, ok := t.(*types.Named); ok {
			if p := n.Obj().Pkg(); p != nil {
				return p.Name() + "." + n.Obj().Name() + "." + c.Method.Name()
			}
			return n.Obj().Name() + "." + c.Method.Name()
		}
		return types.TypeString(t, func(p *types.Package) string { return p.Name() }) + "." + c.Method.Name()
	}
	return "func value " + c.Value.Name()
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
