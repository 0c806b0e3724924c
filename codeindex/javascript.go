package codeindex

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	sitter "github.com/tree-sitter/go-tree-sitter"
	javascript "github.com/tree-sitter/tree-sitter-javascript/bindings/go"
	typescript "github.com/tree-sitter/tree-sitter-typescript/bindings/go"
)

// The tree-sitter grammars of JavaScript (JSX included), TypeScript and
// TSX. A Language is immutable and may be shared; parsers may not, so each
// call makes its own.
var (
	javascriptLanguage = sitter.NewLanguage(javascript.Language())
	typescriptLanguage = sitter.NewLanguage(typescript.LanguageTypescript())
	tsxLanguage        = sitter.NewLanguage(typescript.LanguageTSX())
)

// jsLanguage returns the grammar of a JavaScript or TypeScript file by its
// extension, or nil for other files: .js, .jsx, .mjs and .cjs are
// JavaScript (with JSX), .ts, .mts and .cts TypeScript, .tsx TSX.
func jsLanguage(p string) *sitter.Language {
	switch path.Ext(p) {
	case ".js", ".jsx", ".mjs", ".cjs":
		return javascriptLanguage
	case ".ts", ".mts", ".cts":
		return typescriptLanguage
	case ".tsx":
		return tsxLanguage
	}
	return nil
}

// JSModule returns the dotted module name of the JavaScript or TypeScript
// file at path, a slash-separated path relative to the indexed root, as
// [PythonModule] does for Python: "src/geom/shapes.ts" is
// "src.geom.shapes", "src/geom/index.js" is "src.geom" and "types.d.ts"
// is "types".
func JSModule(p string) string {
	m := strings.TrimSuffix(p, ".d.ts")
	if m == p {
		m = strings.TrimSuffix(p, path.Ext(p))
	}
	if t := strings.TrimSuffix(m, "/index"); t != m {
		m = t
	}
	return strings.ReplaceAll(m, "/", ".")
}

// ChunkJavaScript splits a JavaScript, JSX, TypeScript or TSX source file
// (by its extension, see below) with tree-sitter into one chunk per
// top-level definition, exported or not:
//
//   - each function declaration ([KindFunc]), symbol "module.f", and each
//     const, let or var bound to an arrow function or function expression
//     ("export const f = async () => {…}"), and each CommonJS assignment of
//     one ("module.exports.f = function () {…}"); a default export without
//     a name is "module.default";
//   - each class ([KindClass]), symbol "module.Class", spanning its
//     decorators, class line and fields up to its first method;
//   - each method ([KindMethod]), symbol "module.Class.method", getters,
//     setters, static and abstract methods and fields bound to an arrow
//     function included;
//   - in TypeScript, each interface, type alias and enum ([KindType]).
//
// A definition's span takes in "export", its decorators and the comments
// right above it (a JSDoc block). Its head ([Chunk].Head) runs from there
// to the line where its body starts. module is [JSModule] of path. Nested
// functions and object literals stay in their definition's chunk, and the
// remaining lines — imports, other statements, ambient declarations and
// namespaces — form [KindModule] chunks, as [ChunkPython]'s do.
//
// .js, .jsx, .mjs and .cjs files are parsed as JavaScript (with JSX), .ts,
// .mts and .cts as TypeScript and .tsx as TSX; any other path is an error.
// If tree-sitter finds a syntax error, ChunkJavaScript returns a
// *[ParseError] and no chunks.
func ChunkJavaScript(path string, src []byte, window, overlap int) ([]Chunk, error) {
	lang := jsLanguage(path)
	if lang == nil {
		return nil, fmt.Errorf("codeindex: %s is not a JavaScript or TypeScript file", path)
	}
	tree, err := parseTree(path, src, lang, "javascript")
	if err != nil {
		return nil, err
	}
	defer tree.Close()
	root := tree.RootNode()
	lines := splitLines(src)
	j := &jsChunker{path: path, src: src, mod: JSModule(path), lines: lines, covered: make([]bool, len(lines)+2)}
	for i := uint(0); i < root.NamedChildCount(); i++ {
		j.statement(root.NamedChild(i))
	}
	chunks := append(j.chunks, moduleChunks(path, j.mod, lines, j.covered, window, overlap)...)
	slices.SortStableFunc(chunks, func(a, b Chunk) int { return cmp.Compare(a.StartLine, b.StartLine) })
	return chunks, nil
}

// jsChunker collects the chunks of one JavaScript or TypeScript file.
type jsChunker struct {
	path, mod string
	src       []byte
	lines     []string
	covered   []bool // by 1-based line
	chunks    []Chunk
}

// add adds a chunk spanning lines s to e whose head ends on line headEnd.
func (j *jsChunker) add(sym string, kind Kind, s, e, headEnd int) {
	for e > s && strings.TrimSpace(j.lines[e-1]) == "" {
		e--
	}
	for l := s; l <= e; l++ {
		j.covered[l] = true
	}
	j.chunks = append(j.chunks, Chunk{
		Path: j.path, Symbol: sym, Kind: kind, StartLine: s, EndLine: e,
		Content: joinLines(j.lines, s, e),
		Head:    joinLines(j.lines, s, min(e, headEnd)),
	})
}

