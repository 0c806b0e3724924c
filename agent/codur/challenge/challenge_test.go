package challenge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/agent/codur/challenge"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/tools"
)

func TestBundledChallengesPassOfflineExceptTheImpossibleOne(t *testing.T) {
	chs, err := challenge.Bundled()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(chs), 13)
	var mu sync.Mutex
	var progressed []string
	rep, err := challenge.Run(t.Context(), chs, challenge.Offline, challenge.WithParallel(2),
		challenge.WithModelName("scripted (offline)"),
		challenge.WithProgress(func(r challenge.Result) { mu.Lock(); progressed = append(progressed, r.Name); mu.Unlock() }))
	require.NoError(t, err)
	require.Len(t, progressed, len(chs))
	byName := map[string]challenge.Result{}
	for _, r := range rep.Results {
		byName[r.Name] = r
		if r.Name == "impossible" {
			continue
		}
		require.True(t, r.Passed, "%s: %+v", r.Name, r)
		require.Empty(t, r.Error, r.Name)
	}
	imp := byName["impossible"]
	require.False(t, imp.Passed)
	require.Equal(t, "output mismatch after 3 iterations (the iteration limit)", imp.Error, "it fails cleanly, saying why")
	require.Equal(t, 3, imp.Iterations)
	require.Equal(t, len(chs)-1, rep.Passed)
	require.Equal(t, 1, rep.Failed)

	// Every phase decides at least one challenge, and repairs fire alone
	// and combined.
	phases := map[codur.Phase]bool{}
	for _, r := range rep.Results {
		phases[r.DecidedBy] = true
	}
	require.True(t, phases[codur.PhaseTextual] && phases[codur.PhasePrePlan] && phases[codur.PhasePlan], "%v", phases)
	require.Equal(t, codur.PhaseTextual, byName["move_file"].DecidedBy)
	require.Zero(t, byName["move_file"].ModelCalls)
	// A change beside an expected output is never the quick
	// classification's to make: the full planning copies the file.
	require.Equal(t, codur.PhasePlan, byName["copy_config"].DecidedBy)
	require.Equal(t, 2, byName["copy_config"].ModelCalls)
	require.Equal(t, codur.PhasePrePlan, byName["show_program"].DecidedBy)
	require.Equal(t, []string{"off_by_one_range+remove_percent_division"}, byName["two_bugs"].Repairs)
	require.Equal(t, []string{"comparison_boundary+comparison_boundary"}, byName["boundary_grades"].Repairs)
	require.Equal(t, 2, byName["retry_after_failure"].Iterations)

	md := rep.Markdown()
	require.Contains(t, md, fmt.Sprintf("%d/%d passed", len(chs)-1, len(chs)))
	require.Contains(t, md, "| impossible | FAIL | 3 |")
	require.Contains(t, md, "| output mismatch after 3 iterations (the iteration limit) |")
	require.Contains(t, string(raw0(t, rep)), `"error": "output mismatch after 3 iterations (the iteration limit)"`)
	raw, err := rep.JSON()
	require.NoError(t, err)
	var back challenge.Report
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, rep.Results, back.Results)
}

func TestOfflineNeedsAScript(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"prompt.txt": "fix it", "main.py": "print(1)\n", "expected.txt": "2\n"})
	chs, err := challenge.Load(dir)
	require.NoError(t, err)
	rep, err := challenge.Run(t.Context(), chs, challenge.Offline)
	require.NoError(t, err)
	require.False(t, rep.Results[0].Passed)
	require.Contains(t, rep.Results[0].Error, "offline.json")
}

func TestCopyLeavesOutSymlinksAndChallengeFiles(t *testing.T) {
	src := t.TempDir()
	write(t, src, map[string]string{"prompt.txt": "p", "offline.json": "[]", "main.py": "x", "expected.txt": "y", "sub/data.txt": "d"})
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(src, "leak")))
	chs, err := challenge.Load(src)
	require.NoError(t, err)
	require.Equal(t, filepath.Base(src), chs[0].Name)
	dst := t.TempDir()
	require.NoError(t, chs[0].CopyTo(dst))
	var got []string
	filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			rel, _ := filepath.Rel(dst, p)
			got = append(got, rel)
		}
		return nil
	})
	require.ElementsMatch(t, []string{"main.py", "expected.txt", "sub/data.txt"}, got)
}

func TestLoadRejectsAFolderWithoutChallenges(t *testing.T) {
	_, err := challenge.Load(t.TempDir())
	require.Error(t, err)
	dir := t.TempDir()
	write(t, dir, map[string]string{"prompt.txt": "p", "challenge.json": "{bad"})
	_, err = challenge.Load(dir)
	require.Error(t, err)
}

func TestRunStopsWhenCancelled(t *testing.T) {
	chs, err := challenge.Bundled()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = challenge.Run(ctx, chs, challenge.Offline)
	require.ErrorIs(t, err, context.Canceled)
}

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// openAIServer is an OpenAI-compatible chat-completions server playing
// Codur's roles, told apart by the system prompts of rolePrompts: the
// pre-plan leaves the task to planning, the plan delegates, and the agent
// patches main.py with a native tool call, then reports.
type openAIServer struct {
	*httptest.Server
	mu    sync.Mutex
	roles []string
}

var rolePrompts = codur.Prompts{PrePlan: "ROLE=preplan {task}", Plan: "ROLE=plan {task}", Agent: "ROLE=agent {workspace}"}

