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
