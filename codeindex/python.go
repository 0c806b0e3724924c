package codeindex

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	sitter "github.com/tree-sitter/go-tree-sitter"
	python "github.com/tree-sitter/tree-sitter-python/bindings/go"
)

// The kinds of chunk that Python, JavaScript and TypeScript files have and
// Go files do not. Their functions and methods are [KindFunc] and
// [KindMethod] chunks, as in Go.
const (
	KindClass  Kind = "class"  // a Python, JavaScript or TypeScript class header: decorators, class line, docstring, attributes before the first method
	KindModule Kind = "module" // Python, JavaScript or TypeScript top-level code outside definitions: imports, statements
)

// pythonLanguage is the tree-sitter grammar of Python. A Language is
// immutable and may be shared; parsers and queries may not, so each call
// makes its own.
var pythonLanguage = sitter.NewLanguage(python.Language())

// PythonModule returns the dotted module name of the Python file at path,
// a slash-separated path relative to the indexed root: "geom/shapes.py" is
// "geom.shapes" and "geom/__init__.py" is "geom". The root is taken to be
// the import root (the folder on sys.path).
func PythonModule(path string) string {
	m := strings.TrimSuffix(filepath.ToSlash(path), ".py")
	if t := strings.TrimSuffix(m, "/__init__"); t != m {
		m = t
	}
	return strings.ReplaceAll(m, "/", ".")
}

// ChunkPython splits a Python source file with tree-sitter into one chunk
// per definition:
//
//   - each top-level function ([KindFunc]), symbol "module.func";
//   - each class ([KindClass]), symbol "module.Class", spanning its
//     decorators, class line, docstring and class attributes up to its first
//     method; a nested class is "module.Outer.Inner";
//   - each method ([KindMethod]), symbol "module.Class.method".
//
// A definition's span takes in its decorators, its docstring (which is in
// its body) and the comment lines right above it. module is [PythonModule]
// of path, so symbols read as the names Python imports ("geom.shapes.Circle.area"),
// the way Go symbols are qualified by package ("http.(*Server).Serve").
// Nested functions stay in their function's chunk. The remaining lines —
// module docstring, imports, top-level statements — form [KindModule]
// chunks with the module's symbol, one per run of consecutive lines outside
// definitions, runs longer than window lines split as [ChunkLines] splits.
// If tree-sitter finds a syntax error, ChunkPython returns a *[ParseError]
// and no chunks.
func ChunkPython(path string, src []byte, window, overlap int) ([]Chunk, error) {
	tree, err := parseTree(path, src, pythonLanguage, "python")
	if err != nil {
		return nil, err
	}
	defer tree.Close()
	root := tree.RootNode()

	lines := splitLines(src)
	covered := make([]bool, len(lines)+2)
	mod := PythonModule(path)
	var chunks []Chunk
	// add adds the chunk of definition def spanning lines s to e.
	add := func(sym string, kind Kind, def *sitter.Node, s, e int) {
		for e > s && strings.TrimSpace(lines[e-1]) == "" {
			e--
		}
		for l := s; l <= e; l++ {
			covered[l] = true
		}
		chunks = append(chunks, Chunk{
			Path: path, Symbol: sym, Kind: kind, StartLine: s, EndLine: e,
			Content: joinLines(lines, s, e),
			Head:    joinLines(lines, s, min(e, pyHeadEnd(def))),
		})
	}

	var class func(sym string, outer, def *sitter.Node)
	class = func(sym string, outer, def *sitter.Node) {
		start, end := pySpanStart(outer), pyLine(def.EndPosition())
		body := def.ChildByFieldName("body")
		headerEnd := end
		var members []func()
		for i := uint(0); body != nil && i < body.NamedChildCount(); i++ {
			o := body.NamedChild(i)
			d := pyDefinition(o)
			if d == nil {
				continue
			}
			if len(members) == 0 {
				headerEnd = pySpanStart(o) - 1
			}
			name := pyName(d, src)
			switch d.Kind() {
			case "function_definition":
				members = append(members, func() { add(sym+"."+name, KindMethod, d, pySpanStart(o), pyLine(d.EndPosition())) })
			case "class_definition":
				members = append(members, func() { class(sym+"."+name, o, d) })
			}
		}
		add(sym, KindClass, def, start, headerEnd)
		for _, m := range members {
			m()
		}
	}

	for i := uint(0); i < root.NamedChildCount(); i++ {
		o := root.NamedChild(i)
		d := pyDefinition(o)
		if d == nil {
			continue
		}
		switch d.Kind() {
		case "function_definition":
			add(mod+"."+pyName(d, src), KindFunc, d, pySpanStart(o), pyLine(d.EndPosition()))
		case "class_definition":
			class(mod+"."+pyName(d, src), o, d)
		}
	}

	chunks = append(chunks, moduleChunks(path, mod, lines, covered, window, overlap)...)
	slices.SortStableFunc(chunks, func(a, b Chunk) int { return cmp.Compare(a.StartLine, b.StartLine) })
	return chunks, nil
}

