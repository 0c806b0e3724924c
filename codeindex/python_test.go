package codeindex_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/codeindex"
)

// pySpan is the part of a chunk the boundary tests compare.
type pySpan struct {
	Symbol     string
	Kind       codeindex.Kind
	Start, End int
}

func pySpans(chunks []codeindex.Chunk) []pySpan {
	out := make([]pySpan, len(chunks))
	for i, c := range chunks {
		out[i] = pySpan{c.Symbol, c.Kind, c.StartLine, c.EndLine}
	}
	return out
}

func TestPythonModule(t *testing.T) {
	tests := []struct{ path, want string }{
		{"main.py", "main"},
		{"geom/shapes.py", "geom.shapes"},
		{"geom/__init__.py", "geom"},
		{"a/b/c/__init__.py", "a.b.c"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			require.Equal(t, tt.want, codeindex.PythonModule(tt.path))
		})
	}
}

func TestChunkPython(t *testing.T) {
	tests := []struct {
		file string
		want []pySpan
		// firstLines maps a symbol to the first line of its chunk's content.
		firstLines map[string]string
		// contains maps a symbol to text its chunk's content must hold.
		contains map[string]string
		// heads maps a symbol to its chunk's head.
		heads map[string]string
	}{
		{
			file: "geom/shapes.py",
			want: []pySpan{
				{"geom.shapes", codeindex.KindModule, 1, 5},
				{"geom.shapes.registered", codeindex.KindFunc, 8, 11},
				{"geom.shapes", codeindex.KindModule, 14, 14},
				{"geom.shapes.Circle", codeindex.KindClass, 17, 21},
				{"geom.shapes.Circle.__init__", codeindex.KindMethod, 23, 24},
				{"geom.shapes.Circle.area", codeindex.KindMethod, 26, 29},
				{"geom.shapes.Circle.describe", codeindex.KindMethod, 31, 32},
				{"geom.shapes.Square", codeindex.KindClass, 35, 35},
				{"geom.shapes.Square.__init__", codeindex.KindMethod, 36, 37},
				{"geom.shapes.Square.area", codeindex.KindMethod, 39, 41},
				{"geom.shapes.Square.describe", codeindex.KindMethod, 43, 44},
				{"geom.shapes.Square.scaled", codeindex.KindMethod, 46, 47},
				{"geom.shapes.total_area", codeindex.KindFunc, 50, 51},
			},
			firstLines: map[string]string{
				"geom.shapes.Circle":      "@registered",
				"geom.shapes.Circle.area": "    @property",
				"geom.shapes.Square.area": "    @functools.lru_cache(maxsize=None)",
			},
			contains: map[string]string{
				"geom.shapes.Circle":      `"""A circle of a given radius."""`,
				"geom.shapes.Circle.area": `"""The area, rounded."""`,
				"geom.shapes":             "from geom.util import clamp, rounded",
			},
			heads: map[string]string{
				"geom.shapes.registered":      "def registered(cls):\n    \"\"\"Class decorator that records cls.\"\"\"",
				"geom.shapes.Circle":          "@registered\nclass Circle:\n    \"\"\"A circle of a given radius.\"\"\"",
				"geom.shapes.Circle.__init__": "    def __init__(self, radius):",
				"geom.shapes.Circle.area":     "    @property\n    def area(self):\n        \"\"\"The area, rounded.\"\"\"",
				"geom.shapes.Square":          "class Square:",
				"geom.shapes.Square.area":     "    @functools.lru_cache(maxsize=None)\n    def area(self):",
				"geom.shapes.total_area":      "def total_area(shapes):",
			},
		},
		{
			file: "geom/util.py",
			want: []pySpan{
				{"geom.util", codeindex.KindModule, 1, 5},
				{"geom.util.clamp", codeindex.KindFunc, 8, 10},
				{"geom.util.rounded", codeindex.KindFunc, 13, 15},
				{"geom.util.hypot", codeindex.KindFunc, 18, 20},
			},
			firstLines: map[string]string{
				"geom.util.hypot": "# A comment right above a definition belongs to its chunk.",
			},
			heads: map[string]string{
				"geom.util.hypot": "# A comment right above a definition belongs to its chunk.\ndef hypot(a, b):",
			},
		},
		{
			file: "geom/__init__.py",
			want: []pySpan{{"geom", codeindex.KindModule, 1, 6}},
		},
		{
			file: "main.py",
			want: []pySpan{
				{"main", codeindex.KindModule, 1, 5},
				{"main.main", codeindex.KindFunc, 8, 14},
				{"main", codeindex.KindModule, 17, 18},
			},
			contains: map[string]string{"main.main": "helper = lambda x: clamp(x, 0, 1)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "pypkg", filepath.FromSlash(tt.file)))
			require.NoError(t, err)
			chunks, err := codeindex.ChunkPython(tt.file, src, codeindex.DefaultLineWindow, codeindex.DefaultLineOverlap)
			require.NoError(t, err)
			require.Equal(t, tt.want, pySpans(chunks))

			lines := strings.Split(string(src), "\n")
			bySymbol := map[string]codeindex.Chunk{}
			for _, c := range chunks {
				require.Equal(t, tt.file, c.Path)
				require.Equal(t, strings.Join(lines[c.StartLine-1:c.EndLine], "\n"), c.Content, c.Symbol)
				if _, ok := bySymbol[c.Symbol]; !ok {
					bySymbol[c.Symbol] = c
				}
			}
			for sym, first := range tt.firstLines {
				got, _, _ := strings.Cut(bySymbol[sym].Content, "\n")
				require.Equal(t, first, got, sym)
			}
			for sym, text := range tt.contains {
				require.Contains(t, bySymbol[sym].Content, text, sym)
			}
			for sym, h := range tt.heads {
				require.Equal(t, h, bySymbol[sym].Head, sym)
			}
			for _, c := range chunks {
				require.True(t, strings.HasPrefix(c.Content, c.Head), c.Symbol)
				if c.Kind == codeindex.KindModule {
					require.Empty(t, c.Head, "module code has no head")
				}
			}
		})
	}
}

