package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	agtemporal "github.com/agentgraph/agentgraph/temporal"
	"github.com/agentgraph/agentgraph/tools"
)

// sampleFixed reports whether the off-by-one bug of the sample in dir is
// fixed.
func sampleFixed(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "calc.go"))
	require.NoError(t, err)
	return bytes.Contains(b, []byte("i <= b"))
}

func TestRetraiAnswerMapsTheReviewersAnswer(t *testing.T) {
	for _, tc := range []struct {
		answer, value string
		approved      bool
		err           bool
	}{
		{"approve", "approve", true, false},
		{" Yes ", "approve", true, false},
		{"ok", "approve", true, false},
		{"continue", "approve", true, false},
		{"", "approve", true, false},
		{"abort", "abort", false, false},
		{"reject", "abort", false, false},
		{"NO", "abort", false, false},
		{"stop", "abort", false, false},
		{"only touch calc.go", "", false, true},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			value, approved, err := retraiAnswer(tc.answer)
			if tc.err {
				require.ErrorIs(t, err, errRetraiAnswer)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.value, value)
			require.Equal(t, tc.approved, approved)
			require.Equal(t, tc.approved, retrai.Approved(value), "the agent reads the value as the command does")
		})
	}
}

func TestRetraiProjectRefusesWhatIsNotADirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, dir := range []string{file, filepath.Join(t.TempDir(), "missing")} {
		_, _, err := retraiProject(dir)
		require.Error(t, err, dir)
	}
}

func TestRetraiProjectCopiesTheSampleByDefault(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, created, err := retraiProject("")
	require.NoError(t, err)
	require.True(t, created)
	require.True(t, filepath.IsAbs(dir), dir)
	require.FileExists(t, filepath.Join(dir, "go.mod"))
	require.False(t, sampleFixed(t, dir))

	wd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(wd, dir)
	require.NoError(t, err)
	got, created, err := retraiProject(rel)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, dir, got, "a relative --project is made absolute for the workers")
}

// newSample returns a fresh copy of the bundled sample.
func newSample(t *testing.T) string {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir())
	dir, _, err := retraiProject("")
	require.NoError(t, err)
	return dir
}

// retraiUntilHumanCheck runs retrAI in process on the offline model on a
// copy of the sample until its human check, and returns the database and
// the project.
func retraiUntilHumanCheck(t *testing.T) (db, dir string) {
	t.Helper()
	ctx := t.Context()
	dir = newSample(t)
	db = filepath.Join(t.TempDir(), "c.db")
	saver, err := sqlite.Open(ctx, db)
	require.NoError(t, err)
	defer saver.Close()
	g, err := newRetrai(newRetraiOfflineModel(), saver)
	require.NoError(t, err)
	_, err = g.Invoke(ctx, retraiInput("t", dir, ""), graph.WithThread("t"))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	require.Len(t, intr.Interrupts, 1)
	require.Equal(t, retrai.HumanCheckNode, intr.Interrupts[0].Node)
	require.False(t, sampleFixed(t, dir))
	return db, dir
}

// resumeRetrai answers the human check of thread t in db with answer,
// through a graph and a model built anew (as another worker would), and
// returns the final state.
func resumeRetrai(t *testing.T, db, answer string) retrai.State {
	t.Helper()
	ctx := t.Context()
	saver, err := sqlite.Open(ctx, db)
	require.NoError(t, err)
	defer saver.Close()
	g, err := newRetrai(newRetraiOfflineModel(), saver)
	require.NoError(t, err)
	value, _, err := retraiAnswer(answer)
	require.NoError(t, err)
	out, err := g.Resume(ctx, graph.Command[retrai.State]{Resume: value}, graph.WithThread("t"))
	require.NoError(t, err)
	return out
}

// TestRetraiOfflineFixesTheSampleOnAnotherModel checks that the offline
// model depends only on the messages it is sent: a model built anew, as
// another worker process has, carries the run on after the human check.
func TestRetraiOfflineFixesTheSampleOnAnotherModel(t *testing.T) {
	db, dir := retraiUntilHumanCheck(t)
	out := resumeRetrai(t, db, "approve")
	require.Equal(t, retrai.OutcomeAchieved, out.Outcome(), out.GoalReason.Get())
	require.Equal(t, 2, out.Iteration.Get())
	require.True(t, sampleFixed(t, dir))
}

func TestRetraiAbortStopsTheRun(t *testing.T) {
	db, dir := retraiUntilHumanCheck(t)
	out := resumeRetrai(t, db, "abort")
	require.Equal(t, retrai.OutcomeAborted, out.Outcome())
	require.Equal(t, 1, out.Iteration.Get())
	require.False(t, sampleFixed(t, dir))
}

// newTestEnv returns a test environment of the SDK's testsuite whose
// activities may take a while: retrAI's run `go test` (the testsuite's
// default is to give up after 3 s without an event).
func newTestEnv() *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	return suite.NewTestWorkflowEnvironment().SetTestTimeout(5 * time.Minute)
}