// moduleChunks returns the [KindModule] chunks of symbol mod: one per run
// of consecutive lines not covered by a definition (covered is indexed by
// 1-based line), runs longer than window lines split as [ChunkLines] splits,
// blank lines left out.
func moduleChunks(path, mod string, lines []string, covered []bool, window, overlap int) []Chunk {
	var chunks []Chunk
	for s := 1; s <= len(lines); s++ {
		if covered[s] || strings.TrimSpace(lines[s-1]) == "" {
			continue
		}
		e := s
		for e < len(lines) && !covered[e+1] {
			e++
		}
		for strings.TrimSpace(lines[e-1]) == "" {
			e--
		}
		run := ChunkLines(path, []byte(joinLines(lines, s, e)), window, overlap)
		for _, c := range run {
			c.Symbol, c.Kind = mod, KindModule
			c.StartLine, c.EndLine = c.StartLine+s-1, c.EndLine+s-1
			chunks = append(chunks, c)
		}
		s = e
	}
	return chunks
}

// pyDefinition returns the function_definition or class_definition that n is
// or decorates, or nil.
func pyDefinition(n *sitter.Node) *sitter.Node {
	if n.Kind() == "decorated_definition" {
		n = n.ChildByFieldName("definition")
		if n == nil {
			return nil
		}
	}
	if k := n.Kind(); k == "function_definition" || k == "class_definition" {
		return n
	}
	return nil
}

// pyHeadEnd returns the last line of the head of a function or class
// definition: the line of the colon that ends its def or class line(s)
// or, when the first statement of its body is a docstring, the docstring's
// last line.
func pyHeadEnd(def *sitter.Node) int {
	body := def.ChildByFieldName("body")
	if body == nil {
		return pyLine(def.EndPosition())
	}
	end := pyLine(body.StartPosition())
	if colon := body.PrevSibling(); colon != nil {
		end = pyLine(colon.EndPosition())
	}
	for i := uint(0); i < body.NamedChildCount(); i++ {
		st := body.NamedChild(i)
		if st.Kind() == "comment" {
			continue
		}
		if st.Kind() == "expression_statement" && st.NamedChildCount() == 1 {
			if k := st.NamedChild(0).Kind(); k == "string" || k == "concatenated_string" {
				end = max(end, pyLine(st.EndPosition()))
			}
		}
		break
	}
	return end
}

// pySpanStart returns the first line of a definition n (decorators included)
// together with the comment lines directly above it.
func pySpanStart(n *sitter.Node) int {
	start := pyLine(n.StartPosition())
	for p := n.PrevSibling(); p != nil && p.Kind() == "comment" && pyLine(p.EndPosition()) == start-1; p = p.PrevSibling() {
		if p.StartPosition().Column != n.StartPosition().Column {
			break
		}
		start = pyLine(p.StartPosition())
	}
	return start
}

func pyName(def *sitter.Node, src []byte) string {
	if n := def.ChildByFieldName("name"); n != nil {
		return n.Utf8Text(src)
	}
	return "?"
}

// pyLine returns the 1-based line of a tree-sitter point.
func pyLine(p sitter.Point) int { return int(p.Row) + 1 }

func firstErrorLine(n *sitter.Node) int {
	if n.IsError() || n.IsMissing() {
		return pyLine(n.StartPosition())
	}
	for i := uint(0); i < n.ChildCount(); i++ {
		if c := n.Child(i); c.HasError() {
			return firstErrorLine(c)
		}
	}
	return pyLine(n.StartPosition())
}

