package repolinks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRepositoryReferencesStayInside is the check itself: every link and
// path reference of the repository's text names something inside it.
func TestRepositoryReferencesStayInside(t *testing.T) {
	root, err := Root(".")
	require.NoError(t, err)
	files, err := Files(root)
	require.NoError(t, err)
	require.Contains(t, files, "README.md", "the file list must cover the repository")

	var problems []string
	for _, f := range files {
		ps, err := Check(root, f)
		require.NoError(t, err)
		for _, p := range ps {
			problems = append(problems, p.String())
		}
	}
	require.Empty(t, problems, "references that a clone of the repository cannot follow:\n%s", strings.Join(problems, "\n"))
}

// writeTree creates the files of tree (slash paths to contents) under a new
// temporary directory and returns it.
func writeTree(t *testing.T, tree map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range tree {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return root
}

func TestCheck(t *testing.T) {
	// Every case checks one file (tt.file, holding tt.text) of a small
	// tree that also holds the files of base.
	base := map[string]string{
		"README.md":             "# Title\n\n## Two words\n",
		"docs/design.md":        "# Design\n\n## 3. Checkpoints\n\n## Notes\n\n## Notes\n",
		"bench/peers/RESULT.md": "results\n",
	}
	tests := []struct {
		name string
		file string
		text string
		want []string // Problem strings
	}{
		{"a link to an existing file", "docs/a.md", "See [design](design.md).\n", nil},
		{"a link to an existing directory", "docs/a.md", "See [bench](../bench/).\n", nil},
		{"a link that leaves the root", "docs/a.md", "See [x](../../shared/x.md).\n",
			[]string{"docs/a.md:1: ../../shared/x.md: " + whyEscapes}},
		{"a link to a missing file", "docs/a.md", "intro\nSee [x](missing.md).\n",
			[]string{"docs/a.md:2: missing.md: " + whyMissing}},
		{"a root-relative link to an existing file", "docs/a.md", "See [r](/README.md).\n", nil},
		{"a link to an existing heading", "docs/a.md", "See [c](design.md#3-checkpoints).\n", nil},
		{"a link to a repeated heading", "docs/a.md", "See [n](design.md#notes-1).\n", nil},
		{"a link to a missing heading", "docs/a.md", "See [c](design.md#4-checkpoints).\n",
			[]string{"docs/a.md:1: design.md#4-checkpoints: " + whyNoHeading}},
		{"a link to a heading of the same file", "docs/a.md", "# Top part\n\n[t](#top-part)\n", nil},
		{"a reference definition that leaves the root", "docs/a.md", "[x]: ../../x.md\n",
			[]string{"docs/a.md:1: ../../x.md: " + whyEscapes}},
		{"a URL", "docs/a.md", "See [LangGraph](https://github.com/langchain-ai/langgraph/blob/main/README.md).\n", nil},
		{"a link inside a code span", "docs/a.md", "Write `[x](../../x.md)` for a link.\n",
			[]string{"docs/a.md:1: ../../x.md: " + whyEscapes}},
		{"a path of another project in a code block's output", "docs/a.md", "```\n$ coderag search x\npricing/pricing.go:13\n```\n", nil},
		{"the same path in prose", "docs/a.md", "Read pricing/pricing.go first.\n",
			[]string{"docs/a.md:1: pricing/pricing.go: " + whyMissing}},
		{"a ../ path in a code block that leaves the root", "README.md", "```sh\ncp -r ../shared/bench /tmp/b\n```\n",
			[]string{"README.md:2: ../shared/bench: " + whyEscapes}},
		{"a ../ path in text that names nothing", "docs/a.md", "From `../shared/docs/arch.md`.\n",
			[]string{"docs/a.md:1: ../shared/docs/arch.md: " + whyMissing}},
		{"a ../ path that exists", "docs/a.md", "See ../bench/peers/RESULT.md §2.\n", nil},
		{"a ../ sibling name", "docs/a.md", "A symlink to ../outside.\n", nil},
		{"a ../ path to a missing file of no kind of ours", "docs/a.md", "Resolving ../etc/passwd fails.\n", nil},
		{"a ../ path to a missing directory", "docs/a.md", "cd ../shared/bench\n", nil},
		{"a path to a file of a sibling checkout", "docs/a.md", "From shared/docs/reference/spec.md §7.\n",
			[]string{"docs/a.md:1: shared/docs/reference/spec.md: " + whyMissing}},
		{"a path from the root", "docs/a.md", "See bench/peers/RESULT.md.\n", nil},
		{"a path from the file's directory", "bench/x.md", "See peers/RESULT.md.\n", nil},
		{"a path to a YAML file", "docs/a.md", "Write dir/.retrai.yml.\n", nil},
		{"a path inside a URL", "docs/a.md", "https://example.com/shared/docs/spec.md\n", nil},
		{"a ../ path in a Go comment", "bench/main.go", "// Package main runs ../shared/bench/run.sh.\npackage main\n",
			[]string{"bench/main.go:1: ../shared/bench/run.sh: " + whyMissing}},
		{"a path in a Go block comment", "bench/main.go", "package main\n\n/*\nsee shared/docs/spec.md\n*/\n",
			[]string{"bench/main.go:4: shared/docs/spec.md: " + whyMissing}},
		{"a ../ path in a Go string", "bench/main.go", "package main\n\nconst p = \"../../outside/secret.txt\"\n", nil},
		{"a ../ path in a shell script", "scripts/x.sh", "#!/bin/sh\n. ../../lib/env.sh\n",
			[]string{"scripts/x.sh:2: ../../lib/env.sh: " + whyEscapes}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := map[string]string{tt.file: tt.text}
			for k, v := range base {
				if k != tt.file {
					tree[k] = v
				}
			}
			root := writeTree(t, tree)
			ps, err := Check(root, tt.file)
			require.NoError(t, err)
			var got []string
			for _, p := range ps {
				got = append(got, p.String())
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestFilesWithoutGit(t *testing.T) {
	root := writeTree(t, map[string]string{
		"README.md":                   "x",
		"a/b.go":                      "package b",
		".ci/run":                     "#!/bin/sh",
		"notes.txt":                   "x",
		".git/HEAD.md":                "x",
		"web/node_modules/dep/x.md":   "x",
		"bench/peers/eino/go.mod":     "module x",
		"bench/peers/langgraph/b.mjs": "x",
	})
	got, err := walkFiles(root)
	require.NoError(t, err)
	var kept []string
	for _, f := range got {
		if checked(f) {
			kept = append(kept, f)
		}
	}
	require.ElementsMatch(t, []string{".ci/run", "README.md", "a/b.go", "bench/peers/langgraph/b.mjs"}, kept)
}

func TestRootFindsTheModule(t *testing.T) {
	root, err := Root(".")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "internal", "repolinks", "doc.go"))
}
