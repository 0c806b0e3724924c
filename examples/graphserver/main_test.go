package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/examples/retrai/samples"
	"github.com/agentgraph/agentgraph/internal/openaitest"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

const testToken = "t0ken"

// served is a graphserver running in the test, on a free port.
type served struct {
	url        string
	workspaces map[string]string // by graph
	code       chan int          // the exit code, once it stopped
	stderr     *bytes.Buffer     // read only after code
}

// launch runs the command with args, --addr on a free port and --db db,
// until ctx is cancelled, and returns once it listens.
func launch(t *testing.T, ctx context.Context, db string, args ...string) *served {
	t.Helper()
	pr, pw := io.Pipe()
	s := &served{workspaces: map[string]string{}, code: make(chan int, 1), stderr: &bytes.Buffer{}}
	args = append([]string{"--addr", "127.0.0.1:0", "--db", db}, args...)
	go func() {
		c := run(ctx, args, pw, s.stderr)
		pw.Close()
		s.code <- c
	}()
	sc := bufio.NewScanner(pr)
	for s.url == "" && sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "graphserver: workspace of "); ok {
			graph, dir, _ := strings.Cut(rest, ": ")
			s.workspaces[graph] = dir
		}
		if u, ok := strings.CutPrefix(line, "graphserver: listening on "); ok {
			s.url = u
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if s.url == "" {
		<-s.code
		t.Fatalf("the server did not start: %s", s.stderr)
	}
	return s
}

// start launches the command on a new database until the test ends,
// then checks that it exited 0 and removed its copies of the samples.
func start(t *testing.T, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := launch(t, ctx, filepath.Join(t.TempDir(), "gs.db"), args...)
	t.Cleanup(func() {
		cancel()
		require.Equal(t, exitOK, <-s.code, s.stderr.String())
		for _, dir := range s.workspaces {
			if !strings.HasPrefix(filepath.Base(dir), "graphserver-") {
				continue // a --workspace of the test's, not a copy
			}
			_, err := os.Stat(dir)
			require.True(t, os.IsNotExist(err), "the sample copy %s is removed at exit", dir)
		}
	})
	return s
}

// call sends a JSON request with the test token and decodes the JSON
// answer into out (when not nil); it returns the status.
func (s *served) call(t *testing.T, method, path, token string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	if out != nil && res.StatusCode < 300 {
		require.NoError(t, json.Unmarshal(data, out), "%s", data)
	}
	return res.StatusCode
}

// thread creates a thread and returns its id.
func (s *served) thread(t *testing.T) string {
	t.Helper()
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	require.Equal(t, http.StatusOK, s.call(t, "POST", "/threads", testToken, map[string]any{}, &th))
	return th.ThreadID
}

// wait runs a graph on the thread through /runs/wait and returns the
// final values.
func (s *served) wait(t *testing.T, thread string, body map[string]any) map[string]any {
	t.Helper()
	var out map[string]any
	require.Equal(t, http.StatusOK, s.call(t, "POST", "/threads/"+thread+"/runs/wait", testToken, body, &out))
	require.NotContains(t, out, "__error__")
	return out
}

// human is a human message as LangGraph clients send it.
func human(text string) map[string]any {
	return map[string]any{"type": "human", "content": text}
}

// texts returns the text contents of the messages other than tool
// messages, which the server shows as LangChain serializes them.
func texts(t *testing.T, messages any) []string {
	t.Helper()
	list, ok := messages.([]any)
	require.True(t, ok, "messages are a list: %v", messages)
	var out []string
	for _, m := range list {
		if msg := m.(map[string]any); msg["type"] != "tool" && msg["content"] != "" {
			out = append(out, msg["content"].(string))
		}
	}
	return out
}

func TestReActAnswersWithTheToolsResult(t *testing.T) {
	s := start(t, "--token", testToken)
	out := s.wait(t, s.thread(t), map[string]any{"assistant_id": reactGraph,
		"input": map[string]any{"messages": []any{human("what is 19 plus 23?")}}})
	msgs := out["messages"].([]any)
	require.Len(t, msgs, 4, "question, tool call, tool result, answer")
	tool := msgs[2].(map[string]any)
	require.Equal(t, "tool", tool["type"])
	require.Equal(t, "42", tool["content"], "the add tool ran")
	require.Equal(t, []string{"what is 19 plus 23?", "The add tool says the sum is 42."}, texts(t, msgs))
}

