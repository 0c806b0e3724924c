package runs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/examples/retrai/samples"
	"github.com/agentgraph/agentgraph/internal/openaitest"
	"github.com/agentgraph/agentgraph/llm"
)

// sampleChecks are, per sample, the file the fix changes and a text it
// holds once fixed.
var sampleChecks = map[string]struct{ file, fixed string }{
	samples.GoTest: {"calc.go", "for i := a; i <= b; i++ {"},
	samples.Pytest: {"wordcount.py", "return len(text.split())"},
	samples.Shell:  {"greeting.txt", "Hello, World!\n"},
}

// needPytest skips the test when `python3 -m pytest` cannot run.
func needPytest(t *testing.T) {
	t.Helper()
	if err := exec.Command("python3", "-m", "pytest", "--version").Run(); err != nil {
		t.Skipf("skipping the pytest sample: `python3 -m pytest --version` failed (%v); install pytest (e.g. apt-get install python3-pytest) to run it", err)
	}
}

// copySample copies the sample into a new temporary directory.
func copySample(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, samples.Copy(name, dir))
	return dir
}

// scriptedModels is a model factory handing out the given models in order,
// and recording the specs asked for.
type scriptedModels struct {
	mu     sync.Mutex
	models []llm.Model
	specs  []string
}

func (s *scriptedModels) factory(ctx context.Context, spec string) (llm.Model, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.specs = append(s.specs, spec)
	if len(s.models) == 0 {
		return nil, errors.New("no more models")
	}
	m := s.models[0]
	if len(s.models) > 1 {
		s.models = s.models[1:]
	}
	return m, nil
}

func openManager(t *testing.T, db string, models func(context.Context, string) (llm.Model, error)) *Manager {
	t.Helper()
	m, err := Open(t.Context(), Options{DB: db, Models: models})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}

// collect subscribes to the run's events and returns a function that
// returns those published so far, once the execution-ending event has
// been seen.
func collect(t *testing.T, m *Manager, id string) func() []events.Event {
	t.Helper()
	sub := m.Bus().Subscribe(t.Context(), events.FilterRunIDs(id), events.QueueSize(1<<14))
	var (
		mu  sync.Mutex
		evs []events.Event
	)
	return func() []events.Event {
		for ev, err := range sub.Events() {
			require.NoError(t, err)
			mu.Lock()
			evs = append(evs, ev)
			mu.Unlock()
			if k := ev.Kind(); k == KindEnded || k == retrai.KindHumanCheck {
				break
			}
		}
		mu.Lock()
		defer mu.Unlock()
		return append([]events.Event(nil), evs...)
	}
}

func kinds(evs []events.Event) []events.Kind {
	var out []events.Kind
	for _, ev := range evs {
		out = append(out, ev.Kind())
	}
	return out
}

func count(evs []events.Event, k events.Kind) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind() == k {
			n++
		}
	}
	return n
}