func TestChunkPythonEdgeCases(t *testing.T) {
	var long strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&long, "x%d = %d\n", i, i)
	}
	tests := []struct {
		name           string
		src            string
		window, overlp int
		want           []pySpan
	}{
		{
			name:   "top-level code split into windows",
			src:    long.String(),
			window: 4, overlp: 1,
			want: []pySpan{
				{"m", codeindex.KindModule, 1, 4},
				{"m", codeindex.KindModule, 4, 7},
				{"m", codeindex.KindModule, 7, 10},
			},
		},
		{
			name: "nested class, async method, class attribute after a method",
			src: "class A:\n" + //                       1
				"    class B:\n" + //                    2
				"        def f(self):\n" + //            3
				"            return 1\n" + //            4
				"\n" + //                                5
				"    async def g(self):\n" + //          6
				"        def inner():\n" + //            7
				"            pass\n" + //                8
				"        return inner\n" + //            9
				"\n" + //                                10
				"    late = 2\n", //                     11
			window: 60, overlp: 10,
			want: []pySpan{
				{"m.A", codeindex.KindClass, 1, 1},
				{"m.A.B", codeindex.KindClass, 2, 2},
				{"m.A.B.f", codeindex.KindMethod, 3, 4},
				{"m.A.g", codeindex.KindMethod, 6, 9},
				{"m", codeindex.KindModule, 11, 11},
			},
		},
		{
			name:   "empty file",
			src:    "",
			window: 60, overlp: 10,
			want: []pySpan{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks, err := codeindex.ChunkPython("m.py", []byte(tt.src), tt.window, tt.overlp)
			require.NoError(t, err)
			require.Equal(t, tt.want, pySpans(chunks))
		})
	}
}