// A NameCall is one call site of a [NameCallGraph]: a [Call] resolved by
// name only. Approximate is always true — it marks the call as resolved
// without types, so an agent does not take it for a [CallGraph] answer. For a
// call whose name matches no definition in the indexed files (a builtin, a
// library function, a variable holding a function), Resolved is false and
// Callee is the text of the called expression, such as "math.sqrt".
// Call.Dynamic is true for calls through an attribute ("x.f()", "self.f()",
// "this.f()"), whose target depends on the object at run time.
type NameCall struct {
	Call
	Approximate bool `json:"approximate"`
	Resolved    bool `json:"resolved"`
}

// A NameCallGraph is an approximate call graph of the Python files
// ([PythonCalls]) or the JavaScript and TypeScript files ([JSCalls]) under a
// root, resolved from tree-sitter syntax by name alone. It is immutable and
// safe for concurrent use.
type NameCallGraph struct {
	symbols  map[string]bool     // every function, class and module symbol
	byName   map[string][]string // last name component -> function and class symbols
	byCaller map[string][]NameCall
	byCallee map[string][]NameCall
}

// nameDef is a function or class definition found in a file.
type nameDef struct {
	sym, name string
	method    bool   // a function defined directly in a class body
	class     string // for a method, its class's symbol
	isClass   bool
}

// callSite is a call expression before resolution.
type callSite struct {
	path      string
	line      int
	caller    string // symbol of the innermost enclosing def, class or module
	class     string // symbol of the class whose method encloses the call, if any
	name      string // last name component of the called expression; "" if none
	text      string // the called expression
	attribute bool   // called through an attribute: x.f()
	self      bool   // called as self.f() or cls.f() (Python), this.f() (JavaScript)
	file      string // module of the call's file
}

// PythonCalls parses the .py files under root with tree-sitter and builds an
// approximate call graph by name. Every call expression is attributed to the
// innermost function, class body or module it is in (a lambda's calls to
// the function around it), and resolved by the last name component of the
// called expression ("f" for f(), a.b.f() and self.f()) to the definitions
// with that name under root:
//
//   - self.f() and cls.f() inside a method of class C go to C.f if C defines
//     f (no base classes are followed), else as x.f() below;
//   - a plain f() goes to the functions and classes named f (a class
//     stands for its constructor), those of the same file only if the file
//     defines one; methods are not candidates;
//   - x.f() goes to every function, method and class named f.
//
// Imports and aliases are not followed, so a call can go to a same-named
// definition it never reaches, and a call of an aliased or assigned function
// is unresolved. Symbols are those of [ChunkPython], with nested functions
// as "module.outer.inner". Folders skipped by the index, hidden folders,
// __pycache__ and virtual environments (folders with a pyvenv.cfg) are not
// read; nor are files over [DefaultMaxFileSize].
func PythonCalls(ctx context.Context, root string) (*NameCallGraph, error) {
	p := sitter.NewParser()
	defer p.Close()
	if err := p.SetLanguage(pythonLanguage); err != nil {
		return nil, fmt.Errorf("codeindex: python grammar: %w", err)
	}
	q, qerr := sitter.NewQuery(pythonLanguage, `(call function: (_) @callee)`)
	if qerr != nil {
		return nil, fmt.Errorf("codeindex: python call query: %w", qerr)
	}
	defer q.Close()
	qc := sitter.NewQueryCursor()
	defer qc.Close()

	defs := map[string]nameDef{}
	var sites []callSite
	skip := func(path, name string) bool {
		if name == "__pycache__" {
			return true
		}
		_, err := os.Stat(filepath.Join(path, "pyvenv.cfg")) // a virtual environment
		return err == nil
	}
	match := func(path string) bool { return strings.HasSuffix(path, ".py") }
	err := sourceFiles(ctx, root, skip, match, func(rel string, src []byte) error {
		tree := p.Parse(src, nil)
		if tree == nil {
			return nil
		}
		defer tree.Close()
		sites = append(sites, scanPython(rel, src, tree, q, qc, defs)...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("codeindex: python calls: %w", err)
	}
	return newNameCallGraph(defs, sites), nil
}

// sourceFiles calls fn with the path relative to root (slash-separated)
// and the content of each regular file under root that match accepts,
// in lexical order, leaving out the folders the index skips, hidden ones,
// those skip names (given the folder's path and name; root itself is
// never skipped), files over [DefaultMaxFileSize] and binary ones. It
// stops at fn's first error, or when ctx is done.
func sourceFiles(ctx context.Context, root string, skip func(path, name string) bool, match func(path string) bool,
	fn func(rel string, src []byte) error) error {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (skipDirs[name] || strings.HasPrefix(name, ".") || skip(path, name)) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && match(path) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, abs := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return err
		}
		if fi.Size() > DefaultMaxFileSize {
			continue
		}
		src, err := os.ReadFile(abs)
		if err != nil {
			return err
		}
		if isBinary(src) {
			continue
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			return err
		}
		if err := fn(filepath.ToSlash(rel), src); err != nil {
			return err
		}
	}
	return nil
}