// TestRetraiOnTheSDKTestsuite runs retrAI as a workflow of the Temporal
// SDK's test environment (offline): the run pauses at its human check, a
// signal approves, and the sample is fixed.
func TestRetraiOnTheSDKTestsuite(t *testing.T) {
	ctx := t.Context()
	dir := newSample(t)
	saver, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	require.NoError(t, err)
	t.Cleanup(func() { saver.Close() })
	g, err := newRetrai(newRetraiOfflineModel(), saver)
	require.NoError(t, err)
	w, err := agtemporal.New(retraiWorkflow, g)
	require.NoError(t, err)

	env := newTestEnv()
	w.Register(env)
	var asked []HumanCheck
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(agtemporal.QueryState)
		require.NoError(t, err)
		var st agtemporal.Status
		require.NoError(t, v.Get(&st))
		require.Len(t, st.Interrupts, 1)
		require.Equal(t, retrai.HumanCheckNode, st.Interrupts[0].Node)
		var hc HumanCheck
		require.NoError(t, json.Unmarshal(st.Interrupts[0].Value, &hc))
		asked = append(asked, hc)
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{ID: st.Interrupts[0].ID, Value: json.RawMessage(`"approve"`)})
	}, time.Hour)
	in, err := w.Input("t", retraiInput("t", dir, ""))
	require.NoError(t, err)
	env.ExecuteWorkflow(w.Name(), in)
	require.NoError(t, env.GetWorkflowError())
	var st agtemporal.Status
	require.NoError(t, env.GetWorkflowResult(&st))
	require.True(t, st.Done)
	out, err := w.Values(ctx, st)
	require.NoError(t, err)
	require.Equal(t, retrai.OutcomeAchieved, out.Outcome(), out.GoalReason.Get())
	require.Len(t, asked, 1)
	require.Equal(t, 1, asked[0].Iteration)
	require.Contains(t, asked[0].Question, "Continue (approve) or stop (abort)?")
	require.True(t, sampleFixed(t, dir))
}

// TestStartRefusesAThreadWithCheckpoints starts a retrAI run on the thread
// of a research run: it is refused before Temporal is reached (the
// address is unreachable), and nothing is written.
func TestStartRefusesAThreadWithCheckpoints(t *testing.T) {
	ctx := t.Context()
	db := filepath.Join(t.TempDir(), "c.db")
	saver, err := sqlite.Open(ctx, db)
	require.NoError(t, err)
	g, err := newAgent(newOfflineModel(), saver)
	require.NoError(t, err)
	_, err = g.Invoke(ctx, input(demoQuestion), graph.WithThread("used"))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	require.NoError(t, saver.Close())

	for _, agent := range []string{retraiWorkflow, workflowName} {
		t.Run(agent, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			code, stdout, stderr := runCmd(ctx, "start", "--addr", "127.0.0.1:1", "--db", db, "--thread", "used", "--agent", agent, "q")
			require.Equal(t, exitError, code, stderr)
			require.Empty(t, stdout)
			require.Contains(t, stderr, ErrThreadUsed.Error())
			entries, err := os.ReadDir(os.Getenv("TMPDIR"))
			require.NoError(t, err)
			require.Empty(t, entries, "no project was copied for a refused start")
		})
	}
}

// TestTwoWorkersFixTheSample is the README's retrAI walk-through against
// a real server: two worker processes share a SQLite checkpointer; a run
// of retrAI on a copy of the sample pauses at its human check, an answer
// it does not take is refused, approve answers, and the run fixes the
// sample.
func TestTwoWorkersFixTheSample(t *testing.T) {
	addr := devServer(t)
	t.Setenv("TMPDIR", t.TempDir()) // the sample's copy, for the workers too
	dir := t.TempDir()
	db := filepath.Join(dir, "checkpoints.db")
	queue := fmt.Sprintf("agentgraph-example-r-%d-%d", os.Getpid(), time.Now().UnixNano())
	for i := range 2 {
		startWorker(t, filepath.Join(dir, fmt.Sprintf("worker%d.log", i)), "--addr", addr, "--queue", queue, "--db", db)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	thread := "thread-" + queue

	code, stdout, stderr := runCmd(ctx, "start", "--addr", addr, "--queue", queue, "--db", db, "--thread", thread, "--agent", "retrai")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, thread+"\n", stdout)
	require.Contains(t, stderr, "a copy of the bundled sample")

	c, err := dial(dialOptions(addr), &bytes.Buffer{})
	require.NoError(t, err)
	defer c.Close()
	_, err = waitPaused(ctx, c, thread, 2*time.Minute)
	require.NoError(t, err)
	code, stdout, stderr = runCmd(ctx, "status", "--addr", addr, "--thread", thread)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "thread "+thread+" (retrai): step")
	require.Contains(t, stdout, "waiting for approval")
	require.Contains(t, stdout, "at node human_check")
	require.Contains(t, stdout, "question: Iteration 1 of 10 done")

	code, _, stderr = runCmd(ctx, "approve", "--addr", addr, "--thread", thread, "--answer", "fix it differently")
	require.Equal(t, exitError, code)
	require.Contains(t, stderr, errRetraiAnswer.Error())

	code, stdout, stderr = runCmd(ctx, "approve", "--addr", addr, "--thread", thread)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "approved the next iteration of thread "+thread)

	code, stdout, stderr = runCmd(ctx, "wait", "--addr", addr, "--db", db, "--thread", thread)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "achieved after 2 iteration(s)")
	project := between(stdout, "project: ", "\n")
	require.True(t, sampleFixed(t, project), project)

	code, stdout, stderr = runCmd(ctx, "status", "--addr", addr, "--thread", thread)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "thread "+thread+" (retrai): done")
}

