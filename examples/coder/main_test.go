package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	cpsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/internal/openaitest"
	"github.com/agentgraph/agentgraph/llm"
)

// runMainEnv makes the test binary run coder's main instead of the tests,
// so that a test can run coder as a process of its own.
const runMainEnv = "CODER_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	// The default memory folders of the tests' projects (and of the
	// coder processes they start) go to a folder of their own.
	state, err := os.MkdirTemp("", "coder-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv(stateEnv, state)
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}

// coderExit runs coder with args in a process of its own and returns what
// it printed and its exit code.
func coderExit(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", modelEnv+"=")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	require.NoError(t, err)
	return string(out), 0
}

// coderProcess runs coder with args in a process of its own, stdin as its
// input, and returns what it printed; it fails the test if coder fails.
func coderProcess(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", modelEnv+"=")
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.NoError(t, err, "coder %s:\n%s", strings.Join(args, " "), out.String())
	return out.String()
}

// sampleProject copies the bundled sample into a temporary folder.
func sampleProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, copySample(dir))
	return dir
}

// fakeModel is an OpenAI-compatible server that answers by what it is
// asked: the routing classifier, the file picker, or the read node, whose
// answer says whether the conversation's history was in its prompt.
type fakeModel struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []string // the kind of each call
}

func newFakeModel(t *testing.T) *fakeModel {
	f := &fakeModel{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := openaitest.ReadRequest(w, r)
		if !ok {
			return
		}
		raw, _ := json.Marshal(body)
		prompt := string(raw)
		var kind string
		var reply llm.Reply
		switch {
		case strings.Contains(prompt, `"choose_intent"`):
			kind = "classify"
			reply = llm.Reply{ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function",
				FunctionCall: &llms.FunctionCall{Name: "choose_intent", Arguments: `{"intent":"read"}`}}}}
		case strings.Contains(prompt, "which files"):
			kind = "pick"
			reply = llm.Reply{Text: `["cart.go"]`}
		case strings.Contains(systemText(body), "what does Total do"):
			// The read node of a later request, with the first
			// exchange in its prompt (the session's history).
			kind = "read-with-history"
			reply = llm.Reply{Text: "Earlier you asked what Total does (HISTORY SEEN)."}
		default:
			kind = "read"
			reply = llm.Reply{Text: "Total sums price times quantity over the items (cart.go:13)."}
		}
		f.mu.Lock()
		f.calls = append(f.calls, kind)
		n := len(f.calls)
		f.mu.Unlock()
		openaitest.WriteReply(w, body, fmt.Sprintf("cmpl-%d", n), reply)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// systemText returns the text of the system messages of a decoded
// chat-completions request.
func systemText(body map[string]any) string {
	var b strings.Builder
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		m, _ := m.(map[string]any)
		if m["role"] == "system" {
			c, _ := m["content"].(string)
			b.WriteString(c)
		}
	}
	return b.String()
}

func (f *fakeModel) spec() string { return "openai-compatible:test-model@" + f.srv.URL + "/v1" }

func (f *fakeModel) kinds() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// A session is a thread in the memory folder's sessions.db: a second coder process
// with the same --session continues the conversation of the first.
func TestASessionContinuesInANewProcess(t *testing.T) {
	dir := sampleProject(t)
	model := newFakeModel(t)
	t.Setenv("OPENAI_API_KEY", "test-key")

	first := coderProcess(t, "", "-p", "what does Total do in cart.go?", "--cwd", dir, "--model", model.spec(), "--session", "s1")
	require.Contains(t, first, "intent: read — pattern")
	require.Contains(t, first, "Total sums price times quantity")

	second := coderProcess(t, "", "-p", "remind me: which question did I ask you before?", "--cwd", dir, "--model", model.spec(), "--session", "s1")
	require.Contains(t, second, "HISTORY SEEN", "the second process's prompt held the first exchange")

	other := coderProcess(t, "", "-p", "remind me: which question did I ask you before?", "--cwd", dir, "--model", model.spec(), "--session", "s2")
	require.NotContains(t, other, "HISTORY SEEN", "another session starts empty")
}