// statement chunks a top-level statement if it defines something.
func (j *jsChunker) statement(st *sitter.Node) {
	decl := st
	if st.Kind() == "export_statement" {
		decl = st.ChildByFieldName("declaration")
		if decl == nil {
			decl = st.ChildByFieldName("value") // export default <expression>
		}
		if decl == nil {
			return // export { a, b } and re-exports
		}
	}
	start, end := jsSpanStart(st), pyLine(st.EndPosition())
	switch decl.Kind() {
	case "function_declaration", "generator_function_declaration", "function_signature":
		j.add(j.mod+"."+j.name(decl, "name"), KindFunc, start, end, jsBodyLine(decl))
	case "function_expression", "function", "generator_function", "arrow_function":
		j.add(j.mod+"."+j.name(decl, "name"), KindFunc, start, end, jsBodyLine(decl))
	case "class_declaration", "abstract_class_declaration", "class":
		j.class(j.mod+"."+j.name(decl, "name"), decl, start, end)
	case "lexical_declaration", "variable_declaration":
		for i := uint(0); i < decl.NamedChildCount(); i++ {
			d := decl.NamedChild(i)
			if v := d.ChildByFieldName("value"); d.Kind() == "variable_declarator" && isJSFunction(v) {
				j.add(j.mod+"."+j.name(d, "name"), KindFunc, start, end, jsBodyLine(v))
				return
			}
		}
	case "interface_declaration", "enum_declaration":
		j.add(j.mod+"."+j.name(decl, "name"), KindType, start, end, jsBodyLine(decl))
	case "type_alias_declaration":
		headEnd := end
		if v := decl.ChildByFieldName("value"); v != nil {
			headEnd = pyLine(v.StartPosition())
		}
		j.add(j.mod+"."+j.name(decl, "name"), KindType, start, end, headEnd)
	case "expression_statement":
		// CommonJS: exports.f = …, module.exports.f = …
		a := decl.NamedChild(0)
		if a == nil || a.Kind() != "assignment_expression" {
			return
		}
		right, left := a.ChildByFieldName("right"), a.ChildByFieldName("left")
		if !isJSFunction(right) || left == nil {
			return
		}
		name := left
		if left.Kind() == "member_expression" {
			name = left.ChildByFieldName("property")
		}
		if name == nil || (name.Kind() != "identifier" && name.Kind() != "property_identifier") {
			return
		}
		j.add(j.mod+"."+name.Utf8Text(j.src), KindFunc, start, end, jsBodyLine(right))
	}
}

// class adds the chunk of a class's header (up to its first method) and
// one per method.
func (j *jsChunker) class(sym string, decl *sitter.Node, start, end int) {
	body := decl.ChildByFieldName("body")
	headerEnd := end
	type method struct {
		name             string
		s, e, headEndRow int
	}
	var methods []method
	for i := uint(0); body != nil && i < body.NamedChildCount(); i++ {
		m := body.NamedChild(i)
		var headEnd int
		nameField := "name"
		switch m.Kind() {
		case "method_definition", "method_signature", "abstract_method_signature":
			headEnd = jsBodyLine(m)
		case "field_definition", "public_field_definition":
			v := m.ChildByFieldName("value")
			if !isJSFunction(v) {
				continue
			}
			headEnd = jsBodyLine(v)
			if m.Kind() == "field_definition" {
				nameField = "property"
			}
		default:
			continue
		}
		s := jsSpanStart(m)
		if len(methods) == 0 {
			headerEnd = s - 1
		}
		methods = append(methods, method{j.name(m, nameField), s, pyLine(m.EndPosition()), headEnd})
	}
	j.add(sym, KindClass, start, headerEnd, jsBodyLine(decl))
	for _, m := range methods {
		j.add(sym+"."+m.name, KindMethod, m.s, m.e, m.headEndRow)
	}
	// The class's closing brace, alone on its line after the last
	// method, is no module code.
	for l := start; l <= end; l++ {
		if !j.covered[l] && strings.Trim(j.lines[l-1], " \t});,") == "" {
			j.covered[l] = true
		}
	}
}

// name returns the text of n's field, "default" when it has none (an
// anonymous default export).
func (j *jsChunker) name(n *sitter.Node, field string) string {
	if c := n.ChildByFieldName(field); c != nil {
		return c.Utf8Text(j.src)
	}
	return "default"
}

// isJSFunction reports whether n is a function value: an arrow function
// or a function expression.
func isJSFunction(n *sitter.Node) bool {
	if n == nil {
		return false
	}
	switch n.Kind() {
	case "arrow_function", "function_expression", "function", "generator_function":
		return true
	}
	return false
}

// jsBodyLine returns the 1-based line where n's body starts, its last line
// when it has none (a signature).
func jsBodyLine(n *sitter.Node) int {
	if b := n.ChildByFieldName("body"); b != nil {
		return pyLine(b.StartPosition())
	}
	return pyLine(n.EndPosition())
}

// jsSpanStart returns the first line of a definition n together with the
// decorators before it (TypeScript keeps a method's decorators beside it
// in the class body) and the comments directly above it at its column.
func jsSpanStart(n *sitter.Node) int {
	start := pyLine(n.StartPosition())
	col := n.StartPosition().Column
	for p := n.PrevSibling(); p != nil; p = p.PrevSibling() {
		switch {
		case p.Kind() == "decorator":
			start = pyLine(p.StartPosition())
		case p.Kind() == "comment" && pyLine(p.EndPosition()) == start-1 && p.StartPosition().Column == col:
			start = pyLine(p.StartPosition())
		default:
			return start
		}
	}
	return start
}
