package guides_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// programGuides are the guides whose code must come from a program of
// their own, in the directory named after the guide. Any other guide with
// such a directory is checked the same way.
var programGuides = []string{
	"approval-sqlite", "approve-tool-call", "from-langgraph", "map-reduce", "postgres-processes", "real-model", "remote-graph", "streaming",
}

// goBlocks returns the fenced ```go blocks of a Markdown file, without
// their fences.
func goBlocks(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var blocks []string
	var cur []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.TrimSpace(line) == "```go":
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, line)
		}
	}
	require.NoError(t, sc.Err())
	require.False(t, in, "%s: a ```go block is not closed", path)
	return blocks
}

// programSource returns the Go files of dir, concatenated.
func programSource(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "%s has no Go files", dir)
	var src strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		src.Write(b)
		src.WriteString("\n")
	}
	return src.String()
}

// Every ```go block of a guide is quoted verbatim from its program, which
// go test runs: the code a reader copies is code that works.
func TestGuidesQuoteTheirPrograms(t *testing.T) {
	guides, err := filepath.Glob("*.md")
	require.NoError(t, err)
	for _, g := range guides {
		name := strings.TrimSuffix(g, ".md")
		if name == "README" {
			continue
		}
		_, err := os.Stat(name)
		required := slices.Contains(programGuides, name)
		if err != nil && !required {
			continue
		}
		t.Run(name, func(t *testing.T) {
			require.NoError(t, err, "the guide %s has no program directory %s/", g, name)
			blocks := goBlocks(t, g)
			require.NotEmpty(t, blocks, "%s quotes no Go code", g)
			src := programSource(t, name)
			for i, b := range blocks {
				require.True(t, strings.Contains(src, b),
					"%s: Go block %d is not a verbatim part of %s/*.go (copy it from there again):\n%s", g, i+1, name, b)
			}
		})
	}
	for _, name := range programGuides {
		_, err := os.Stat(name + ".md")
		require.NoError(t, err, "guide %s.md is missing", name)
	}
}

// The index links every guide of the directory.
func TestIndexLinksEveryGuide(t *testing.T) {
	index, err := os.ReadFile("README.md")
	require.NoError(t, err)
	guides, err := filepath.Glob("*.md")
	require.NoError(t, err)
	for _, g := range guides {
		if g != "README.md" {
			require.Contains(t, string(index), "]("+g+")", "README.md does not link %s", g)
		}
	}
}

// tableRow is a row of a Markdown table whose first cell holds code spans.
var tableRow = regexp.MustCompile("^\\|([^|]*)\\|")

// readmePackages returns the package paths named in the first column of
// the table of the README's "## Packages" section, relative to the
// repository root ("agentgraph" for the root package).
func readmePackages(t *testing.T, readme string) []string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## Packages\n")
	require.True(t, ok, "the README has no Packages section")
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var paths []string
	for line := range strings.SplitSeq(section, "\n") {
		m := tableRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, span := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(m[1], -1) {
			paths = append(paths, span[1])
		}
	}
	require.NotEmpty(t, paths, "the Packages section has no table of packages")
	return paths
}

// goList returns the packages of the module in dir, relative to the
// repository's root module path, leaving out internal and testdata ones.
func goList(t *testing.T, dir string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("go list in %s: %v\n%s", dir, err, ee.Stderr)
	}
	require.NoError(t, err)
	const root = "github.com/agentgraph/agentgraph"
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(p, root+"/")
		switch {
		case p == root:
			rel = "agentgraph"
		case !ok:
			t.Fatalf("package %s is outside %s", p, root)
		}
		parts := strings.Split(rel, "/")
		if slices.Contains(parts, "internal") || slices.Contains(parts, "testdata") {
			continue
		}
		pkgs = append(pkgs, rel)
	}
	return pkgs
}

// workModules returns the folders of the modules go.work uses, relative to
// the repository's root.
func workModules(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "work", "edit", "-json", "../../go.work")
	out, err := cmd.Output()
	require.NoError(t, err)
	var work struct{ Use []struct{ DiskPath string } }
	require.NoError(t, json.Unmarshal(out, &work))
	var dirs []string
	for _, u := range work.Use {
		dirs = append(dirs, u.DiskPath)
	}
	require.NotEmpty(t, dirs)
	return dirs
}

// The README's package table names every package of the workspace's modules
// (internal ones aside), and nothing else. A cell "dir/*" stands for the
// packages directly under dir.
func TestReadmeListsEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	listed := readmePackages(t, string(readme))
	var pkgs []string
	for _, dir := range workModules(t) {
		pkgs = append(pkgs, goList(t, filepath.Join("../..", dir))...)
	}
	covered := func(pkg string) bool {
		for _, l := range listed {
			if l == pkg {
				return true
			}
			if dir, ok := strings.CutSuffix(l, "/*"); ok && filepath.Dir(pkg) == dir {
				return true
			}
		}
		return false
	}
	for _, p := range pkgs {
		require.True(t, covered(p), "README.md: the package table does not list %s", p)
	}
	for _, l := range listed {
		dir, wild := strings.CutSuffix(l, "/*")
		found := slices.ContainsFunc(pkgs, func(p string) bool { return p == l || wild && filepath.Dir(p) == dir })
		require.True(t, found, "README.md: the package table lists %s, which is no package", l)
	}
}