// The REPL reads requests line by line (here from a pipe, without line
// editing) and its slash commands read the persistent memory.
func TestTheREPLRunsRequestsAndCommandsFromItsInput(t *testing.T) {
	dir := sampleProject(t)
	model := newFakeModel(t)
	t.Setenv("OPENAI_API_KEY", "test-key")
	out := coderProcess(t, "/prefs\nremember that I prefer table-driven tests\n/prefs\n/nonsense\n/quit\n",
		"--cwd", dir, "--model", model.spec())
	require.Contains(t, out, "no preferences yet")
	require.Contains(t, out, "intent: profile — pattern")
	require.Contains(t, out, "  - ", "the second /prefs lists the preference")
	require.Contains(t, out, "unknown command /nonsense")
	require.Empty(t, model.kinds(), "a preference by pattern costs no model call")
}

func TestGraphPrintsMermaid(t *testing.T) {
	out := coderProcess(t, "", "graph")
	for _, node := range []string{"route", "profile", "plan_read", "read", "edit", "test", "run_command"} {
		require.Contains(t, out, node)
	}
}

func TestBadFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"stray"}, {"--session", " ", "-p", "x", "--model", "openai:x"}, {"--nope"}} {
		var out bytes.Buffer
		code := run(t.Context(), args, strings.NewReader(""), &out, &out)
		require.Equal(t, exitUsage, code, "%v: %s", args, out.String())
	}
}

// With no model, coder runs the offline demo: every intent once, the
// model's routing once, a cache hit and the auto-fix loop, on a scripted
// model that it says is scripted.
func TestTheOfflineDemoShowsEachIntentOnce(t *testing.T) {
	out := coderProcess(t, "")
	require.Contains(t, out, "OFFLINE DEMO")
	require.Contains(t, out, "SCRIPTED")
	for _, want := range []string{
		"intent: profile — pattern",
		"intent: read — pattern",
		"outcome: answered (from the query cache)",
		"intent: edit — model",
		"after attempt 1 of 3: FAIL",
		"after attempt 2 of 3: PASS",
		"outcome: tests_pass",
		"intent: run_command — pattern",
		"The demo made 5 model calls, all scripted.",
	} {
		require.Contains(t, out, want)
	}
}

func TestOneRequestNeedsAModel(t *testing.T) {
	var out bytes.Buffer
	t.Setenv(modelEnv, "")
	code := run(t.Context(), []string{"-p", "what does Total do?"}, strings.NewReader(""), &out, &out)
	require.Equal(t, exitUsage, code)
	require.Contains(t, out.String(), "no model configured for -p")
}

// -p exits with 1 when the request failed: here the model's server
// refuses every call (HTTP 400), and coder says so after one call.
func TestOneRequestThatFailsExitsNonZero(t *testing.T) {
	dir := sampleProject(t)
	var calls sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Lock()
		n++
		calls.Unlock()
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
	}))
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "test-key")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-p", "what does Total do in cart.go?", "--cwd", dir,
		"--model", "openai-compatible:test-model@"+srv.URL+"/v1")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	require.Equal(t, exitError, exit.ExitCode())
	require.Contains(t, string(out), "outcome: error")
	calls.Lock()
	defer calls.Unlock()
	require.Equal(t, 1, n, "a refusal is not worth asking again")
}

// The session and memory databases are kept outside the project, by
// default under $XDG_STATE_HOME/coder: the agent's file tools, confined
// to the project, cannot read them, and a model's edit cannot overwrite
// them.
func TestTheMemoryIsKeptOutsideTheProject(t *testing.T) {
	dir := sampleProject(t)
	state := t.TempDir()
	t.Setenv(stateEnv, state)
	model := newFakeModel(t)
	t.Setenv("OPENAI_API_KEY", "test-key")

	coderProcess(t, "", "-p", "remember that I prefer table-driven tests", "--cwd", dir, "--model", model.spec())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.NotEqual(t, ".coder", e.Name(), "no memory in the project")
	}
	dbs, err := filepath.Glob(filepath.Join(state, "coder", "*", "*.db"))
	require.NoError(t, err)
	require.Len(t, dbs, 2, "sessions.db and memory.db")

	for _, db := range dbs {
		out, code := coderExit(t, "-p", "what is in "+db+"?", "--cwd", dir, "--model", model.spec())
		require.Equal(t, exitError, code, out)
		require.Contains(t, out, "outcome: refused")
		require.Contains(t, out, "outside the workspace")
	}
	out := coderProcess(t, "/prefs\n", "--cwd", dir, "--model", model.spec())
	require.Contains(t, out, "  - I prefer table-driven tests", "the memory is intact")
}

