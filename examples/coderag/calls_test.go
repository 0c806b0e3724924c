package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/codeindex"
)

// pythonShop writes a small Python package into a temporary directory and
// returns the directory.
func pythonShop(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"shop/__init__.py": "from .pricing import discount\n",
		"shop/pricing.py": `"""Pricing rules."""


def discount(coupon, subtotal):
    if not coupon:
        return 0
    return percent_off(subtotal, 10)


def percent_off(amount, pct):
    return amount * pct // 100


class Cart:
    def __init__(self):
        self.items = []

    def checkout(self, coupon=None):
        total = sum(self.items)
        return total - discount(coupon, total)
`,
	}
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	return dir
}

func TestCallersAndCalleesOfAPythonPackage(t *testing.T) {
	dir := pythonShop(t)
	tests := []struct {
		cmd, name string
		want      string
	}{
		{"callers", "discount",
			"shop/pricing.py:20  in shop.pricing.Cart.checkout: calls shop.pricing.discount  (approximate: resolved by name)\n"},
		{"callers", "shop.pricing.percent_off",
			"shop/pricing.py:7  in shop.pricing.discount: calls shop.pricing.percent_off  (approximate: resolved by name)\n"},
		{"callees", "shop.pricing.Cart.checkout",
			"shop/pricing.py:19  in shop.pricing.Cart.checkout: calls sum  (approximate: resolved by name; not defined under the root)\n" +
				"shop/pricing.py:20  in shop.pricing.Cart.checkout: calls shop.pricing.discount  (approximate: resolved by name)\n"},
		{"callers", "shop.pricing.Cart.checkout", "no calls of shop.pricing.Cart.checkout under the indexed root\n"},
	}
	for _, tt := range tests {
		t.Run(tt.cmd+" "+tt.name, func(t *testing.T) {
			r := runCLI(t, tt.cmd, tt.name, "--dir", dir)
			require.Equal(t, exitOK, r.code, r)
			require.Equal(t, tt.want, r.stdout)
		})
	}
}

func TestCallersJSONMarksPythonCallsApproximate(t *testing.T) {
	dir := pythonShop(t)
	r := runCLI(t, "callees", "checkout", "--dir", dir, "--json")
	require.Equal(t, exitOK, r.code, r)
	var calls []map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		var c map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c), "line %q", sc.Text())
		calls = append(calls, c)
	}
	require.Equal(t, []map[string]any{
		{"path": "shop/pricing.py", "line": float64(19), "caller": "shop.pricing.Cart.checkout", "callee": "sum",
			"dynamic": false, "approximate": true, "unresolved": true},
		{"path": "shop/pricing.py", "line": float64(20), "caller": "shop.pricing.Cart.checkout", "callee": "shop.pricing.discount",
			"dynamic": false, "approximate": true},
	}, calls)
}

func TestCallersOfAnUnknownNameSayWhyGoDidNotLoad(t *testing.T) {
	dir := pythonShop(t)
	t.Setenv("GOWORK", "off")
	// A Go file outside any module: the Go packages cannot be loaded.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.go"), []byte("package x\n\nfunc F() {}\n"), 0o644))

	r := runCLI(t, "callers", "F", "--dir", dir)
	require.Equal(t, exitError, r.code, r)
	require.Contains(t, r.stderr, `no function named "F" in the Python and JavaScript files, and the Go packages could not be loaded: codeindex: load packages:`)

	// The Python graph still answers.
	r = runCLI(t, "callers", "percent_off", "--dir", dir)
	require.Equal(t, exitOK, r.code, r)
	require.Contains(t, r.stdout, "in shop.pricing.discount: calls shop.pricing.percent_off")
}

func TestGetCallersToolAnswersForPython(t *testing.T) {
	dir := pythonShop(t)
	ix, err := codeindex.Open(t.Context(), dir)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ix.Close()) })
	cb, err := newCodebase(ix)
	require.NoError(t, err)
	tool := toolNamed(t, cb, "get_callers")

	out, err := tool.Call(t.Context(), json.RawMessage(`{"name":"discount"}`))
	require.NoError(t, err)
	require.Equal(t, "shop/pricing.py:20  in shop.pricing.Cart.checkout: calls shop.pricing.discount  (approximate: resolved by name)", out)
}

func TestCallersAndCalleesOfATypeScriptProject(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"src/pricing.ts": "export function percentOff(amount: number, pct: number): number {\n" +
			"  return Math.floor(amount * pct / 100);\n}\n\n" +
			"export function discount(coupon: string, subtotal: number): number {\n" +
			"  return coupon ? percentOff(subtotal, 10) : 0;\n}\n",
		"src/cart.js": "const { discount } = require('./pricing');\n\n" +
			"class Cart {\n  checkout(coupon) {\n    return 100 - discount(coupon, 100);\n  }\n}\n\nmodule.exports = { Cart };\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	r := runCLI(t, "callers", "discount", "--dir", dir, "--json")
	require.Equal(t, exitOK, r.code, r)
	var got []callSite
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var c callSite
		require.NoError(t, json.Unmarshal([]byte(line), &c), line)
		got = append(got, c)
	}
	require.Len(t, got, 1, r.stdout)
	require.Equal(t, "src/cart.js", got[0].Path)
	require.Equal(t, 5, got[0].Line)
	require.True(t, got[0].Approximate)
	require.Contains(t, got[0].Caller, "checkout")

	r = runCLI(t, "callees", "discount", "--dir", dir)
	require.Equal(t, exitOK, r.code, r)
	require.Contains(t, r.stdout, "src/pricing.ts:6")
	require.Contains(t, r.stdout, "percentOff  (approximate: resolved by name)")
}

func TestCallersInAModuleWithABrokenPackageAnswerAndSayWhatIsMissing(t *testing.T) {
	t.Setenv("GOWORK", "off")
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":           "module example.com/part\n\ngo 1.26\n",
		"good/good.go":     "package good\n\ntype Sink interface{ Put(int) }\n\nfunc A(s Sink) int { s.Put(1); return B() }\n\nfunc B() int { return 1 }\n",
		"broken/broken.go": "package broken\n\nfunc F() int { return undefined }\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	r := runCLI(t, "callers", "good.B", "--dir", dir)
	require.Equal(t, exitOK, r.code, r)
	require.Equal(t, "good/good.go:5  in good.A: calls good.B\n", r.stdout)
	require.Contains(t, r.stderr, "the Go call graph is partial: 1 package(s) did not load and are left out, so calls in or into them are missing: example.com/part/broken")

	r = runCLI(t, "callees", "good.A", "--dir", dir)
	require.Equal(t, exitOK, r.code, r)
	require.Equal(t, "good/good.go:5  in good.A: calls good.B\n"+
		"good/good.go:5  in good.A: calls good.Sink.Put  (dynamic: through an interface, a function value or an attribute; unresolved: no implementation or matching function in the loaded packages)\n", r.stdout)

	r = runCLI(t, "callers", "broken.F", "--dir", dir)
	require.Equal(t, exitError, r.code, r)
	require.Contains(t, r.stderr, `no function named "broken.F"; some Go packages could not be loaded and are left out of the call graph: codeindex: load packages:`)
}
