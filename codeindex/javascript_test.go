package codeindex_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/codeindex"
)

func TestJSModule(t *testing.T) {
	tests := []struct{ path, want string }{
		{"src/geom/shapes.ts", "src.geom.shapes"},
		{"src/geom/index.js", "src.geom"},
		{"index.tsx", "index"},
		{"types.d.ts", "types"},
		{"lib/a.spec.mjs", "lib.a.spec"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			require.Equal(t, tt.want, codeindex.JSModule(tt.path))
		})
	}
}

func TestChunkJavaScript(t *testing.T) {
	tests := []struct {
		file  string
		want  []pySpan
		heads map[string]string
	}{
		{
			file: "src/shapes.ts",
			want: []pySpan{
				{"src.shapes", codeindex.KindModule, 1, 1},
				{"src.shapes.Shape", codeindex.KindType, 3, 8},
				{"src.shapes.Unit", codeindex.KindType, 10, 14},
				{"src.shapes.Pair", codeindex.KindType, 16, 16},
				{"src.shapes.registered", codeindex.KindFunc, 18, 21},
				{"src.shapes.Circle", codeindex.KindClass, 23, 27},
				{"src.shapes.Circle.constructor", codeindex.KindMethod, 29, 31},
				{"src.shapes.Circle.area", codeindex.KindMethod, 33, 37},
				{"src.shapes.Circle.radius", codeindex.KindMethod, 39, 41},
				{"src.shapes.Circle.describe", codeindex.KindMethod, 43, 43},
				{"src.shapes.Polygon", codeindex.KindClass, 46, 46},
				{"src.shapes.Polygon.sides", codeindex.KindMethod, 47, 47},
				{"src.shapes.totalArea", codeindex.KindFunc, 50, 55},
				{"src.shapes.largest", codeindex.KindFunc, 57, 59},
			},
			heads: map[string]string{
				"src.shapes.Shape":       "/**\n * A shape with an area.\n */\nexport interface Shape {",
				"src.shapes.Pair":        "export type Pair<T> = [T, T];",
				"src.shapes.Circle":      "// Circle is round.\n@registered\nexport class Circle implements Shape {",
				"src.shapes.Circle.area": "  /** The area, rounded. */\n  @memo\n  area(): number {",
				"src.shapes.largest":     "export default function largest(shapes: Shape[]): Shape | undefined {",
			},
		},
		{
			file: "src/util.js",
			want: []pySpan{
				{"src.util", codeindex.KindModule, 1, 3},
				{"src.util.clamp", codeindex.KindFunc, 5, 8},
				{"src.util.rounded", codeindex.KindFunc, 10, 10},
				{"src.util.range", codeindex.KindFunc, 12, 14},
				{"src.util.legacy", codeindex.KindFunc, 16, 16},
				{"src.util", codeindex.KindModule, 18, 18},
			},
			heads: map[string]string{
				"src.util.clamp": "/** Clamps value into [lo, hi]. */\nmodule.exports.clamp = function (value, lo, hi) {",
				"src.util.range": "function* range(n) {",
			},
		},
		{
			file: "src/App.jsx",
			want: []pySpan{
				{"src.App", codeindex.KindModule, 1, 1},
				{"src.App.Button", codeindex.KindFunc, 3, 5},
				{"src.App.App", codeindex.KindFunc, 7, 9},
			},
			heads: map[string]string{"src.App.Button": "const Button = ({ label, onClick }) => ("},
		},
		{
			file: "src/view.tsx",
			want: []pySpan{
				{"src.view", codeindex.KindModule, 1, 1},
				{"src.view.Props", codeindex.KindType, 3, 5},
				{"src.view.List", codeindex.KindFunc, 7, 9},
				{"src.view.View", codeindex.KindClass, 11, 11},
				{"src.view.View.render", codeindex.KindMethod, 12, 14},
			},
			heads: map[string]string{"src.view.View.render": "  render() {"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "jsproj", filepath.FromSlash(tt.file)))
			require.NoError(t, err)
			chunks, err := codeindex.ChunkJavaScript(tt.file, src, codeindex.DefaultLineWindow, codeindex.DefaultLineOverlap)
			require.NoError(t, err)
			require.Equal(t, tt.want, pySpans(chunks))

			lines := strings.Split(string(src), "\n")
			for _, c := range chunks {
				require.Equal(t, tt.file, c.Path)
				require.Equal(t, strings.Join(lines[c.StartLine-1:c.EndLine], "\n"), c.Content, c.Symbol)
				require.True(t, strings.HasPrefix(c.Content, c.Head), c.Symbol)
				require.Equal(t, c.Kind == codeindex.KindModule, c.Head == "", "%s: only module code has no head", c.Symbol)
				if h, ok := tt.heads[c.Symbol]; ok {
					require.Equal(t, h, c.Head, c.Symbol)
				}
			}
		})
	}
}