// A memory folder inside the project — named so, reached through a
// symlink, or the default one when the project holds $XDG_STATE_HOME —
// is refused before anything is written in it.
func TestAMemoryFolderInsideTheProjectIsRefused(t *testing.T) {
	dir := sampleProject(t)
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	for _, tc := range []struct {
		name  string
		state string
		args  []string
	}{
		{"a subfolder", "", []string{"--memory", filepath.Join(dir, ".coder")}},
		{"the project itself", "", []string{"--memory", dir}},
		{"a relative path, from the project", "", []string{"--memory", "mem"}},
		{"through a symlink", "", []string{"--memory", filepath.Join(link, ".coder")}},
		{"the default in a project that holds the state folder", filepath.Join(dir, ".local", "state"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.state != "" {
				t.Setenv(stateEnv, tc.state)
			}
			t.Chdir(dir)
			var out bytes.Buffer
			args := append([]string{"-p", "what does Total do?", "--cwd", dir, "--model", "openai-compatible:m@http://127.0.0.1:1/v1"}, tc.args...)
			code := run(t.Context(), args, strings.NewReader(""), &out, &out)
			require.Equal(t, exitError, code, out.String())
			require.Contains(t, out.String(), "is inside the project")
			dbs, err := filepath.Glob(filepath.Join(dir, "*", "*.db"))
			require.NoError(t, err)
			require.Empty(t, dbs)
			for _, made := range []string{".local", ".coder", "mem"} {
				_, err = os.Stat(filepath.Join(dir, made))
				require.ErrorIs(t, err, os.ErrNotExist, made)
			}
		})
	}
}

// A second coder on a session another one is running is refused, saying
// so once, before any model call; the session is free again after.
func TestASessionInUseByAnotherCoderIsRefused(t *testing.T) {
	dir, mem := sampleProject(t), t.TempDir()
	model := newFakeModel(t)
	t.Setenv("OPENAI_API_KEY", "test-key")
	saver, err := cpsqlite.Open(t.Context(), filepath.Join(mem, "sessions.db"))
	require.NoError(t, err)
	defer saver.Close()
	lease, err := saver.AcquireLease(t.Context(), "s1", "the other coder", time.Minute)
	require.NoError(t, err)

	args := []string{"-p", "what does Total do in cart.go?", "--cwd", dir, "--model", model.spec(), "--session", "s1", "--memory", mem}
	out, code := coderExit(t, args...)
	require.Equal(t, exitError, code, out)
	require.Equal(t, 1, strings.Count(out, "is in use by"), out)
	require.Contains(t, out, `session "s1" is taken, by another coder: checkpoint: thread "s1" is in use by the other coder`)
	require.Empty(t, model.kinds())

	require.NoError(t, saver.ReleaseLease(t.Context(), lease))
	require.Contains(t, coderProcess(t, "", args...), "Total sums price times quantity")
}

// A damaged database is reported with its path, and left as it is (not
// replaced by an empty one) for the user to look at.
func TestADamagedDatabaseIsReportedAndLeftAlone(t *testing.T) {
	for _, name := range []string{"sessions.db", "memory.db"} {
		t.Run(name, func(t *testing.T) {
			dir, mem := sampleProject(t), t.TempDir()
			garbage := "SQLite format 3\x00" + strings.Repeat("garbage ", 600)
			require.NoError(t, os.WriteFile(filepath.Join(mem, name), []byte(garbage), 0o600))
			out, code := coderExit(t, "-p", "remember that I prefer tabs", "--cwd", dir,
				"--model", "openai-compatible:m@http://127.0.0.1:1/v1", "--memory", mem)
			require.Equal(t, exitError, code, out)
			require.Contains(t, out, filepath.Join(mem, name))
			require.Contains(t, out, "damaged or not a SQLite database")
			data, err := os.ReadFile(filepath.Join(mem, name))
			require.NoError(t, err)
			require.Equal(t, garbage, string(data))
		})
	}
}