// newNameCallGraph resolves call sites against the definitions found
// (by [resolveByName]'s rules, which hold for JavaScript too).
func newNameCallGraph(defs map[string]nameDef, sites []callSite) *NameCallGraph {
	g := &NameCallGraph{
		symbols:  map[string]bool{},
		byName:   map[string][]string{},
		byCaller: map[string][]NameCall{},
		byCallee: map[string][]NameCall{},
	}
	for _, d := range defs {
		g.symbols[d.sym] = true
		g.byName[d.name] = append(g.byName[d.name], d.sym)
	}
	for _, s := range sites {
		g.symbols[s.file] = true
	}
	for name := range g.byName {
		slices.Sort(g.byName[name])
	}
	for _, s := range sites {
		base := NameCall{
			Call:        Call{Path: s.path, Line: s.line, Caller: s.caller, Dynamic: s.attribute},
			Approximate: true,
		}
		targets := resolveByName(s, defs, g.byName)
		if len(targets) == 0 {
			c := base
			c.Callee = s.text
			g.byCaller[s.caller] = append(g.byCaller[s.caller], c)
			continue
		}
		for _, t := range targets {
			c := base
			c.Callee, c.Resolved = t, true
			g.byCaller[s.caller] = append(g.byCaller[s.caller], c)
			g.byCallee[t] = append(g.byCallee[t], c)
		}
	}
	return g
}

// resolveByName returns the symbols a call site may call, by the rules of
// [PythonCalls].
func resolveByName(s callSite, defs map[string]nameDef, byName map[string][]string) []string {
	if s.name == "" {
		return nil
	}
	if s.self && s.class != "" {
		if d, ok := defs[s.class+"."+s.name]; ok && d.method {
			return []string{d.sym}
		}
	}
	cands := byName[s.name]
	if s.attribute {
		return cands
	}
	var plain, local []string
	for _, sym := range cands {
		d := defs[sym]
		if d.method {
			continue
		}
		plain = append(plain, sym)
		if strings.HasPrefix(sym, s.file+".") {
			local = append(local, sym)
		}
	}
	if len(local) > 0 {
		return local
	}
	return plain
}