func TestManagerFixesTheSamples(t *testing.T) {
	t.Parallel()
	for _, name := range samples.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if name == samples.Pytest {
				needPytest(t)
			}
			dir := copySample(t, name)
			script, err := samples.Script(name)
			require.NoError(t, err)
			model := llm.NewScripted(script...)
			models := &scriptedModels{models: []llm.Model{model}}
			m := openManager(t, filepath.Join(t.TempDir(), "runs.db"), models.factory)

			// The goal is detected from the project.
			run, err := m.Create(t.Context(), Config{Cwd: dir, Model: "scripted"})
			require.NoError(t, err)
			require.Equal(t, name, run.Goal)
			require.Equal(t, StatusPending, run.Status)
			wantMax := retrai.DefaultMaxIterations
			if name == samples.Shell {
				wantMax = 10 // from the sample's .retrai.yml
			}
			require.Equal(t, wantMax, run.MaxIterations)

			drain := collect(t, m, run.ID)
			require.NoError(t, m.Start(t.Context(), run.ID))
			evs := drain()
			got, err := m.Wait(t.Context(), run.ID)
			require.NoError(t, err)

			require.Equal(t, StatusAchieved, got.Status, "run: %+v", got)
			require.Empty(t, got.Error)
			require.Equal(t, 2, got.Iteration)
			require.Equal(t, script[0].Usage.TotalTokens+script[1].Usage.TotalTokens, got.TotalTokens)
			require.Contains(t, got.Reason, name+":")
			require.Zero(t, model.Remaining())

			data, err := os.ReadFile(filepath.Join(dir, sampleChecks[name].file))
			require.NoError(t, err)
			require.Contains(t, string(data), sampleChecks[name].fixed)

			// The events tell the story, all with the run's ID.
			for _, ev := range evs {
				require.Equal(t, run.ID, ev.RunID)
			}
			require.Equal(t, events.KindNodeStarted, evs[0].Kind())
			require.Equal(t, Ended{Status: StatusAchieved, Reason: got.Reason, Iteration: 2, TotalTokens: got.TotalTokens}, evs[len(evs)-1].Data)
			calls := len(script[0].ToolCalls) + len(script[1].ToolCalls)
			require.Equal(t, calls, count(evs, events.KindToolCall))
			require.Equal(t, calls, count(evs, events.KindToolResult))
			require.Equal(t, 2, count(evs, retrai.KindGoalCheck))
			require.Equal(t, 2, count(evs, KindProgress))
			require.Equal(t, 2, count(evs, events.KindModelCall))
			require.Equal(t, 1, count(evs, KindEnded))
			for _, k := range []events.Kind{events.KindError, events.KindRunStarted, events.KindRunEnded, retrai.KindFinished} {
				require.Zero(t, count(evs, k), "%s in %v", k, kinds(evs))
			}

			st, err := m.State(t.Context(), run.ID)
			require.NoError(t, err)
			require.Equal(t, retrai.OutcomeAchieved, st.Outcome())
			require.Equal(t, run.ID, st.RunID.Get())
			require.Equal(t, dir, st.Cwd.Get())

			list, err := m.List(t.Context())
			require.NoError(t, err)
			require.Len(t, list, 1)
			require.Equal(t, got, list[0])
		})
	}
}

// openAIScriptServer is a chat-completions server that answers the k-th
// model call of a conversation — k counted from the assistant messages it
// is sent — with the k-th reply of a script, streamed or not.
type openAIScriptServer struct {
	*httptest.Server
	script []llm.Reply
	mu     sync.Mutex
	bodies []map[string]any
}