func TestResearchQuotesTheFileThatDefinesTheSubject(t *testing.T) {
	s := start(t, "--token", testToken)
	out := s.wait(t, s.thread(t), map[string]any{"assistant_id": researchGraph,
		"input": map[string]any{"Input": "What does SumRange do?"}})
	require.Equal(t, `"FINISH"`, mustJSON(t, out["LoopDecision"]))
	resp := out["Response"].(string)
	require.Contains(t, resp, "grep found SumRange in calc.go")
	want, err := os.ReadFile(filepath.Join(s.workspaces[researchGraph], "calc.go"))
	require.NoError(t, err)
	// file_read numbers the lines: the answer quotes the file's body.
	require.Contains(t, resp, "func SumRange(a, b int) int {")
	require.Contains(t, string(want), "func SumRange(a, b int) int {")
}

func TestCoderFixesTheSampleAndItsTestsPass(t *testing.T) {
	s := start(t, "--token", testToken)
	out := s.wait(t, s.thread(t), map[string]any{"assistant_id": coderGraph,
		"input": map[string]any{"Thread": "session-1", "Request": "fix SumRange: it leaves out its upper bound"}})
	require.Equal(t, "tests_pass", out["Outcome"])
	tests := out["Tests"].(map[string]any)
	require.Equal(t, true, tests["passed"])
	require.Equal(t, "go-test", tests["goal"])
	src, err := os.ReadFile(filepath.Join(s.workspaces[coderGraph], "calc.go"))
	require.NoError(t, err)
	require.Contains(t, string(src), sampleFix, "the patch is in the workspace")
}

func TestCoderAnswersAQuestionFromTheFilesItRead(t *testing.T) {
	s := start(t, "--token", testToken)
	out := s.wait(t, s.thread(t), map[string]any{"assistant_id": coderGraph,
		"input": map[string]any{"Thread": "session-1", "Request": "what does SumRange do in calc.go?"}})
	require.Equal(t, "answered", out["Outcome"])
	require.Equal(t, "read", out["Route"].(map[string]any)["intent"])
	require.Contains(t, out["Files"], "calc.go")
	require.Contains(t, out["Answer"], "func SumRange(a, b int) int {")
}

func TestCoderStartsEachRunOfAThreadAsANewRequest(t *testing.T) {
	s := start(t, "--token", testToken)
	th := s.thread(t)
	run := func(request string) map[string]any {
		return s.wait(t, th, map[string]any{"assistant_id": coderGraph,
			"input": map[string]any{"Thread": "session-1", "Request": request}})
	}
	first := run("fix SumRange: it leaves out its upper bound")
	require.Equal(t, "tests_pass", first["Outcome"])
	require.EqualValues(t, 1, first["Attempt"])

	second := run("what does SumRange do in calc.go?")
	require.EqualValues(t, 2, second["Turn"])
	require.Equal(t, "answered", second["Outcome"])
	require.Contains(t, second["Answer"], "func SumRange(a, b int) int {")
	require.EqualValues(t, 0, second["Attempt"], "the first request's edit attempts are not the second's")
	require.Nil(t, second["Tests"])
	require.Nil(t, second["Edits"])
	require.NotContains(t, mustJSON(t, second["Memory"]), "patch calc.go", "the working memory starts empty")
	require.Len(t, second["History"], 2, "the session memory is kept")
}

func TestRetraiPausesForApprovalThenAchievesTheGoal(t *testing.T) {
	s := start(t, "--token", testToken)
	ws := s.workspaces[retraiGraph]
	th := s.thread(t)
	paused := s.wait(t, th, map[string]any{"assistant_id": retraiGraph, "input": map[string]any{
		"Cwd": ws, "HITLEnabled": true, "Messages": []any{human("Make the check pass.")}}})
	intr := paused["__interrupt__"].([]any)[0].(map[string]any)["value"].(map[string]any)
	require.EqualValues(t, 1, intr["iteration"])
	require.Contains(t, intr["reason"], "exited with status 1", "the first check fails")

	var th1 struct {
		Status string `json:"status"`
	}
	require.Equal(t, http.StatusOK, s.call(t, "GET", "/threads/"+th, testToken, nil, &th1))
	require.Equal(t, "interrupted", th1.Status)

	done := s.wait(t, th, map[string]any{"assistant_id": retraiGraph, "command": map[string]any{"resume": "approve"}})
	require.Equal(t, true, done["GoalAchieved"])
	require.EqualValues(t, 2, done["Iteration"])
	greeting, err := os.ReadFile(filepath.Join(ws, "greeting.txt"))
	require.NoError(t, err)
	require.Equal(t, "Hello, World!\n", string(greeting))
}

func TestRetraiRefusesADirectoryOtherThanTheWorkspace(t *testing.T) {
	s := start(t, "--token", testToken)
	victim := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(victim, "greeting.txt"), []byte("untouched\n"), 0o644))
	var out map[string]any
	require.Equal(t, http.StatusOK, s.call(t, "POST", "/threads/"+s.thread(t)+"/runs/wait", testToken, map[string]any{
		"assistant_id": retraiGraph, "input": map[string]any{"Cwd": victim, "Messages": []any{human("go")}}}, &out))
	require.Contains(t, mustJSON(t, out["__error__"]), "is not the served workspace")
	got, err := os.ReadFile(filepath.Join(victim, "greeting.txt"))
	require.NoError(t, err)
	require.Equal(t, "untouched\n", string(got))
}

