package goals

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExtractCodeBlock(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want string
		ok   bool
	}{
		{"none", "no code here", "", false},
		{"unterminated", "```bash\necho hi\n", "", false},
		{"bash block", "Here:\n```bash\necho hi\n```\n", "echo hi\n", true},
		{"shell block preferred over earlier python", "```python\nprint(1)\n```\n```sh\nexit 0\n```", "exit 0\n", true},
		{"unmarked block preferred over other languages", "```json\n{}\n```\n```\ntrue\n```", "true\n", true},
		{"any block as last resort", "```python\nprint(1)\n```", "print(1)\n", true},
		{"info string after language", "```bash title=eval.sh\necho\n```", "echo\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := extractCodeBlock(tt.text)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseHarnessOutput(t *testing.T) {
	t.Parallel()
	out := "building...\nPASS: builds\nFAIL: prints version: got \"\" want \"1.0\"\n  PASS prints help\nFAIL: exits 0\nnot a PASS: line\n"
	passed, failures := parseHarnessOutput(out)
	require.Equal(t, 2, passed)
	require.Equal(t, []Failure{
		{Name: "prints version", Output: `got "" want "1.0"`},
		{Name: "exits 0", Output: ""},
	}, failures)
}

func TestScanProjectListsFilesAndShowsKeyFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"README.md":               "# Demo\n",
		"cmd/app/main.go":         "package main\n",
		"node_modules/x/index.js": "skipped",
		".git/config":             "skipped",
		"data.bin":                "\x00\x01",
	} {
		writeFile(t, dir, name, content)
	}
	view := scanProject(dir)
	require.Contains(t, view, "Project files:\nREADME.md\ncmd/app/main.go\ndata.bin\n")
	require.Contains(t, view, "=== README.md ===\n# Demo\n")
	require.Contains(t, view, "=== cmd/app/main.go ===\npackage main\n")
	require.NotContains(t, view, "skipped")
	require.NotContains(t, view, "=== data.bin")
}

func TestHarnessCommandUsesShebangInterpreter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		want   []string
	}{
		{"no shebang", "echo hi\n", []string{"bash", "/h"}},
		{"env", "#!/usr/bin/env bash\necho\n", []string{"/usr/bin/env", "bash", "/h"}},
		{"interpreter with argument", "#! /bin/sh -eu\r\necho\n", []string{"/bin/sh", "-eu", "/h"}},
		{"python", "#!/usr/bin/python3\nprint()\n", []string{"/usr/bin/python3", "/h"}},
		{"empty shebang", "#!\necho\n", []string{"bash", "/h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name, args := harnessCommand([]byte(tt.script), "/h")
			require.Equal(t, tt.want, append([]string{name}, args...))
		})
	}
}