func TestChunkJavaScriptEdgeCases(t *testing.T) {
	tests := []struct {
		name, file, src string
		want            []pySpan
	}{
		{
			name: "anonymous default exports",
			file: "a.js",
			src:  "export default () => {\n  return 1;\n};\n",
			want: []pySpan{{"a.default", codeindex.KindFunc, 1, 3}},
		},
		{
			name: "anonymous default class",
			file: "a.js",
			src:  "export default class {\n  m() {}\n}\n",
			want: []pySpan{{"a.default", codeindex.KindClass, 1, 1}, {"a.default.m", codeindex.KindMethod, 2, 2}},
		},
		{
			name: "export lists, objects and plain values are module code",
			file: "a.ts",
			src:  "const n = 1;\nexport const api = {\n  get() { return n; },\n};\nexport { n };\n",
			want: []pySpan{{"a", codeindex.KindModule, 1, 5}},
		},
		{
			name: "the function of several declarators names the chunk",
			file: "a.js",
			src:  "const n = 1, f = () => n;\n",
			want: []pySpan{{"a.f", codeindex.KindFunc, 1, 1}},
		},
		{
			name: "nested functions stay in their function",
			file: "a.js",
			src:  "function outer() {\n  function inner() {}\n  const g = () => inner();\n  return g;\n}\n",
			want: []pySpan{{"a.outer", codeindex.KindFunc, 1, 5}},
		},
		{
			name: "a field after a method is module code, the closing brace is nobody's",
			file: "a.ts",
			src:  "class A {\n  m(): void {}\n  late = 2;\n}\n",
			want: []pySpan{{"a.A", codeindex.KindClass, 1, 1}, {"a.A.m", codeindex.KindMethod, 2, 2}, {"a", codeindex.KindModule, 3, 3}},
		},
		{
			name: "overload signatures and their implementation",
			file: "a.ts",
			src:  "export function f(a: string): string;\nexport function f(a: number): number;\nexport function f(a: any) {\n  return a;\n}\n",
			want: []pySpan{{"a.f", codeindex.KindFunc, 1, 1}, {"a.f", codeindex.KindFunc, 2, 2}, {"a.f", codeindex.KindFunc, 3, 5}},
		},
		{
			name: "a trailing comment of the line above is not the definition's",
			file: "a.js",
			src:  "let x = 1; // counter\nfunction f() {}\n",
			want: []pySpan{{"a", codeindex.KindModule, 1, 1}, {"a.f", codeindex.KindFunc, 2, 2}},
		},
		{
			name: "TypeScript method decorators on their own lines",
			file: "a.ts",
			src:  "class A {\n  // why\n  @get('/x')\n  @auth\n  handle(): void {}\n}\n",
			want: []pySpan{{"a.A", codeindex.KindClass, 1, 1}, {"a.A.handle", codeindex.KindMethod, 2, 5}},
		},
		{
			name: "ambient declarations and namespaces are module code",
			file: "a.d.ts",
			src:  "declare function g(): void;\nnamespace N {\n  export function h() {}\n}\n",
			want: []pySpan{{"a", codeindex.KindModule, 1, 4}},
		},
		{
			name: "empty file",
			file: "a.tsx",
			src:  "",
			want: []pySpan{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks, err := codeindex.ChunkJavaScript(tt.file, []byte(tt.src), 60, 10)
			require.NoError(t, err)
			require.Equal(t, tt.want, pySpans(chunks))
		})
	}
}

func TestChunkJavaScriptSyntaxError(t *testing.T) {
	tests := []struct{ file, src string }{
		{"bad.js", "function f( {\n"},
		{"bad.ts", "let x: = 1;\n"},
		{"bad.tsx", "const a = <div>;\n"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			chunks, err := codeindex.ChunkJavaScript(tt.file, []byte(tt.src), 60, 10)
			var pe *codeindex.ParseError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tt.file, pe.Path)
			require.Nil(t, chunks)
		})
	}
}

func TestChunkJavaScriptRejectsOtherFiles(t *testing.T) {
	_, err := codeindex.ChunkJavaScript("a.py", []byte("x = 1\n"), 60, 10)
	require.Error(t, err)
}