func TestRetraiRunsNoTestsOutsideTheWorkspace(t *testing.T) {
	// A Go project's goal (go-test) takes a baseline, running the tests,
	// before the agent's first step: a Cwd from the client must not get
	// its tests run either.
	ws := t.TempDir()
	require.NoError(t, samples.Copy(samples.GoTest, ws))
	s := start(t, "--token", testToken, "--workspace", ws)
	victim := t.TempDir()
	marker := filepath.Join(victim, "ran")
	require.NoError(t, os.WriteFile(filepath.Join(victim, "go.mod"), []byte("module victim\n\ngo 1.21\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(victim, "v_test.go"), []byte(`package victim

import (
	"os"
	"testing"
	"time"
)

func TestMark(t *testing.T) { _ = os.WriteFile("ran", nil, 0o644) }
`), 0o644))
	var out map[string]any
	require.Equal(t, http.StatusOK, s.call(t, "POST", "/threads/"+s.thread(t)+"/runs/wait", testToken, map[string]any{
		"assistant_id": retraiGraph, "input": map[string]any{"Cwd": victim, "Messages": []any{human("go")}}}, &out))
	require.Contains(t, mustJSON(t, out["__error__"]), "is not the served workspace")
	_, err := os.Stat(marker)
	require.True(t, os.IsNotExist(err), "the victim's tests did not run")
}

func TestModelFlagRunsTheGraphsOnTheProvider(t *testing.T) {
	// A fake OpenAI-compatible provider: the first call of a conversation
	// asks for add(2, 40), the second answers in words.
	var tools atomic.Value
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := openaitest.ReadRequest(w, r)
		if !ok {
			return
		}
		offered, _ := json.Marshal(body["tools"]) // not require: this is the server's goroutine
		tools.Store(string(offered))
		reply := llm.Reply{Text: "Forty-two, says the provider."}
		if openaitest.AssistantTurns(body) == 0 {
			reply = llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("call_1", "add", `{"a": 2, "b": 40}`)}}
		}
		openaitest.WriteReply(w, body, "c1", reply)
	}))
	defer provider.Close()
	s := start(t, "--token", testToken, "--model", "openai-compatible:fake@"+provider.URL+"/v1")
	out := s.wait(t, s.thread(t), map[string]any{"assistant_id": reactGraph,
		"input": map[string]any{"messages": []any{human("add 2 and 40")}}})
	msgs := out["messages"].([]any)
	require.Len(t, msgs, 4)
	require.Equal(t, "42", msgs[2].(map[string]any)["content"], "the add tool ran on the provider's call")
	require.Equal(t, []string{"add 2 and 40", "Forty-two, says the provider."}, texts(t, msgs))
	require.Contains(t, tools.Load(), `"name":"add"`, "the provider was offered the add tool")
}

func TestRefusesAWrongToken(t *testing.T) {
	s := start(t, "--token", testToken)
	for _, tok := range []string{"", "wrong"} {
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden},
			s.call(t, "POST", "/threads", tok, map[string]any{}, nil), "token %q", tok)
	}
}

func TestInsecureLoopbackServesWithoutAToken(t *testing.T) {
	s := start(t, "--insecure-loopback")
	require.Equal(t, http.StatusOK, s.call(t, "POST", "/threads", "", map[string]any{}, nil))
}

func TestTokenComesFromTheEnvironment(t *testing.T) {
	t.Setenv(tokenEnv, "from-env")
	s := start(t)
	require.Equal(t, http.StatusOK, s.call(t, "POST", "/threads", "from-env", map[string]any{}, nil))
	require.NotEqual(t, http.StatusOK, s.call(t, "POST", "/threads", testToken, map[string]any{}, nil))
}

func TestUsageErrors(t *testing.T) {
	t.Setenv(tokenEnv, "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no token", nil, "no token"},
		{"token and loopback", []string{"--token", "x", "--insecure-loopback"}, "exclude each other"},
		{"argument", []string{"--token", "x", "serve"}, "unexpected argument"},
		{"sandbox", []string{"--token", "x", "--sandbox", "sometimes"}, "want auto, required or off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			require.Equal(t, exitUsage, run(t.Context(), tt.args, &stdout, &stderr))
			require.Contains(t, stderr.String(), tt.want)
		})
	}
}

func TestThreadsSurviveARestartOnTheSameDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gs.db")
	ctx, cancel := context.WithCancel(context.Background())
	first := launch(t, ctx, db, "--token", testToken)
	th := first.thread(t)
	first.wait(t, th, map[string]any{"assistant_id": reactGraph, "input": map[string]any{"messages": []any{human("what is 2 plus 3?")}}})
	cancel()
	require.Equal(t, exitOK, <-first.code)

	ctx2, cancel2 := context.WithCancel(context.Background())
	second := launch(t, ctx2, db, "--token", testToken)
	defer func() {
		cancel2()
		require.Equal(t, exitOK, <-second.code, second.stderr.String())
	}()
	// The thread and run records are in the file too (server/sqlite):
	// the new process serves them as the first left them.
	var got struct {
		ThreadID string         `json:"thread_id"`
		Status   string         `json:"status"`
		Metadata map[string]any `json:"metadata"`
		Values   map[string]any `json:"values"`
	}
	require.Equal(t, http.StatusOK, second.call(t, "GET", "/threads/"+th, testToken, nil, &got))
	require.Equal(t, th, got.ThreadID)
	require.Equal(t, "idle", got.Status)
	require.Equal(t, reactGraph, got.Metadata["graph_id"])
	require.Contains(t, texts(t, got.Values["messages"]), "The add tool says the sum is 5.")
	var runs []struct {
		RunID    string `json:"run_id"`
		ThreadID string `json:"thread_id"`
		Status   string `json:"status"`
	}
	require.Equal(t, http.StatusOK, second.call(t, "GET", "/threads/"+th+"/runs", testToken, nil, &runs))
	require.Len(t, runs, 1)
	require.Equal(t, th, runs[0].ThreadID)
	require.Equal(t, "success", runs[0].Status)
	require.Equal(t, http.StatusConflict, second.call(t, "POST", "/threads", testToken, map[string]any{"thread_id": th}, nil),
		"the thread exists in the new process")

	var st struct {
		Values map[string]any `json:"values"`
	}
	require.Equal(t, http.StatusOK, second.call(t, "GET", "/threads/"+th+"/state", testToken, nil, &st))
	require.Contains(t, texts(t, st.Values["messages"]), "The add tool says the sum is 5.")
	// And the thread goes on in the new process.
	second.wait(t, th, map[string]any{"assistant_id": reactGraph, "input": map[string]any{"messages": []any{human("what is 4 plus 4?")}}})
	require.Equal(t, http.StatusOK, second.call(t, "GET", "/threads/"+th+"/runs", testToken, nil, &runs))
	require.Len(t, runs, 2)
}

// mustJSON returns v as JSON.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// The coding graphs (retrai, coder) run commands for any client: the
// sandbox is required unless --sandbox says otherwise, and the start-up
// lines say which.
func TestTheSandboxIsRequiredByDefault(t *testing.T) {
	tests := []struct {
		args []string
		mode tools.SandboxMode
	}{
		{nil, tools.SandboxRequired},
		{[]string{"--sandbox", "auto"}, tools.SandboxAuto},
		{[]string{"--sandbox", "off"}, tools.SandboxOff},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parse(append([]string{"--insecure-loopback"}, tt.args...), &stderr)
			require.NoError(t, err, stderr.String())
			require.Equal(t, tt.mode, o.sandbox)
			var banner bytes.Buffer
			printBanner(&banner, o, models{offline: true}, &workspaces{}, &storage{where: "test.db"}, "127.0.0.1:1")
			want := "graphserver: " + tools.SandboxStatus().String() + " (--sandbox " + tt.mode.String() + ")"
			if tt.mode == tools.SandboxOff {
				want = "graphserver: no sandbox (--sandbox off)"
			}
			require.Contains(t, banner.String(), want)
		})
	}
}

// --max-body raises the 1 MiB default: an 800 KB image chat is accepted.
func TestMaxBodyRaisesTheBodyLimit(t *testing.T) {
	big := map[string]any{"metadata": map[string]any{"image": strings.Repeat("A", 1200<<10)}}
	for _, tt := range []struct {
		args []string
		want int
	}{
		{nil, http.StatusRequestEntityTooLarge},
		{[]string{"--max-body", "4000000"}, http.StatusOK},
	} {
		s := start(t, append([]string{"--token", testToken}, tt.args...)...)
		require.Equal(t, tt.want, s.call(t, "POST", "/threads", testToken, big, nil), "args %v", tt.args)
	}
}

func TestRunLeaseFlagSetsTheRunLease(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parse([]string{"--insecure-loopback", "--run-lease", "3s"}, &stderr)
	require.NoError(t, err, stderr.String())
	require.Equal(t, 3*time.Second, o.runLease)
	o, err = parse([]string{"--insecure-loopback"}, &stderr)
	require.NoError(t, err, stderr.String())
	require.Equal(t, server.DefaultRunLeaseTTL, o.runLease)
}