func newOpenAIScriptServer(t *testing.T, script []llm.Reply) *openAIScriptServer {
	t.Helper()
	s := &openAIScriptServer{script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *openAIScriptServer) serve(w http.ResponseWriter, r *http.Request) {
	body, ok := openaitest.ReadRequest(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	k := openaitest.AssistantTurns(body)
	if k >= len(s.script) {
		http.Error(w, `{"error":{"message":"script exhausted"}}`, http.StatusBadRequest)
		return
	}
	openaitest.WriteReply(w, body, fmt.Sprintf("chatcmpl-%d", k), s.script[k])
}

func (s *openAIScriptServer) requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

func TestManagerRunsAgainstAnOpenAICompatibleServer(t *testing.T) {
	t.Parallel()
	script, err := samples.Script(samples.GoTest)
	require.NoError(t, err)
	srv := newOpenAIScriptServer(t, script)
	dir := copySample(t, samples.GoTest)
	// The default model factory, llm.New, talks to the server over HTTP.
	m, err := Open(t.Context(), Options{DB: filepath.Join(t.TempDir(), "runs.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })

	run, err := m.Create(t.Context(), Config{Cwd: dir, Model: "openai-compatible:test-model@" + srv.URL + "/v1"})
	require.NoError(t, err)
	drain := collect(t, m, run.ID)
	require.NoError(t, m.Start(t.Context(), run.ID))
	drain()
	got, err := m.Wait(t.Context(), run.ID)
	require.NoError(t, err)
	require.Equal(t, StatusAchieved, got.Status, "run: %+v", got)
	require.Equal(t, 2, got.Iteration)
	data, err := os.ReadFile(filepath.Join(dir, "calc.go"))
	require.NoError(t, err)
	require.Contains(t, string(data), "i <= b")

	reqs := srv.requests()
	require.Len(t, reqs, 2)
	for _, body := range reqs {
		require.Equal(t, "test-model", body["model"])
		var names []string
		for _, d := range body["tools"].([]any) {
			names = append(names, d.(map[string]any)["function"].(map[string]any)["name"].(string))
		}
		for _, want := range []string{"bash_exec", "file_read", "file_patch", "run_tests"} {
			require.Contains(t, names, want)
		}
		first := body["messages"].([]any)[0].(map[string]any)
		require.Equal(t, "system", first["role"])
		require.Contains(t, first["content"], "You are retrAI")
	}
	// The second call carries the results of the first call's tools and
	// the goal's status message.
	var roles []string
	for _, msg := range reqs[1]["messages"].([]any) {
		roles = append(roles, msg.(map[string]any)["role"].(string))
	}
	require.Equal(t, []string{"system", "user", "assistant", "tool", "tool", "tool", "user"}, roles)
}

func TestManagerResumesAStoppedRunInANewManager(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// stop makes the first manager's execution stop mid-way; it
		// returns the first script (possibly altered).
		first      func(script []llm.Reply) []llm.Reply
		stopOnTool bool // cancel the run at its first tool result
		crash      bool // then pretend the process died while it ran
		wantStatus Status
	}{
		{name: "cancelled after the first tool result", first: keep, stopOnTool: true, wantStatus: StatusInterrupted},
		// A record left "running" by a process that died — whose thread
		// lease nobody holds — reads as interrupted.
		{name: "process died while running", first: keep, stopOnTool: true, crash: true, wantStatus: StatusInterrupted},
		{name: "model failed at the second call", first: func(s []llm.Reply) []llm.Reply {
			return []llm.Reply{s[0], {Err: errors.New("503 upstream unavailable")}}
		}, wantStatus: StatusError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			script, err := samples.Script(samples.GoTest)
			require.NoError(t, err)
			dir := copySample(t, samples.GoTest)
			db := filepath.Join(t.TempDir(), "runs.db")

			m1, err := Open(t.Context(), Options{DB: db, Models: (&scriptedModels{models: []llm.Model{llm.NewScripted(tt.first(script)...)}}).factory})
			require.NoError(t, err)
			run, err := m1.Create(t.Context(), Config{Cwd: dir, Model: "scripted"})
			require.NoError(t, err)
			sub := m1.Bus().Subscribe(t.Context(), events.FilterRunIDs(run.ID), events.QueueSize(1<<14))
			require.NoError(t, m1.Start(t.Context(), run.ID))
			var end events.Event
			for ev, err := range sub.Events() {
				require.NoError(t, err)
				if ev.Kind() == events.KindToolResult && tt.stopOnTool {
					require.NoError(t, m1.Cancel(run.ID))
				}
				if ev.Kind() == KindEnded {
					end = ev
					break
				}
			}
			stopped, err := m1.Wait(t.Context(), run.ID)
			require.NoError(t, err)
			require.NotEqual(t, StatusAchieved, stopped.Status)
			require.Equal(t, stopped.Status, end.Data.(Ended).Status)
			require.NoError(t, m1.Close())
			if tt.crash {
				// The record of a process that died mid-run still says
				// "running".
				s, err := openSQLiteStore(t.Context(), db)
				require.NoError(t, err)
				stopped.Status = StatusRunning
				require.NoError(t, s.put(t.Context(), stopped))
				require.NoError(t, s.close())
			}

			// A new manager on the same file continues the run from its
			// last checkpoint with a model that gives the answers the
			// conversation has not had yet.
			models := &scriptedModels{}
			m2 := openManager(t, db, models.factory)
			before, err := m2.Get(t.Context(), run.ID)
			require.NoError(t, err)
			require.Equal(t, tt.wantStatus, before.Status)
			require.True(t, before.Resumable())
			st, err := m2.State(t.Context(), run.ID)
			require.NoError(t, err)
			answered := 0
			for _, msg := range st.Messages.List() {
				if msg.Role == llms.ChatMessageTypeAI {
					answered++
				}
			}
			require.GreaterOrEqual(t, answered, 1, "the first answer was checkpointed")
			rest := llm.NewScripted(script[answered:]...)
			models.models = []llm.Model{rest}

			drain := collect(t, m2, run.ID)
			require.NoError(t, m2.Resume(t.Context(), run.ID, ""))
			evs := drain()
			got, err := m2.Wait(t.Context(), run.ID)
			require.NoError(t, err)
			require.Equal(t, StatusAchieved, got.Status, "run: %+v", got)
			require.Empty(t, got.Error)
			require.Equal(t, 2, got.Iteration)
			require.Zero(t, rest.Remaining())
			require.Equal(t, StatusAchieved, evs[len(evs)-1].Data.(Ended).Status)
			data, err := os.ReadFile(filepath.Join(dir, "calc.go"))
			require.NoError(t, err)
			require.Contains(t, string(data), "i <= b")
		})
	}
}

func keep(s []llm.Reply) []llm.Reply { return s }

func TestManagerHumanChecks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		decision   string
		wantStatus Status
		wantIter   int
	}{
		{DecisionApprove, StatusAchieved, 2},
		{"yes", StatusAchieved, 2},
		{DecisionAbort, StatusAborted, 1},
	}
	for _, tt := range tests {
		t.Run(tt.decision, func(t *testing.T) {
			t.Parallel()
			script, err := samples.Script(samples.Shell)
			require.NoError(t, err)
			dir := copySample(t, samples.Shell)
			m := openManager(t, filepath.Join(t.TempDir(), "runs.db"), (&scriptedModels{models: []llm.Model{llm.NewScripted(script...)}}).factory)
			run, err := m.Create(t.Context(), Config{Cwd: dir, Model: "scripted", HITL: true})
			require.NoError(t, err)
			require.True(t, run.HITL)

			drain := collect(t, m, run.ID)
			require.NoError(t, m.Start(t.Context(), run.ID))
			evs := drain()
			check, ok := evs[len(evs)-1].Data.(retrai.HumanCheck)
			require.True(t, ok, "the execution ends with the human check, not %s", evs[len(evs)-1].Kind())
			waiting, err := m.Wait(t.Context(), run.ID)
			require.NoError(t, err)
			require.Equal(t, StatusWaiting, waiting.Status)
			require.Equal(t, 1, waiting.Iteration)
			require.Contains(t, waiting.Question, "Iteration 1 of 10 done: shell:")
			require.Equal(t, waiting.Question, check.Question)
			require.True(t, waiting.Resumable())

			require.ErrorIs(t, m.Resume(t.Context(), run.ID, ""), ErrDecisionRequired)
			require.ErrorIs(t, m.Start(t.Context(), run.ID), ErrNotPending)

			require.NoError(t, m.Resume(t.Context(), run.ID, tt.decision))
			evs = drain()
			got, err := m.Wait(t.Context(), run.ID)
			require.NoError(t, err)
			require.Equal(t, tt.wantStatus, got.Status)
			require.Equal(t, tt.wantIter, got.Iteration)
			require.Empty(t, got.Question)
			require.Equal(t, tt.wantStatus, evs[len(evs)-1].Data.(Ended).Status)
			require.Equal(t, 1, count(evs, retrai.KindHumanDecision))
			require.ErrorIs(t, m.Resume(t.Context(), run.ID, DecisionApprove), ErrFinal)
		})
	}
}

func TestManagerRunsSeveralRunsAtOnce(t *testing.T) {
	t.Parallel()
	m := openManager(t, filepath.Join(t.TempDir(), "runs.db"), func(ctx context.Context, spec string) (llm.Model, error) {
		return samples.Model(spec)
	})
	names := []string{samples.GoTest, samples.Shell}
	ids := map[string]string{}
	for _, name := range names {
		run, err := m.Create(t.Context(), Config{Cwd: copySample(t, name), Model: name})
		require.NoError(t, err)
		ids[name] = run.ID
	}
	sub := m.Bus().Subscribe(t.Context(), events.QueueSize(1<<14))
	for _, name := range names {
		require.NoError(t, m.Start(t.Context(), ids[name]))
	}
	ended := map[string]bool{}
	for ev, err := range sub.Events() {
		require.NoError(t, err)
		require.True(t, slices.Contains([]string{ids[samples.GoTest], ids[samples.Shell]}, ev.RunID), "event %s without a known run ID", ev.Kind())
		if ev.Kind() == KindEnded {
			ended[ev.RunID] = true
			if len(ended) == len(names) {
				break
			}
		}
	}
	for _, name := range names {
		got, err := m.Wait(t.Context(), ids[name])
		require.NoError(t, err)
		require.Equal(t, StatusAchieved, got.Status, "%s: %+v", name, got)
	}
	list, err := m.List(t.Context())
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.True(t, !list[0].CreatedAt.Before(list[1].CreatedAt), "newest first")
}

func TestManagerCreateAppliesTheProjectConfig(t *testing.T) {
	t.Parallel()
	models := &scriptedModels{models: []llm.Model{llm.NewScripted()}}
	m := openManager(t, filepath.Join(t.TempDir(), "runs.db"), models.factory)
	tests := []struct {
		name    string
		yml     string
		cfg     Config
		want    Config
		wantErr error
	}{
		{
			name: "file supplies model, limit, HITL and goal",
			yml:  "goal: shell\ncommand: 'true'\nmodel: from-file\nmax_iterations: 7\nhitl_enabled: true\n",
			want: Config{Goal: "shell", Model: "from-file", MaxIterations: 7, HITL: true},
		},
		{
			name: "the config wins over the file",
			yml:  "command: 'true'\nmodel: from-file\nmax_iterations: 7\n",
			cfg:  Config{Goal: "shell", Model: "from-config", MaxIterations: 3},
			want: Config{Goal: "shell", Model: "from-config", MaxIterations: 3},
		},
		{
			name: "defaults",
			yml:  "command: 'true'\n",
			cfg:  Config{Model: "m"},
			want: Config{Goal: "shell", Model: "m", MaxIterations: retrai.DefaultMaxIterations},
		},
		{
			name:    "no model anywhere",
			yml:     "command: 'true'\n",
			wantErr: ErrNoModel,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, ".retrai.yml"), []byte(tt.yml), 0o644))
			cfg := tt.cfg
			cfg.Cwd = dir
			run, err := m.Create(t.Context(), cfg)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.want.Cwd = dir
			require.Equal(t, tt.want, run.Config)
		})
	}
}