// TestRetraiRunOutlivesAKilledWorker kills (kill -9) the only worker of a
// retrAI run paused at its human check; a worker started afterwards, in
// another process with its own scripted model, carries the run on to the
// fix.
func TestRetraiRunOutlivesAKilledWorker(t *testing.T) {
	addr := devServer(t)
	t.Setenv("TMPDIR", t.TempDir())
	dir := t.TempDir()
	db := filepath.Join(dir, "checkpoints.db")
	queue := fmt.Sprintf("agentgraph-example-rk-%d-%d", os.Getpid(), time.Now().UnixNano())
	first := startWorker(t, filepath.Join(dir, "worker0.log"), "--addr", addr, "--queue", queue, "--db", db)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	thread := "thread-" + queue
	code, _, stderr := runCmd(ctx, "start", "--addr", addr, "--queue", queue, "--db", db, "--thread", thread, "--agent", "retrai")
	require.Equal(t, exitOK, code, stderr)
	c, err := dial(dialOptions(addr), &bytes.Buffer{})
	require.NoError(t, err)
	defer c.Close()
	_, err = waitPaused(ctx, c, thread, 2*time.Minute)
	require.NoError(t, err)

	require.NoError(t, first.Process.Kill())
	_ = first.Wait() // killed
	startWorker(t, filepath.Join(dir, "worker1.log"), "--addr", addr, "--queue", queue, "--db", db)

	code, stdout, stderr := runCmd(ctx, "approve", "--addr", addr, "--thread", thread, "--answer", "yes")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "approved the next iteration")
	code, stdout, stderr = runCmd(ctx, "wait", "--addr", addr, "--db", db, "--thread", thread)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "achieved after 2 iteration(s)")
	require.True(t, sampleFixed(t, between(stdout, "project: ", "\n")))
}

// orderModel asks, in its first answer, for two tool calls that must run
// one after the other, and then for nothing.
type orderModel struct{}

func (orderModel) Generate(ctx context.Context, msgs []state.Message, _ ...llm.CallOption) (*llm.Response, error) {
	for _, m := range msgs {
		if m.Role == llms.ChatMessageTypeAI {
			return &llm.Response{Message: state.AI("done"), StopReason: llm.StopEnd}, nil
		}
	}
	return &llm.Response{Message: state.AI("patch, then test",
		state.ToolCall("call_1", "patch", `{}`), state.ToolCall("call_2", "test", `{}`)), StopReason: llm.StopToolCalls}, nil
}

// TestRetraiToolCallsRunInCallOrderOnTemporal checks that the tool calls
// of one model turn — "patch the file, then run the tests" — run one
// after the other, in call order, as retrAI runs them in process, when
// the agent runs as this command's workflow. The first call's tool is slow;
// the second records whether the first had finished when it started.
func TestRetraiToolCallsRunInCallOrderOnTemporal(t *testing.T) {
	ctx := t.Context()
	var (
		mu       sync.Mutex
		order    []string
		patched  bool
		sawPatch []bool
	)
	toolsFor := func(string) ([]tools.Tool, error) {
		type noArgs struct{}
		return []tools.Tool{
			tools.New("patch", "patch", func(ctx context.Context, _ noArgs) (string, error) {
				mu.Lock()
				order = append(order, "patch")
				mu.Unlock()
				time.Sleep(100 * time.Millisecond) // a slow patch: a test run started beside it would see the old file
				mu.Lock()
				patched = true
				mu.Unlock()
				return "patched", nil
			}),
			tools.New("test", "test", func(ctx context.Context, _ noArgs) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				order = append(order, "test")
				sawPatch = append(sawPatch, patched)
				return "ok", nil
			}),
		}, nil
	}
	saver, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	require.NoError(t, err)
	t.Cleanup(func() { saver.Close() })
	g, err := newRetrai(orderModel{}, saver, retrai.WithTools(toolsFor))
	require.NoError(t, err)
	w, err := agtemporal.New(retraiWorkflow, g)
	require.NoError(t, err)

	env := newTestEnv()
	w.Register(env)
	in, err := w.Input("t", retrai.Input(retrai.Run{RunID: "t", Cwd: t.TempDir(), MaxIterations: 1}))
	require.NoError(t, err)
	env.ExecuteWorkflow(w.Name(), in)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"patch", "test"}, order)
	require.Equal(t, []bool{true}, sawPatch, "the test ran before the patch had finished")
}
