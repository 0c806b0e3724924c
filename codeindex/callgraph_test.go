package codeindex_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/codeindex"
)

// loadFixture builds the call graph of testdata/callmod, a module of its
// own, so the repository's go.work must not apply.
func loadFixture(t *testing.T) *codeindex.CallGraph {
	t.Helper()
	t.Setenv("GOWORK", "off")
	g, err := codeindex.LoadCallGraph(context.Background(), "testdata/callmod")
	require.NoError(t, err)
	return g
}

func TestCallGraphAnswersKnownCalls(t *testing.T) {
	g := loadFixture(t)
	const file = "shop/shop.go"
	tests := []struct {
		name  string
		query func(string) ([]codeindex.Call, error)
		of    string
		want  []codeindex.Call
	}{
		{"callers through a function literal name the enclosing function", g.Callers, "shop.Total", []codeindex.Call{
			{Path: file, Line: 33, Caller: "shop.Checkout", Callee: "shop.Total"},
			{Path: file, Line: 42, Caller: "shop.Receipt", Callee: "shop.Total"},
		}},
		{"callees include calls inside function literals", g.Callees, "shop.Checkout", []codeindex.Call{
			{Path: file, Line: 33, Caller: "shop.Checkout", Callee: "shop.Total"},
			{Path: file, Line: 35, Caller: "shop.Checkout", Callee: "shop.tax"},
		}},
		{"interface calls reach every implementation, marked dynamic", g.Callees, "shop.Total", []codeindex.Call{
			{Path: file, Line: 25, Caller: "shop.Total", Callee: "shop.(*Sale).Price", Dynamic: true},
			{Path: file, Line: 25, Caller: "shop.Total", Callee: "shop.Flat.Price", Dynamic: true},
		}},
		{"callers of a value method include calls through its pointer wrapper", g.Callers, "shop.Flat.Price", []codeindex.Call{
			{Path: file, Line: 19, Caller: "shop.(*Sale).Price", Callee: "shop.Flat.Price", Dynamic: true},
			{Path: file, Line: 25, Caller: "shop.Total", Callee: "shop.Flat.Price", Dynamic: true},
		}},
		{"full SSA names resolve", g.Callers, "example.com/callmod/shop.tax", []codeindex.Call{
			{Path: file, Line: 35, Caller: "shop.Checkout", Callee: "shop.tax"},
			{Path: file, Line: 42, Caller: "shop.Receipt", Callee: "shop.tax"},
		}},
		{"a bare name matches every method so named", g.Callees, "Price", []codeindex.Call{
			{Path: file, Line: 19, Caller: "shop.(*Sale).Price", Callee: "shop.(*Sale).Price", Dynamic: true},
			{Path: file, Line: 19, Caller: "shop.(*Sale).Price", Callee: "shop.Flat.Price", Dynamic: true},
		}},
		{"a function nobody calls has no callers", g.Callers, "shop.Receipt", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.query(tt.of)
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tt.want, got))
		})
	}
}

func TestCallGraphReportsUnknownFunction(t *testing.T) {
	g := loadFixture(t)
	_, err := g.Callers("shop.Nope")
	var ue *codeindex.UnknownFunctionError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, "shop.Nope", ue.Name)
}

func TestLoadCallGraphReportsBrokenPackages(t *testing.T) {
	t.Setenv("GOWORK", "off")
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"go.mod":    "module example.com/broken\n\ngo 1.26\n",
		"broken.go": "package broken\n\nfunc F() int { return undefined }\n",
	})
	_, err := codeindex.LoadCallGraph(context.Background(), dir)
	var le *codeindex.LoadError
	require.ErrorAs(t, err, &le)
	require.NotEmpty(t, le.Errors)
}

func TestLoadCallGraphBuildsAPartialGraphAndSaysWhichPackagesFailed(t *testing.T) {
	t.Setenv("GOWORK", "off")
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"go.mod":           "module example.com/part\n\ngo 1.26\n",
		"good/good.go":     "package good\n\nfunc A() int { return B() }\n\nfunc B() int { return 1 }\n",
		"broken/broken.go": "package broken\n\nfunc F() int { return undefined }\n",
	})
	g, err := codeindex.LoadCallGraph(context.Background(), dir)
	require.NoError(t, err)
	le := g.LoadErrors()
	require.NotNil(t, le)
	require.Equal(t, []string{"example.com/part/broken"}, le.Packages)
	require.ErrorContains(t, le, "undefined")
	got, err := g.Callers("good.B")
	require.NoError(t, err)
	require.Equal(t, []codeindex.Call{{Path: "good/good.go", Line: 3, Caller: "good.A", Callee: "good.B"}}, got)
	_, err = g.Callers("broken.F")
	require.ErrorAs(t, err, new(*codeindex.UnknownFunctionError))
}

func TestCallGraphWithEveryPackageLoadedHasNoLoadErrors(t *testing.T) {
	require.Nil(t, loadFixture(t).LoadErrors())
}

func TestCalleesListUnresolvedDynamicCalls(t *testing.T) {
	t.Setenv("GOWORK", "off")
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"go.mod": "module example.com/dyn\n\ngo 1.26\n",
		"dyn.go": `package dyn

// Sink has no implementation anywhere.
type Sink interface{ Put(v int) }

func Send(s Sink, f func(string, bool) float64) {
	s.Put(1)
	_ = f("x", true)
	_ = len("abc")
}
`,
	})
	g, err := codeindex.LoadCallGraph(context.Background(), dir)
	require.NoError(t, err)
	got, err := g.Callees("dyn.Send")
	require.NoError(t, err)
	require.Equal(t, []codeindex.Call{
		{Path: "dyn.go", Line: 7, Caller: "dyn.Send", Callee: "dyn.Sink.Put", Dynamic: true, Unresolved: true},
		{Path: "dyn.go", Line: 8, Caller: "dyn.Send", Callee: "func value f", Dynamic: true, Unresolved: true},
	}, got)
}