func TestIndexJavaScriptAndTypeScript(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS(filepath.Join("testdata", "jsproj"))))
	writeTree(t, root, map[string]string{"src/broken.ts": "export function (\n"})
	ctx := context.Background()
	ix, err := codeindex.Open(ctx, root)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ix.Close()) })
	st, err := ix.Update(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.ParseErrors, "broken.ts, chunked by lines")

	hits, err := ix.Search(ctx, "largest shape", codeindex.WithMode(codeindex.BM25), codeindex.WithLimit(1))
	require.NoError(t, err)
	require.Len(t, hits, 1)
	require.Equal(t, codeindex.Hit{Path: "src/shapes.ts", StartLine: 57, EndLine: 59, Symbol: "src.shapes.largest", Kind: codeindex.KindFunc, Score: hits[0].Score}, hits[0])

	hits, err = ix.Search(ctx, "broken", codeindex.WithMode(codeindex.BM25), codeindex.WithLimit(1))
	require.NoError(t, err)
	require.Len(t, hits, 1)
	require.Equal(t, codeindex.KindLines, hits[0].Kind)
}

func TestJSCalls(t *testing.T) {
	g, err := codeindex.JSCalls(context.Background(), filepath.Join("testdata", "jsproj"))
	require.NoError(t, err)

	const shapes, util, main = "src/shapes.ts", "src/util.js", "src/main.ts"
	tests := []struct {
		name    string
		callers bool // Callers, else Callees
		of      string
		want    []codeindex.NameCall
	}{
		{
			name: "a method called on other objects, in a callback and through this in its class, not in another", callers: true, of: "src.shapes.Circle.area",
			want: []codeindex.NameCall{
				call(main, 6, "src.main.main", "src.shapes.Circle.area", true, true),
				call(shapes, 43, "src.shapes.Circle.describe", "src.shapes.Circle.area", true, true),
				call(shapes, 55, "src.shapes.totalArea", "src.shapes.Circle.area", true, true),
				call(shapes, 58, "src.shapes.largest", "src.shapes.Circle.area", true, true), // b.area() and a.area(), one call site
			},
		},
		{
			name: "the same for the other class's method of that name", callers: true, of: "src.main.Square.area",
			want: []codeindex.NameCall{
				call(main, 6, "src.main.main", "src.main.Square.area", true, true),
				call(main, 15, "src.main.Square.describe", "src.main.Square.area", true, true),
				call(shapes, 55, "src.shapes.totalArea", "src.main.Square.area", true, true),
				call(shapes, 58, "src.shapes.largest", "src.main.Square.area", true, true),
			},
		},
		{
			name: "new, a default export, unresolved calls; an interface's method is no definition", callers: false, of: "src.main.main",
			want: []codeindex.NameCall{
				call(main, 4, "src.main.main", "src.shapes.Circle", false, true),
				call(main, 5, "src.main.main", "src.shapes.largest", false, true),
				call(main, 6, "src.main.main", "console.log", true, false),
				call(main, 6, "src.main.main", "src.main.Square.area", true, true),
				call(main, 6, "src.main.main", "src.main.Square.describe", true, true),
				call(main, 6, "src.main.main", "src.shapes.Circle.area", true, true),
				call(main, 6, "src.main.main", "src.shapes.Circle.describe", true, true),
			},
		},
		{
			name: "a CommonJS export called from another file", callers: true, of: "clamp",
			want: []codeindex.NameCall{
				call(shapes, 30, "src.shapes.Circle.constructor", "src.util.clamp", false, true),
			},
		},
		{
			name: "a function bound to a var calls a generator function", callers: false, of: "src.util.legacy",
			want: []codeindex.NameCall{
				call(util, 16, "src.util.legacy", "src.util.range", false, true),
			},
		},
		{
			name: "module-level code", callers: false, of: "src.main",
			want: []codeindex.NameCall{
				call(main, 9, "src.main", "src.main.main", false, true),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []codeindex.NameCall
			var err error
			if tt.callers {
				got, err = g.Callers(tt.of)
			} else {
				got, err = g.Callees(tt.of)
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestJSCallsSkipsNodeModulesHiddenFoldersAndBrokenFiles(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"src/a.js":                  "export function f() {\n  return g();\n}\n",
		"node_modules/lib/index.js": "export function g() {}\n",
		".cache/b.js":               "function g() {}\n",
		"src/broken.ts":             "function g( {\n",
	})
	g, err := codeindex.JSCalls(context.Background(), root)
	require.NoError(t, err)
	got, err := g.Callees("src.a.f")
	require.NoError(t, err)
	require.Equal(t, []codeindex.NameCall{call("src/a.js", 2, "src.a.f", "g", false, false)}, got)

	_, err = g.Callers("g")
	var ue *codeindex.UnknownFunctionError
	require.ErrorAs(t, err, &ue)
}
