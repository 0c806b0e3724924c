package codeindex

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
)

// Kind says what a [Chunk] holds.
type Kind string

// The kinds of chunk. Go files are chunked by declaration; every other text
// file is chunked into windows of lines ([KindLines]).
const (
	KindPackage Kind = "package" // package clause, package doc and imports
	KindFunc    Kind = "func"    // a function with its doc comment
	KindMethod  Kind = "method"  // a method with its doc comment
	KindType    Kind = "type"    // a type declaration with its doc comment
	KindConst   Kind = "const"   // a const declaration (or group)
	KindVar     Kind = "var"     // a var declaration (or group)
	KindLines   Kind = "lines"   // a fixed window of lines of a non-Go file
)

// A Chunk is the unit the index stores and returns: a span of one file.
type Chunk struct {
	// Path is the file's slash-separated path relative to the indexed root.
	Path string
	// Symbol names the definition, such as "http.Get", "http.(*Server).Serve"
	// or "http.Header"; it is empty for line windows.
	Symbol string
	// Kind says what the chunk holds.
	Kind Kind
	// StartLine and EndLine are 1-based and inclusive.
	StartLine, EndLine int
	// Content is the text of lines StartLine to EndLine.
	Content string
	// Head is the part of a definition that says what it is for: for a Go
	// function, method or type its doc comment and its declaration up to
	// the line that opens the body; for a Python function, method or class
	// the comments right above it, its decorators, its def or class line(s)
	// and its docstring; for a JavaScript or TypeScript definition the
	// comments right above it, "export", its decorators and its declaration
	// up to the line where its body starts. It is a prefix of Content (all
	// of it when the definition is one line), or empty for chunks without
	// one: const and var groups, package clauses, module code and line
	// windows.
	Head string
}

// A ParseError reports a Go file that go/parser could not parse. The index
// falls back to line windows for such a file.
type ParseError struct {
	Path string
	Err  error
}

func (e *ParseError) Error() string { return fmt.Sprintf("codeindex: parse %s: %v", e.Path, e.Err) }

// Unwrap returns the parser's error.
func (e *ParseError) Unwrap() error { return e.Err }

// ChunkGo splits a Go source file into one chunk per top-level declaration:
// functions, methods and types (each with its doc comment), const and var
// declarations, and one [KindPackage] chunk for the package clause and
// imports. Each type of a parenthesised type group is its own chunk. Symbols
// are qualified by the package name: "pkg.Func", "pkg.T.M", "pkg.(*T).M".
// If the file does not parse, ChunkGo returns a *[ParseError] and no chunks.
func ChunkGo(path string, src []byte) ([]Chunk, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, &ParseError{Path: path, Err: err}
	}
	lines := splitLines(src)
	pkg := f.Name.Name
	line := func(p token.Pos) int { return fset.Position(p).Line }
	var chunks []Chunk
	add := func(sym string, kind Kind, from, to token.Pos) {
		s, e := line(from), line(to)
		c := Chunk{
			Path: path, Symbol: sym, Kind: kind, StartLine: s, EndLine: e,
			Content: joinLines(lines, s, e),
		}
		if kind == KindFunc || kind == KindMethod || kind == KindType {
			c.Head = goHead(c.Content)
		}
		chunks = append(chunks, c)
	}

	// The package chunk: the package doc (if any) through the last import.
	pkgFrom, pkgTo := f.Package, f.Name.End()
	if f.Doc != nil {
		pkgFrom = f.Doc.Pos()
	}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			pkgTo = g.End()
		}
	}
	add(pkg, KindPackage, pkgFrom, pkgTo)

	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			from := d.Pos()
			if d.Doc != nil {
				from = d.Doc.Pos()
			}
			if d.Recv == nil || len(d.Recv.List) == 0 {
				add(pkg+"."+d.Name.Name, KindFunc, from, d.End())
				continue
			}
			add(pkg+"."+receiver(d.Recv.List[0].Type)+"."+d.Name.Name, KindMethod, from, d.End())
		case *ast.GenDecl:
			switch d.Tok {
			case token.TYPE:
				for _, s := range d.Specs {
					ts := s.(*ast.TypeSpec)
					from, to := ts.Pos(), ts.End()
					switch {
					case !d.Lparen.IsValid(): // "type T ...": the whole decl with its doc
						from, to = d.Pos(), d.End()
						if d.Doc != nil {
							from = d.Doc.Pos()
						}
					case ts.Doc != nil:
						from = ts.Doc.Pos()
					}
					add(pkg+"."+ts.Name.Name, KindType, from, to)
				}
			case token.CONST, token.VAR:
				kind := KindConst
				if d.Tok == token.VAR {
					kind = KindVar
				}
				from := d.Pos()
				if d.Doc != nil {
					from = d.Doc.Pos()
				}
				add(pkg+"."+firstName(d), kind, from, d.End())
			}
		}
	}
	return chunks, nil
}