// scanPython records the definitions of one parsed file in defs and returns
// its call sites.
func scanPython(rel string, src []byte, tree *sitter.Tree, q *sitter.Query, qc *sitter.QueryCursor, defs map[string]nameDef) []callSite {
	mod := PythonModule(rel)
	root := tree.RootNode()
	scopes := map[uintptr]nameDef{} // definition node -> its definition

	var walk func(n *sitter.Node, prefix string, inClass string)
	walk = func(n *sitter.Node, prefix string, inClass string) {
		for i := uint(0); i < n.NamedChildCount(); i++ {
			c := n.NamedChild(i)
			switch c.Kind() {
			case "function_definition", "class_definition":
				name := pyName(c, src)
				d := nameDef{sym: prefix + "." + name, name: name, isClass: c.Kind() == "class_definition"}
				if !d.isClass && inClass != "" {
					d.method, d.class = true, inClass
				}
				defs[d.sym] = d
				scopes[c.Id()] = d
				body := c.ChildByFieldName("body")
				if body == nil {
					continue
				}
				inner := ""
				if d.isClass {
					inner = d.sym
				}
				walk(body, d.sym, inner)
			default:
				walk(c, prefix, inClass)
			}
		}
	}
	walk(root, mod, "")

	var sites []callSite
	ms := qc.Matches(q, root, src)
	for m := ms.Next(); m != nil; m = ms.Next() {
		for _, capt := range m.Captures {
			fn := capt.Node
			s := callSite{path: rel, line: pyLine(fn.StartPosition()), caller: mod, file: mod}
			s.text, _, _ = strings.Cut(fn.Utf8Text(src), "\n")
			switch fn.Kind() {
			case "identifier":
				s.name = s.text
			case "attribute":
				s.attribute = true
				if a := fn.ChildByFieldName("attribute"); a != nil {
					s.name = a.Utf8Text(src)
				}
				if o := fn.ChildByFieldName("object"); o != nil && o.Kind() == "identifier" {
					obj := o.Utf8Text(src)
					s.self = obj == "self" || obj == "cls"
				}
			}
			// The innermost enclosing definition whose body holds the call;
			// decorators, default values and base classes are evaluated in
			// the scope around their definition.
			for a := fn.Parent(); a != nil; a = a.Parent() {
				if a.Kind() != "block" {
					continue
				}
				owner := a.Parent()
				if owner == nil {
					break
				}
				d, ok := scopes[owner.Id()]
				if !ok {
					continue
				}
				s.caller = d.sym
				if d.method {
					s.class = d.class
				}
				break
			}
			sites = append(sites, s)
		}
	}
	return sites
}

// lookup resolves name to symbols: a symbol as [ChunkPython] or
// [ChunkJavaScript] writes it
// ("geom.shapes.Circle.area", or a module, "geom.shapes"), else a bare
// function, method or class name ("area", every definition so named).
func (g *NameCallGraph) lookup(name string) ([]string, error) {
	if g.symbols[name] {
		return []string{name}, nil
	}
	if syms := g.byName[name]; len(syms) > 0 {
		return syms, nil
	}
	return nil, &UnknownFunctionError{Name: name}
}

// Callers returns the call sites that name resolves to by name, sorted by
// file and line; name is a symbol or a bare name (see [NameCallGraph.Callees]).
func (g *NameCallGraph) Callers(name string) ([]NameCall, error) {
	syms, err := g.lookup(name)
	if err != nil {
		return nil, err
	}
	var calls []NameCall
	for _, s := range syms {
		calls = append(calls, g.byCallee[s]...)
	}
	return sortNameCalls(calls), nil
}

// Callees returns the calls made in the body of what name denotes — a
// function or method (with its lambdas but not its nested functions), a class
// body or a module's top-level code — sorted by file and line, unresolved
// calls included. name is a symbol as [ChunkPython] or [ChunkJavaScript]
// writes it ("geom.shapes.Square.area", "geom.shapes") or a bare function,
// method or class name.
func (g *NameCallGraph) Callees(name string) ([]NameCall, error) {
	syms, err := g.lookup(name)
	if err != nil {
		return nil, err
	}
	var calls []NameCall
	for _, s := range syms {
		calls = append(calls, g.byCaller[s]...)
	}
	return sortNameCalls(calls), nil
}

func sortNameCalls(calls []NameCall) []NameCall {
	slices.SortFunc(calls, func(a, b NameCall) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Caller, b.Caller), cmp.Compare(a.Callee, b.Callee))
	})
	return slices.Compact(calls)
}

// parseTree parses src, the file path, with the tree-sitter grammar lang
// (named what in errors). A syntax error is a *[ParseError]. The caller
// closes the tree.
func parseTree(path string, src []byte, lang *sitter.Language, what string) (*sitter.Tree, error) {
	p := sitter.NewParser()
	defer p.Close()
	if err := p.SetLanguage(lang); err != nil {
		return nil, fmt.Errorf("codeindex: %s grammar: %w", what, err)
	}
	tree := p.Parse(src, nil)
	if tree == nil {
		return nil, &ParseError{Path: path, Err: fmt.Errorf("tree-sitter returned no tree")}
	}
	if root := tree.RootNode(); root.HasError() {
		line := firstErrorLine(root)
		tree.Close()
		return nil, &ParseError{Path: path, Err: fmt.Errorf("%s syntax error near line %d", what, line)}
	}
	return tree, nil
}