func TestManagerErrors(t *testing.T) {
	t.Parallel()
	models := &scriptedModels{models: []llm.Model{llm.NewScripted()}}
	m := openManager(t, filepath.Join(t.TempDir(), "runs.db"), models.factory)
	dir := copySample(t, samples.GoTest)

	_, err := m.Get(t.Context(), "nope")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, m.Start(t.Context(), "nope"), ErrNotFound)
	require.ErrorIs(t, m.Resume(t.Context(), "nope", ""), ErrNotFound)
	require.ErrorIs(t, m.Cancel("nope"), ErrNotActive)
	_, err = m.Create(t.Context(), Config{Cwd: dir, Model: "m", Goal: "no-such-goal"})
	require.ErrorContains(t, err, `unknown goal "no-such-goal"`)
	_, err = m.Create(t.Context(), Config{Cwd: filepath.Join(dir, "missing"), Model: "m"})
	require.Error(t, err)
	_, err = m.Create(t.Context(), Config{Cwd: t.TempDir(), Model: "m"})
	require.ErrorContains(t, err, "no goal detected")

	// A model that cannot be built fails the run at Start; it stays
	// resumable.
	run, err := m.Create(t.Context(), Config{Cwd: dir, Model: "m"})
	require.NoError(t, err)
	models.mu.Lock()
	models.models = nil
	models.mu.Unlock()
	drain := collect(t, m, run.ID)
	require.ErrorContains(t, m.Start(t.Context(), run.ID), "no more models")
	evs := drain()
	require.Equal(t, []events.Kind{events.KindError, KindEnded}, kinds(evs))
	got, err := m.Get(t.Context(), run.ID)
	require.NoError(t, err)
	require.Equal(t, StatusError, got.Status)
	require.Contains(t, got.Error, "no more models")
	require.True(t, got.Resumable())

	require.NoError(t, m.Close())
	require.ErrorIs(t, m.Resume(context.Background(), run.ID, ""), ErrClosed)
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	url := os.Getenv("AGENTGRAPH_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("AGENTGRAPH_TEST_POSTGRES_URL is not set: skipping the PostgreSQL run store (eval \"$(scripts/pg-test.sh start)\" starts a server)")
	}
	require.True(t, IsPostgresURL(url), "want a postgres:// URL, got %q", url)
	dir := copySample(t, samples.Shell)
	m := openManager(t, url, func(ctx context.Context, spec string) (llm.Model, error) { return samples.Model(spec) })
	run, err := m.Create(t.Context(), Config{Cwd: dir, Model: samples.Shell})
	require.NoError(t, err)
	drain := collect(t, m, run.ID)
	require.NoError(t, m.Start(t.Context(), run.ID))
	drain()
	got, err := m.Wait(t.Context(), run.ID)
	require.NoError(t, err)
	require.Equal(t, StatusAchieved, got.Status, "%+v", got)
	list, err := m.List(t.Context())
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(list, func(r Run) bool { return r.ID == run.ID }))
}

func TestStatusFinal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status    Status
		final     bool
		resumable bool
	}{
		{StatusPending, false, false},
		{StatusRunning, false, false},
		{StatusWaiting, false, true},
		{StatusInterrupted, false, true},
		{StatusError, false, true},
		{StatusFailed, true, false},
		{StatusAchieved, true, false},
		{StatusAborted, true, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.final, tt.status.Final(), "%s", tt.status)
		require.Equal(t, tt.resumable, Run{Status: tt.status}.Resumable(), "%s", tt.status)
	}
}

func TestMermaid(t *testing.T) {
	t.Parallel()
	m, err := Mermaid()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(m, "flowchart TD"))
	require.Contains(t, m, "human_check -. abort .-> __end__")
}