// goHead returns the head of a Go function, method or type chunk's
// content: its doc comment and its declaration up to the line that opens
// the body ("{"), the whole content when no line does.
func goHead(content string) string {
	inDoc := true
	for i := 0; i < len(content); {
		j := strings.IndexByte(content[i:], '\n')
		if j < 0 {
			j = len(content) - i
		}
		line := strings.TrimSpace(content[i : i+j])
		if inDoc && (line == "" || strings.HasPrefix(line, "//")) {
			i += j + 1
			continue
		}
		inDoc = false
		if strings.Contains(line, "{") {
			return content[:i+j]
		}
		i += j + 1
	}
	return content
}

// receiver renders a method receiver type as it appears in a symbol: "T" or
// "(*T)", without type parameters.
func receiver(e ast.Expr) string {
	star := false
	if s, ok := e.(*ast.StarExpr); ok {
		star, e = true, s.X
	}
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	name := "?"
	if id, ok := e.(*ast.Ident); ok {
		name = id.Name
	}
	if star {
		return "(*" + name + ")"
	}
	return name
}

func firstName(d *ast.GenDecl) string {
	for _, s := range d.Specs {
		if vs, ok := s.(*ast.ValueSpec); ok {
			for _, n := range vs.Names {
				if n.Name != "_" {
					return n.Name
				}
			}
		}
	}
	return "_"
}

// ChunkLines splits a file into windows of window lines, each starting
// window-overlap lines after the previous one, the last window ending at the
// file's last line. A file of at most window lines is one chunk; an empty
// file has none. Values of window below 1 mean 1, and overlap is clamped to
// [0, window-1].
func ChunkLines(path string, src []byte, window, overlap int) []Chunk {
	lines := splitLines(src)
	n := len(lines)
	if n == 0 {
		return nil
	}
	window = max(window, 1)
	overlap = min(max(overlap, 0), window-1)
	step := window - overlap
	var chunks []Chunk
	for start := 1; ; start += step {
		end := min(start+window-1, n)
		chunks = append(chunks, Chunk{
			Path: path, Kind: KindLines, StartLine: start, EndLine: end,
			Content: joinLines(lines, start, end),
		})
		if end == n {
			return chunks
		}
	}
}

// splitLines returns the lines of src without their terminators; a final
// line terminator does not start an extra empty line.
func splitLines(src []byte) []string {
	if len(src) == 0 {
		return nil
	}
	s := strings.TrimSuffix(string(src), "\n")
	return strings.Split(s, "\n")
}

// joinLines returns lines from..to (1-based, inclusive), clamped to lines.
func joinLines(lines []string, from, to int) string {
	from, to = max(from, 1), min(to, len(lines))
	if from > to {
		return ""
	}
	return strings.Join(lines[from-1:to], "\n")
}

// isBinary reports whether data looks binary: a NUL byte among its first
// 8000 bytes, the rule git uses.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}