func (s *openAIServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Messages []map[string]any `json:"messages"`
		Stream   bool             `json:"stream"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	system, _ := body.Messages[0]["content"].(string)
	role, _, _ := strings.Cut(strings.TrimPrefix(system, "ROLE="), " ")
	hasTool := false
	for _, m := range body.Messages {
		hasTool = hasTool || m["role"] == "tool"
	}
	s.mu.Lock()
	s.roles = append(s.roles, role)
	s.mu.Unlock()
	var reply map[string]any
	switch {
	case role == "preplan":
		reply = map[string]any{"role": "assistant", "content": `{"task_type": "code_change", "confidence": 0.99, "action": "plan"}`}
	case role == "plan":
		reply = map[string]any{"role": "assistant", "content": `{"action": "delegate", "agent": "llm:default"}`}
	case role == "agent" && !hasTool:
		reply = map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
			"index": 0, "id": "call_1", "type": "function",
			"function": map[string]any{"name": "file_patch", "arguments": `{"path": "main.py", "old_text": "n % 2 == 1", "new_text": "n % 2 == 0"}`},
		}}}
	default:
		reply = map[string]any{"role": "assistant", "content": "Fixed the parity test."}
	}
	finish := "stop"
	if reply["tool_calls"] != nil {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
	if !body.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "model": "test-model", "usage": usage,
			"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": reply}}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, chunk := range []map[string]any{
		{"id": "c", "object": "chat.completion.chunk", "model": "test-model", "choices": []any{map[string]any{"index": 0, "delta": reply}}},
		{"id": "c", "object": "chat.completion.chunk", "model": "test-model", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}},
		{"id": "c", "object": "chat.completion.chunk", "model": "test-model", "choices": []any{}, "usage": usage},
	} {
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func TestChallengeOverAnOpenAICompatibleServer(t *testing.T) {
	srv := &openAIServer{}
	srv.Server = httptest.NewServer(http.HandlerFunc(srv.serve))
	t.Cleanup(srv.Close)
	all, err := challenge.Bundled()
	require.NoError(t, err)
	var chs []challenge.Challenge
	for _, c := range all {
		if c.Name == "wrong_condition" {
			chs = append(chs, c)
		}
	}
	require.Len(t, chs, 1)
	setup := func(ctx context.Context, _ challenge.Challenge, _ string) (llm.Model, *codur.Registry, error) {
		m, err := llm.New(ctx, "openai-compatible:test-model@"+srv.URL+"/v1", llm.WithMaxAttempts(1))
		if err != nil {
			return nil, nil, err
		}
		reg := codur.NewRegistry()
		return m, reg, reg.Register(codur.AgentInfo{Ref: codur.DefaultAgent}, &codur.ModelAgent{Model: m})
	}
	rep, err := challenge.Run(t.Context(), chs, setup, challenge.WithCodurOptions(codur.WithPrompts(rolePrompts)),
		challenge.WithModelName("openai-compatible:test-model"))
	require.NoError(t, err)
	res := rep.Results[0]
	require.True(t, res.Passed, "%+v", res)
	require.Empty(t, res.Repairs, "the model fixed it, not a local repair")
	require.Equal(t, codur.PhasePlan, res.DecidedBy)
	require.Equal(t, []string{"preplan", "plan", "agent", "agent"}, srv.roles)
	require.Equal(t, 4*120, res.Tokens)
}

func raw0(t *testing.T, rep *challenge.Report) []byte {
	t.Helper()
	raw, err := rep.JSON()
	require.NoError(t, err)
	return raw
}

func TestChallengeToolsComeFromTheToolSource(t *testing.T) {
	// The plan calls the source's tool, which fixes the program; the
	// source is given the challenge's workspace and released after.
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"prompt.txt":   "make main.py print 2",
		"main.py":      "print(1)\n",
		"expected.txt": "2\n",
		"offline.json": `[{"text": "{\"task_type\": \"code_change\", \"confidence\": 0.9, \"action\": \"plan\"}"},
			{"text": "{\"action\": \"tool\", \"tool_calls\": [{\"tool\": \"stamp\", \"args\": {}}]}"}]`,
	})
	chs, err := challenge.Load(dir)
	require.NoError(t, err)
	var released []string
	src := func(_ context.Context, ws string) ([]tools.Tool, func() error, error) {
		stamp := tools.New("stamp", "Fix main.py.", func(context.Context, struct{}) (string, error) {
			return "stamped", os.WriteFile(filepath.Join(ws, "main.py"), []byte("print(2)\n"), 0o644)
		})
		return []tools.Tool{stamp}, func() error { released = append(released, ws); return nil }, nil
	}
	rep, err := challenge.Run(t.Context(), chs, challenge.Offline, challenge.WithTools(src))
	require.NoError(t, err)
	require.True(t, rep.Results[0].Passed, "%+v", rep.Results[0])
	require.Len(t, released, 1)
	require.NotEqual(t, dir, released[0], "the tools work on the temporary copy")

	failing := func(context.Context, string) ([]tools.Tool, func() error, error) {
		return nil, nil, errors.New("no MCP server")
	}
	rep, err = challenge.Run(t.Context(), chs, challenge.Offline, challenge.WithTools(failing))
	require.NoError(t, err)
	require.Equal(t, "tools: no MCP server", rep.Results[0].Error)
}