func TestChunkPythonHeadsEndAtTheColonOrTheDocstring(t *testing.T) {
	tests := []struct {
		name string
		src  string
		sym  string
		want string
	}{
		{
			name: "signature over lines with colons in defaults and a return annotation",
			src: "def f(\n" +
				"    a: int = 1,\n" +
				"    key=lambda x: x,\n" +
				"    sep: str = \":\",\n" +
				") -> dict[str, int]:\n" +
				"    \"\"\"Doc\n" +
				"    over lines.\"\"\"\n" +
				"    return {}\n",
			sym:  "m.f",
			want: "def f(\n    a: int = 1,\n    key=lambda x: x,\n    sep: str = \":\",\n) -> dict[str, int]:\n    \"\"\"Doc\n    over lines.\"\"\"",
		},
		{
			name: "one-line function is its own head",
			src:  "def g(): return 1\n",
			sym:  "m.g",
			want: "def g(): return 1",
		},
		{
			name: "a comment before the docstring",
			src:  "def h():\n    # why\n    \"\"\"Still the docstring.\"\"\"\n    pass\n",
			sym:  "m.h",
			want: "def h():\n    # why\n    \"\"\"Still the docstring.\"\"\"",
		},
		{
			name: "a string after the first statement is no docstring",
			src:  "def k():\n    x = 1\n    \"\"\"Not a docstring.\"\"\"\n",
			sym:  "m.k",
			want: "def k():",
		},
		{
			name: "decorated async function with a single-quoted docstring",
			src:  "@dec(1)\nasync def a():\n    'Fetch.'\n    await b()\n",
			sym:  "m.a",
			want: "@dec(1)\nasync def a():\n    'Fetch.'",
		},
		{
			name: "implicitly concatenated docstring",
			src:  "def c():\n    \"Part one, \" \\\n    \"part two.\"\n    pass\n",
			sym:  "m.c",
			want: "def c():\n    \"Part one, \" \\\n    \"part two.\"",
		},
		{
			name: "class bases over lines, docstring, attributes left out",
			src:  "class C(\n    Base,\n    metaclass=M,\n):\n    \"\"\"C doc.\"\"\"\n    x = 1\n\n    def m(self):\n        pass\n",
			sym:  "m.C",
			want: "class C(\n    Base,\n    metaclass=M,\n):\n    \"\"\"C doc.\"\"\"",
		},
		{
			name: "class that is only a docstring",
			src:  "class E(Exception):\n    \"\"\"Raised.\"\"\"\n",
			sym:  "m.E",
			want: "class E(Exception):\n    \"\"\"Raised.\"\"\"",
		},
		{
			name: "nested function's docstring is not its parent's",
			src:  "def outer():\n    def inner():\n        \"\"\"Inner.\"\"\"\n    return inner\n",
			sym:  "m.outer",
			want: "def outer():",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks, err := codeindex.ChunkPython("m.py", []byte(tt.src), 60, 10)
			require.NoError(t, err)
			var got *codeindex.Chunk
			for i := range chunks {
				if chunks[i].Symbol == tt.sym {
					got = &chunks[i]
				}
			}
			require.NotNil(t, got, "no chunk %s in %v", tt.sym, pySpans(chunks))
			require.Equal(t, tt.want, got.Head)
			require.True(t, strings.HasPrefix(got.Content, got.Head))
		})
	}
}

func TestChunkPythonSyntaxError(t *testing.T) {
	tests := []string{
		"def f(:\n    pass\n",
		"x = (1,\n",
	}
	for _, src := range tests {
		t.Run(src, func(t *testing.T) {
			chunks, err := codeindex.ChunkPython("bad.py", []byte(src), 60, 10)
			var pe *codeindex.ParseError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, "bad.py", pe.Path)
			require.Nil(t, chunks)
		})
	}
}

// call builds the expected NameCall of the fixture.
func call(path string, line int, caller, callee string, dynamic, resolved bool) codeindex.NameCall {
	return codeindex.NameCall{
		Call:        codeindex.Call{Path: path, Line: line, Caller: caller, Callee: callee, Dynamic: dynamic},
		Approximate: true,
		Resolved:    resolved,
	}
}

