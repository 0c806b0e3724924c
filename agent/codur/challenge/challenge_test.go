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
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/agent/codur/challenge"
	"github.com/agentgraph/agentgraph/internal/openaitest"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/tools"
)

func TestBundledChallengesPassOfflineExceptTheImpossibleOne(t *testing.T) {
	chs, err := challenge.Bundled()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(chs), 13)
	var mu sync.Mutex
	var progressed []string
	// The repair search gets all the time it needs: on a loaded machine
	// its default limit would make the result depend on the load.
	rep, err := challenge.Run(t.Context(), chs, challenge.Offline, challenge.WithParallel(2),
		challenge.WithModelName("scripted (offline)"), challenge.WithCodurOptions(codur.WithRepairTime(time.Hour)),
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

	// Each pass says what it is owed to.
	solved := map[string]string{}
	for _, r := range rep.Results {
		solved[r.Name] = r.SolvedBy
	}
	require.Equal(t, map[string]string{
		"boundary_grades":     "local repair comparison_boundary+comparison_boundary on iteration 1",
		"copy_config":         "the llm_plan model's tool calls on iteration 1",
		"discount_percent":    "local repair remove_percent_division on iteration 1",
		"fstring_greeting":    "local repair fstring_prefix on iteration 1",
		"go_off_by_one":       "agent llm:default on iteration 1",
		"impossible":          "",
		"missing_case":        "agent llm:default on iteration 1",
		"move_file":           "the textual pre-plan's tool calls on iteration 1",
		"off_by_one_sum":      "local repair off_by_one_range on iteration 1",
		"plan_fallback":       "agent llm:default on iteration 1",
		"plan_tool":           "the llm_plan model's tool calls on iteration 1",
		"retry_after_failure": "agent llm:default on iteration 2",
		"show_program":        "already correct before any change",
		"skip_guard":          "local repair remove_continue_guard on iteration 1",
		"two_bugs":            "local repair off_by_one_range+remove_percent_division on iteration 1",
		"wrong_condition":     "agent llm:default on iteration 1",
		"wrong_formula":       "agent llm:default on iteration 1",
	}, solved)
	require.Equal(t, []int{8, 6, 1, 1}, []int{rep.ByModel, rep.ByRepair, rep.ByPrePlan, rep.AlreadyCorrect})
	for _, r := range rep.Results {
		if r.Name != "impossible" {
			require.Positive(t, r.Cases, "%s has hidden cases", r.Name)
		}
	}

	md := rep.Markdown()
	require.Contains(t, md, fmt.Sprintf("%d/%d passed (94%%): 8 by the model, 6 by local repairs, 1 by the textual pre-plan, 1 already correct", len(chs)-1, len(chs)))
	require.Contains(t, md, "| impossible | FAIL |  | 3 |")
	require.Contains(t, md, "| wrong_formula | pass | agent llm:default on iteration 1 | 1 |")
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

// nullServer is an OpenAI-compatible server that answers every call with
// the same words and no tool call: a model that changes nothing.
func nullServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := openaitest.ReadRequest(w, r)
		if !ok {
			return
		}
		openaitest.WriteReply(w, body, "c", llm.Reply{Text: challenge.NullReply})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// modelSetup is the Setup of a model served at url, as the planner and
// llm:default.
func modelSetup(url string) challenge.Setup {
	return func(ctx context.Context, _ challenge.Challenge, _ string) (llm.Model, *codur.Registry, error) {
		m, err := llm.New(ctx, "openai-compatible:test-model@"+url+"/v1", llm.WithMaxAttempts(1))
		if err != nil {
			return nil, nil, err
		}
		reg := codur.NewRegistry()
		return m, reg, reg.Register(codur.AgentInfo{Ref: codur.DefaultAgent}, &codur.ModelAgent{Model: m})
	}
}

func TestNullModelPassesOnlyWhatIsNotTheModels(t *testing.T) {
	chs, err := challenge.Bundled()
	require.NoError(t, err)
	// One iteration: a model that changes nothing leaves the same
	// workspace for the next ones, which verify the same and skip the
	// repair search of the same program.
	rep, err := challenge.Run(t.Context(), chs, modelSetup(nullServer(t).URL), challenge.WithParallel(2),
		challenge.WithCodurOptions(codur.WithMaxIterations(1), codur.WithRepairTime(time.Hour)))
	require.NoError(t, err)
	got := map[string]challenge.Attribution{}
	for _, r := range rep.Results {
		got[r.Name] = r.Attribution
		if r.Passed {
			require.NotEqual(t, challenge.ByModel, r.Attribution, "%s: a model that changes nothing solved nothing", r.Name)
		}
	}
	require.Equal(t, map[string]challenge.Attribution{
		"boundary_grades":     challenge.ByRepair,
		"copy_config":         "",
		"discount_percent":    challenge.ByRepair,
		"fstring_greeting":    challenge.ByRepair,
		"go_off_by_one":       challenge.ByRepair,
		"impossible":          "",
		"missing_case":        "",
		"move_file":           challenge.ByPrePlan,
		"off_by_one_sum":      challenge.ByRepair,
		"plan_fallback":       "",
		"plan_tool":           "",
		"retry_after_failure": "",
		"show_program":        challenge.AlreadyCorrect,
		"skip_guard":          challenge.ByRepair,
		"two_bugs":            challenge.ByRepair,
		"wrong_condition":     challenge.ByRepair,
		"wrong_formula":       "",
	}, got)
	require.Equal(t, 10, rep.Passed)
	require.Equal(t, []int{0, 8, 1, 1}, []int{rep.ByModel, rep.ByRepair, rep.ByPrePlan, rep.AlreadyCorrect})
	raw, err := rep.JSON()
	require.NoError(t, err)
	require.Contains(t, string(raw), `"by_model": 0,`)
	require.Contains(t, string(raw), `"by_repair": 8,`)
	require.Contains(t, string(raw), `"attribution": "already_correct"`)
}

// printServer is an OpenAI-compatible server whose agent replaces main.py
// with a print of the expected output it was shown.
func printServer(t *testing.T, program string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := openaitest.ReadRequest(w, r)
		if !ok {
			return
		}
		msgs := body["messages"].([]any)
		system, _ := msgs[0].(map[string]any)["content"].(string)
		var reply llm.Reply
		switch {
		case strings.HasPrefix(system, "ROLE=preplan"):
			reply.Text = `{"task_type": "code_change", "confidence": 0.99, "action": "plan"}`
		case strings.HasPrefix(system, "ROLE=plan"):
			reply.Text = `{"action": "delegate", "agent": "llm:default"}`
		case msgs[len(msgs)-1].(map[string]any)["role"] != "tool":
			args, _ := json.Marshal(map[string]string{"path": "main.py", "content": program})
			reply.ToolCalls = []llms.ToolCall{{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "write_file", Arguments: string(args)}}}
		default:
			reply.Text = "Done."
		}
		openaitest.WriteReply(w, body, "c", reply)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHardCodedPrintFailsAHiddenCase(t *testing.T) {
	all, err := challenge.Bundled()
	require.NoError(t, err)
	var chs []challenge.Challenge
	for _, c := range all {
		if c.Name == "off_by_one_sum" {
			chs = append(chs, c)
		}
	}
	require.Len(t, chs, 1)
	require.Len(t, chs[0].Cases, 2)
	run := func(program string) challenge.Result {
		rep, err := challenge.Run(t.Context(), chs, modelSetup(printServer(t, program).URL),
			challenge.WithCodurOptions(codur.WithPrompts(rolePrompts), codur.WithMaxIterations(1), codur.WithRepairBudget(0)))
		require.NoError(t, err)
		return rep.Results[0]
	}
	cheat := run("print(55)\n")
	require.False(t, cheat.Passed, "%+v", cheat)
	require.Equal(t, "output mismatch on hidden case to_100 after 1 iterations (the iteration limit)", cheat.Error)

	honest := run("import sys\n\nn = int(sys.argv[1]) if len(sys.argv) > 1 else 10\nprint(n * (n + 1) // 2)\n")
	require.True(t, honest.Passed, "%+v", honest)
	require.Equal(t, challenge.ByModel, honest.Attribution)
	require.Equal(t, "agent llm:default on iteration 1", honest.SolvedBy)
}

func TestLoadRejectsAMalformedChallenge(t *testing.T) {
	base := map[string]string{"prompt.txt": "fix it", "main.py": "print(1)\n", "expected.txt": "1\n"}
	for _, c := range []struct {
		name  string
		extra map[string]string
		drop  string
		want  string
	}{
		{"no expected output", nil, "expected.txt", "challenge x: expected.txt: missing"},
		{"no program", nil, "main.py", "challenge x: no program: want main.py or main.go"},
		{"unknown field", map[string]string{"challenge.json": `{"max_iteration": 3}`}, "", `challenge x: challenge.json: json: unknown field "max_iteration"`},
		{"unknown reply field", map[string]string{"offline.json": `[{"txt": "hi"}]`}, "", `challenge x: offline.json: json: unknown field "txt"`},
		{"case without expected output", map[string]string{"cases/a/args": "1\n"}, "", "codur: case cases/a: no expected.txt"},
		{"unknown case file", map[string]string{"cases/a/expected.txt": "1\n", "cases/a/argv": "1\n"}, "", "codur: case cases/a/argv: unknown file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "x")
			files := map[string]string{}
			for k, v := range base {
				if k != c.drop {
					files[k] = v
				}
			}
			for k, v := range c.extra {
				files[k] = v
			}
			write(t, dir, files)
			_, err := challenge.Load(dir)
			require.ErrorContains(t, err, c.want)
			var le *challenge.LoadError
			require.ErrorAs(t, err, &le)
		})
	}
}

func TestHiddenCasesAreNotCopiedIntoTheWorkspace(t *testing.T) {
	src := t.TempDir()
	write(t, src, map[string]string{"prompt.txt": "p", "main.py": "x", "expected.txt": "y", "cases/big/args": "9\n", "cases/big/expected.txt": "z\n"})
	chs, err := challenge.Load(src)
	require.NoError(t, err)
	require.Equal(t, []codur.Case{{Name: "big", Args: []string{"9"}, Expected: "z\n", Hidden: true}}, chs[0].Cases)
	dst := t.TempDir()
	require.NoError(t, chs[0].CopyTo(dst))
	_, err = os.Stat(filepath.Join(dst, "cases"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
