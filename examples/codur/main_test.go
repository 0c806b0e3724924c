package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("CODUR_MODEL", "")
	var out, errb bytes.Buffer
	code := run(t.Context(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestGraphPrintsMermaid(t *testing.T) {
	code, out, _ := runCmd(t, "graph")
	require.Equal(t, exitOK, code)
	for _, node := range []string{"textual_pre_plan", "llm_pre_plan", "llm_plan", "delegate", "execute", "tool", "review"} {
		require.Contains(t, out, node+"["+node+"]")
	}
	require.Contains(t, out, "review -.-> textual_pre_plan")
}

func TestChallengeRunsOfflineAndWritesReports(t *testing.T) {
	dir := t.TempDir()
	md, js := filepath.Join(dir, "r.md"), filepath.Join(dir, "r.json")
	code, out, _ := runCmd(t, "challenge", "-j", "2", "--report", md, "--json", js)
	require.Equal(t, exitError, code, "the impossible challenge fails")
	require.Contains(t, out, "OFFLINE")
	require.Contains(t, out, "16/17 passed")
	b, err := os.ReadFile(md)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), "# Codur challenge report"))
	b, err = os.ReadFile(js)
	require.NoError(t, err)
	require.Contains(t, string(b), `"name": "impossible"`)
}

func TestTaskWithoutModelSaysItIsOffline(t *testing.T) {
	code, out, _ := runCmd(t, "fix main.py", "--cwd", t.TempDir())
	require.Equal(t, exitOK, code)
	require.Contains(t, out, "SCRIPTED")
	require.Contains(t, out, `Your task "fix main.py" was not run`)
}

func TestAgentsListsTheConfiguredRegistry(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "codur.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("default_agent: llm:coder\nprofiles:\n  coder: {model: \"ollama:qwen3\", description: writes code}\nagents:\n  fixer: {command: ./fix.sh, args: [\"{prompt}\"]}\n"), 0o644))
	code, out, errOut := runCmd(t, "agents", "--config", cfg)
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out, "agent:fixer")
	require.Contains(t, out, "llm:coder            ollama:qwen3 — writes code")
}

func TestUsageErrors(t *testing.T) {
	code, _, errOut := runCmd(t)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "Usage:")
	code, _, _ = runCmd(t, "task", "--no-such-flag")
	require.Equal(t, exitUsage, code)
	code, _, _ = runCmd(t, "agents", "--config", filepath.Join(t.TempDir(), "missing.yaml"))
	require.Equal(t, exitError, code)
}

func TestTaskFlagsInAnyOrderAndOneTask(t *testing.T) {
	srv := chatServer(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.py"), []byte("print(1 - 1)\n"), 0o644))
	code, out, errOut := runCmd(t, "--cwd", dir, "explain main.py", "--verbose", "--model", "openai-compatible:m@"+srv.URL+"/v1")
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out, `  model: {"task_type": "code_change"`, "--verbose prints the model's answers")
	code, _, errOut = runCmd(t, "fix", "main.py")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, `codur "fix main.py"`)
}

func TestAgentsOfflineShowsTheScriptedModel(t *testing.T) {
	code, out, errOut := runCmd(t, "agents", "--json")
	require.Equal(t, exitOK, code)
	require.Contains(t, errOut, "no model configured")
	require.JSONEq(t, `[{"ref": "llm:default", "description": "scripted offline model", "detail": "scripted"}]`, out)
}

func TestSandboxFlagIsCheckedAndShown(t *testing.T) {
	code, _, errOut := runCmd(t, "challenge", "--sandbox", "sometimes")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, `sandbox "sometimes": want auto, required or off`)

	cfg := filepath.Join(t.TempDir(), "codur.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("sandbox: bogus\n"), 0o644))
	code, _, errOut = runCmd(t, "fix main.py", "--config", cfg, "--cwd", t.TempDir())
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, `sandbox "bogus"`)

	code, out, _ := runCmd(t, "challenge", "--sandbox", "off", filepath.Join("..", "..", "agent", "codur", "challenge", "testdata", "challenges", "wrong_formula"))
	require.Equal(t, exitOK, code)
	require.Contains(t, out, "(--sandbox off)")
	require.Contains(t, out, "1/1 passed")
}

func TestAgentsOfAConfigNeedNoAPIKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	cfg := filepath.Join(t.TempDir(), "codur.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("default_agent: llm:coder\nprofiles:\n  coder: {model: \"openai:gpt-4o-mini\"}\n"), 0o644))
	code, out, errOut := runCmd(t, "agents", "--config", cfg)
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, "llm:coder            openai:gpt-4o-mini\n", out)
}

func TestChallengeBaselineIsPrintedBesideTheScore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sum")
	for name, content := range map[string]string{
		"prompt.txt":   "Fix the bug in main.py: it should print the sum of 1 to n.",
		"main.py":      "import sys\n\nn = int(sys.argv[1]) if len(sys.argv) > 1 else 10\nprint(sum(range(1, n)))\n",
		"expected.txt": "55\n",
		"offline.json": `[{"text": "{\"task_type\": \"code_change\", \"confidence\": 0.95, \"action\": \"plan\"}"}, {"text": "{\"action\": \"delegate\", \"agent\": \"llm:default\"}"},
			{"text": "", "tool_calls": [{"name": "file_patch", "args": {"path": "main.py", "old_text": "range(1, n)", "new_text": "range(1, n + 1)"}}]}, {"text": "Fixed."}]`,
		"cases/four/args":         "4\n",
		"cases/four/expected.txt": "10\n",
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	js := filepath.Join(t.TempDir(), "r.json")
	code, out, errOut := runCmd(t, "challenge", dir, "--baseline", "--json", js)
	require.Equal(t, exitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "Model: scripted (offline) — 1/1 passed (100%): 1 by the model, 0 by local repairs, 0 by the textual pre-plan, 0 already correct")
	require.Contains(t, out, "Baseline: baseline (a model that changes nothing) — 1/1 passed (100%): 0 by the model, 1 by local repairs, 0 by the textual pre-plan, 0 already correct")
	b, err := os.ReadFile(js)
	require.NoError(t, err)
	require.Contains(t, string(b), `"baseline": {`)
}

func TestSandboxOffSaysNoSandboxFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ok")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, content := range map[string]string{"prompt.txt": "show main.py", "main.py": "print(1)\n", "expected.txt": "1\n", "offline.json": "[]"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	_, out, _ := runCmd(t, "challenge", dir, "--sandbox", "off")
	first, _, _ := strings.Cut(out, "\n")
	require.True(t, strings.HasPrefix(first, "no sandbox (--sandbox off)"), first)
}