func TestPythonCalls(t *testing.T) {
	g, err := codeindex.PythonCalls(context.Background(), filepath.Join("testdata", "pypkg"))
	require.NoError(t, err)

	const shapes, util = "geom/shapes.py", "geom/util.py"
	tests := []struct {
		name    string
		callers bool // Callers, else Callees
		of      string
		want    []codeindex.NameCall
	}{
		{
			name: "a function called from two places", callers: true, of: "geom.util.rounded",
			want: []codeindex.NameCall{
				call(shapes, 29, "geom.shapes.Circle.area", "geom.util.rounded", false, true),
				call(shapes, 41, "geom.shapes.Square.area", "geom.util.rounded", false, true),
			},
		},
		{
			name: "bare name: callers of every definition so named", callers: true, of: "rounded",
			want: []codeindex.NameCall{
				call(shapes, 29, "geom.shapes.Circle.area", "geom.util.rounded", false, true),
				call(shapes, 41, "geom.shapes.Square.area", "geom.util.rounded", false, true),
			},
		},
		{
			name: "self.area() goes to its own class only", callers: true, of: "geom.shapes.Square.area",
			want: []codeindex.NameCall{
				call(shapes, 44, "geom.shapes.Square.describe", "geom.shapes.Square.area", true, true),
				call(shapes, 51, "geom.shapes.total_area", "geom.shapes.Square.area", true, true),
			},
		},
		{
			name: "s.area() on an unknown object goes to every area", callers: false, of: "geom.shapes.total_area",
			want: []codeindex.NameCall{
				call(shapes, 51, "geom.shapes.total_area", "geom.shapes.Circle.area", true, true),
				call(shapes, 51, "geom.shapes.total_area", "geom.shapes.Square.area", true, true),
				call(shapes, 51, "geom.shapes.total_area", "sum", false, false),
			},
		},
		{
			name: "an unresolved external call", callers: false, of: "geom.util.hypot",
			want: []codeindex.NameCall{
				call(util, 20, "geom.util.hypot", "math.sqrt", true, false),
			},
		},
		{
			name: "calls in a lambda belong to the enclosing function", callers: true, of: "geom.util.clamp",
			want: []codeindex.NameCall{
				call(shapes, 24, "geom.shapes.Circle.__init__", "geom.util.clamp", false, true),
				call(shapes, 37, "geom.shapes.Square.__init__", "geom.util.clamp", false, true),
				call("main.py", 9, "main.main", "geom.util.clamp", false, true),
				call("main.py", 13, "main.main", "geom.util.clamp", false, true),
			},
		},
		{
			name: "a class name stands for its constructor", callers: true, of: "geom.shapes.Square",
			want: []codeindex.NameCall{
				call(shapes, 47, "geom.shapes.Square.scaled", "geom.shapes.Square", false, true),
				call("main.py", 10, "main.main", "geom.shapes.Square", false, true),
			},
		},
		{
			name: "a decorator call runs in the class body", callers: false, of: "geom.shapes.Square",
			want: []codeindex.NameCall{
				call(shapes, 39, "geom.shapes.Square", "functools.lru_cache", true, false),
			},
		},
		{
			name: "module-level code", callers: false, of: "main",
			want: []codeindex.NameCall{
				call("main.py", 18, "main", "main.main", false, true),
				call("main.py", 18, "main", "sys.exit", true, false),
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

func TestPythonCallsUnknownName(t *testing.T) {
	g, err := codeindex.PythonCalls(context.Background(), filepath.Join("testdata", "pypkg"))
	require.NoError(t, err)
	for _, name := range []string{"sqrt", "math.sqrt", "geom.nothing"} {
		t.Run(name, func(t *testing.T) {
			_, err := g.Callers(name)
			var ue *codeindex.UnknownFunctionError
			require.ErrorAs(t, err, &ue)
			require.Equal(t, name, ue.Name)
		})
	}
}

func TestIndexPython(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS(filepath.Join("testdata", "pypkg"))))
	ctx := context.Background()
	ix, err := codeindex.Open(ctx, root)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ix.Close()) })
	st, err := ix.Update(ctx)
	require.NoError(t, err)
	require.Zero(t, st.ParseErrors)
	require.Equal(t, 21, st.Chunks)

	hits, err := ix.Search(ctx, "hypot", codeindex.WithMode(codeindex.BM25), codeindex.WithLimit(1))
	require.NoError(t, err)
	require.Len(t, hits, 1)
	require.Equal(t, codeindex.Hit{Path: "geom/util.py", StartLine: 18, EndLine: 20, Symbol: "geom.util.hypot", Kind: codeindex.KindFunc, Score: hits[0].Score}, hits[0])
}
