package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// chatServer is an OpenAI-compatible server answering Codur's default
// prompts: the pre-plan leaves the task to planning, the plan delegates
// to llm:default, and the agent, offered tools, patches main.py once and
// then reports.
func chatServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Messages []map[string]any `json:"messages"`
			Tools    []any            `json:"tools"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		system, _ := body.Messages[0]["content"].(string)
		hasTool := false
		for _, m := range body.Messages {
			hasTool = hasTool || m["role"] == "tool"
		}
		var reply map[string]any
		switch {
		case strings.HasPrefix(system, "You classify a task"):
			reply = map[string]any{"role": "assistant", "content": `{"task_type": "code_change", "confidence": 0.97, "action": "plan"}`}
		case strings.HasPrefix(system, "You are the planner"):
			reply = map[string]any{"role": "assistant", "content": `{"action": "delegate", "agent": "llm:default", "reasoning": "a fix"}`}
		case len(body.Tools) > 0 && !hasTool:
			reply = map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "c1", "type": "function",
				"function": map[string]any{"name": "file_patch", "arguments": `{"path": "main.py", "old_text": "a - b", "new_text": "a + b"}`}}}}
		default:
			reply = map[string]any{"role": "assistant", "content": "Fixed: add, not subtract."}
		}
		finish := "stop"
		if reply["tool_calls"] != nil {
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, chunk := range []map[string]any{
			{"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": []any{map[string]any{"index": 0, "delta": reply}}},
			{"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}},
		} {
			b, _ := json.Marshal(chunk)
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTaskWithAModelFixesAndVerifies(t *testing.T) {
	srv := chatServer(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.py"), []byte("def add(a, b):\n    return a - b\n\n\nprint(add(2, 3))\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "expected.txt"), []byte("5\n"), 0o644))
	code, out, errOut := runCmd(t, "fix add in main.py", "--cwd", dir, "--model", "openai-compatible:m@"+srv.URL+"/v1")
	require.Equal(t, exitOK, code, errOut)
	for _, line := range []string{
		"verifying with: python3 main.py",
		"[textual_pre_plan] continue",
		"[llm_pre_plan] continue (confidence 0.97): code changes always go to full planning",
		"[llm_plan] delegate → llm:default: a fix",
		"llm:default round 1: native calls file_patch",
		"verification 1 passed",
		"Fixed: add, not subtract.",
	} {
		require.Contains(t, out, line)
	}
	b, err := os.ReadFile(filepath.Join(dir, "main.py"))
	require.NoError(t, err)
	require.Contains(t, string(b), "return a + b")
}

func TestTaskWithAConfigUsesItsProfiles(t *testing.T) {
	srv := chatServer(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.py"), []byte("def add(a, b):\n    return a - b\n\n\nprint(add(2, 3))\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "expected.txt"), []byte("5\n"), 0o644))
	cfg := filepath.Join(t.TempDir(), "codur.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(
		"default_agent: llm:default\nprofiles:\n  default: {model: \"openai-compatible:m@%s/v1\"}\nruntime: {max_iterations: 2}\n", srv.URL)), 0o644))
	code, out, errOut := runCmd(t, "--config", cfg, "--cwd", dir, "fix add in main.py")
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out, "verification 1 passed")

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("default_agent: agent:x\nagents:\n  x: {command: \"true\"}\n"), 0o644))
	code, _, errOut = runCmd(t, "--config", bad, "--cwd", dir, "fix add in main.py")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "must be a profile")
}
