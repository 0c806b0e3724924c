package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
)

// The integration test runs against a Temporal server at
// $AGENTGRAPH_TEMPORAL_ADDR (scripts/temporal-dev.sh starts one) and is
// skipped without one. Its workers are this test binary, started again
// with $AGENTGRAPH_TEMPORAL_EXAMPLE_WORKER set to the worker's arguments,
// one a line (see TestMain).
const envWorker = "AGENTGRAPH_TEMPORAL_EXAMPLE_WORKER"

func TestMain(m *testing.M) {
	if args := os.Getenv(envWorker); args != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, append([]string{"worker"}, strings.Split(args, "\n")...), os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// runCmd runs the command line args and returns its exit code, stdout and
// stderr.
func runCmd(ctx context.Context, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCommandLineErrors(t *testing.T) {
	t.Setenv(envAddr, "")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"no command", nil, exitUsage, "Usage:"},
		{"unknown command", []string{"launch"}, exitUsage, `unknown command "launch"`},
		{"start without question", []string{"start"}, exitUsage, "want one question, got 0"},
		{"start with two questions", []string{"start", "a", "b"}, exitUsage, "want one question, got 2"},
		{"start with blank question", []string{"start", "  "}, exitUsage, "the question is empty"},
		{"status without thread", []string{"status"}, exitUsage, "--thread is required"},
		{"approve without thread", []string{"approve"}, exitUsage, "--thread is required"},
		{"wait without thread", []string{"wait"}, exitUsage, "--thread is required"},
		{"status with argument", []string{"status", "--thread", "t", "extra"}, exitUsage, `unexpected argument "extra"`},
		{"approve with zero timeout", []string{"approve", "--thread", "t", "--timeout", "0s"}, exitUsage, "--timeout must be positive"},
		{"empty queue", []string{"worker", "--queue", ""}, exitUsage, "--queue is empty"},
		{"empty db", []string{"start", "--db", "", "q"}, exitUsage, "--db is empty"},
		{"empty addr", []string{"status", "--addr", "", "--thread", "t"}, exitUsage, "--address is empty"},
		{"flag of another command", []string{"status", "--model", "x", "--thread", "t"}, exitUsage, "flag provided but not defined: -model"},
		{"bad model spec", []string{"worker", "--model", "nosuchprovider:x", "--db", filepath.Join(t.TempDir(), "c.db")}, exitError, "nosuchprovider"},
		{"unknown agent", []string{"start", "--agent", "coder", "q"}, exitUsage, `unknown agent "coder"`},
		{"project for research", []string{"start", "--project", ".", "q"}, exitUsage, "--project is for --agent retrai"},
		{"retrai with two arguments", []string{"start", "--agent", "retrai", "a", "b"}, exitUsage, "want at most one argument"},
		{"agent of another command", []string{"approve", "--agent", "retrai", "--thread", "t"}, exitUsage, "flag provided but not defined: -agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCmd(t.Context(), tc.args...)
			require.Equal(t, tc.code, code, stderr)
			require.Contains(t, stderr, tc.want)
		})
	}
}

func TestHelpPrintsUsage(t *testing.T) {
	code, stdout, _ := runCmd(t.Context(), "help")
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, "agentgraph-temporal worker")
}

func TestFlagsAfterTheQuestion(t *testing.T) {
	t.Setenv(envAddr, "temporal.example:7233")
	o, err := parseFlags("start", []string{"How?", "--thread", "t1", "--queue", "q"}, &bytes.Buffer{})
	require.NoError(t, err)
	want := options{addr: "temporal.example:7233", queue: "q", db: defaultDB, thread: "t1", agent: workflowName, question: "How?",
		conn: connOptions{address: "temporal.example:7233", namespace: defaultNamespace}}
	require.Empty(t, cmp.Diff(want, *o, cmp.AllowUnexported(options{}, connOptions{}, optBool{})))
}

func TestStartMakesAThreadWhenNoneIsGiven(t *testing.T) {
	for _, args := range [][]string{{"How?"}, {"--agent", "research", "How?"}, {"--agent", "retrai"}} {
		o, err := parseFlags("start", args, &bytes.Buffer{})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(o.thread, o.agent+"-"), o.thread)
	}
}

func TestReadNoteRefusesPaths(t *testing.T) {
	for _, name := range []string{"", ".", "..", "../agent.go", "../../main.go", "/etc/passwd", `..\main.go`, "notes/retention.md", "missing.md"} {
		t.Run(name, func(t *testing.T) {
			_, err := readNote(t.Context(), ReadArgs{Name: name})
			require.ErrorContains(t, err, "no note")
		})
	}
}

func TestSearchNotesRanksByWordsFound(t *testing.T) {
	out, err := searchNotes(t.Context(), SearchArgs{Query: "How long are application logs kept?"})
	require.NoError(t, err)
	require.Equal(t, "retention.md: Log retention", firstLine(out))
}

func TestSearchNotesWithoutWordsFails(t *testing.T) {
	_, err := searchNotes(t.Context(), SearchArgs{Query: "a an ?"})
	require.Error(t, err)
}

func TestParsePlanFallsBackToTheQuestion(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`["a", "b"]`, "a|b"},
		{"Here:\n```json\n[\"a\"]\n```", "a"},
		{"no plan", "Research: q"},
		{`["", " "]`, "Research: q"},
		{`[1, 2]`, "Research: q"},
	} {
		require.Equal(t, tc.want, strings.Join(parsePlan(tc.text, "q"), "|"), tc.text)
	}
}

// invokeOffline runs the agent in process on the offline model up to its
// interrupt, answers it with answer, and returns the final state.
func invokeOffline(t *testing.T, answer string) State {
	t.Helper()
	ctx := t.Context()
	saver, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	require.NoError(t, err)
	t.Cleanup(func() { saver.Close() })
	g, err := newAgent(newOfflineModel(), saver)
	require.NoError(t, err)
	_, err = g.Invoke(ctx, input(demoQuestion), graph.WithThread("t"))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	require.Len(t, intr.Interrupts, 1)
	require.Equal(t, approveNode, intr.Interrupts[0].Node)
	review, ok := intr.Interrupts[0].Value.(PlanReview)
	require.True(t, ok, "%T", intr.Interrupts[0].Value)
	require.Equal(t, demoQuestion, review.Question)
	require.NotEmpty(t, review.Plan)
	out, err := g.Resume(ctx, graph.Command[State]{Resume: answer}, graph.WithThread("t"))
	require.NoError(t, err)
	return out
}

func TestApprovedRunAnswersFromTheNote(t *testing.T) {
	out := invokeOffline(t, "approve")
	require.True(t, out.Approved.Get())
	require.Contains(t, out.Answer.Get(), "retention.md")
	require.Contains(t, out.Answer.Get(), "kept for 30 days")
}

func TestRejectedRunEndsWithoutResearch(t *testing.T) {
	out := invokeOffline(t, "reject")
	require.False(t, out.Approved.Get())
	require.Equal(t, "The reviewer rejected the plan: reject", out.Answer.Get())
}

func TestReviewersNoteReachesTheResearchAgent(t *testing.T) {
	require.Equal(t, "Q?\n\nThe reviewer's note: only the hot store", researchInput("Q?", nil, "only the hot store"))
	require.Equal(t, "Q?\n\nA reviewer approved this plan:\n1. a\n2. b", researchInput("Q?", []string{"a", "b"}, " OK "))
}

// TestTwoWorkersRunApprovedPlan is the README's walk-through against a
// real server: two worker processes share a SQLite checkpointer; a run is
// started, its plan approved through the update, and its answer waited
// for.
func TestTwoWorkersRunApprovedPlan(t *testing.T) {
	addr := devServer(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "checkpoints.db")
	queue := fmt.Sprintf("agentgraph-example-%d-%d", os.Getpid(), time.Now().UnixNano())
	for i := range 2 {
		startWorker(t, filepath.Join(dir, fmt.Sprintf("worker%d.log", i)), "--addr", addr, "--queue", queue, "--db", db)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	thread := "thread-" + queue

	code, stdout, stderr := runCmd(ctx, "start", "--addr", addr, "--queue", queue, "--db", db, "--thread", thread, demoQuestion)
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, thread+"\n", stdout)

	code, stdout, stderr = runCmd(ctx, "approve", "--addr", addr, "--thread", thread, "--answer", "yes")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "approved the plan of thread "+thread)

	code, stdout, stderr = runCmd(ctx, "wait", "--addr", addr, "--db", db, "--thread", thread)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "retention.md")
	require.Contains(t, stdout, "kept for 30 days")

	code, stdout, stderr = runCmd(ctx, "status", "--addr", addr, "--thread", thread)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "thread "+thread+" (research): done")

	// The run no longer waits: a second approval is refused.
	code, _, stderr = runCmd(ctx, "approve", "--addr", addr, "--thread", thread, "--timeout", "5s")
	require.Equal(t, exitError, code)
	require.Contains(t, stderr, ErrNotWaiting.Error())
}

// TestStatusShowsThePlanToApprove checks that a paused run's status names
// the interrupt and the plan, and that a rejection ends the run.
func TestStatusShowsThePlanToApprove(t *testing.T) {
	addr := devServer(t)
	_, db, thread, ctx := startDemoRun(t, addr, "s")

	c, err := dial(dialOptions(addr), &bytes.Buffer{})
	require.NoError(t, err)
	defer c.Close()
	_, err = waitPaused(ctx, c, thread, time.Minute)
	require.NoError(t, err)
	code, stdout, stderr := runCmd(ctx, "status", "--addr", addr, "--thread", thread)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "waiting for approval")
	require.Contains(t, stdout, "at node approve")
	require.Contains(t, stdout, "question: "+demoQuestion)
	require.Contains(t, stdout, "1. Search the notes")

	code, stdout, stderr = runCmd(ctx, "approve", "--addr", addr, "--thread", thread, "--answer", "reject")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "rejected")
	code, stdout, stderr = runCmd(ctx, "wait", "--addr", addr, "--db", db, "--thread", thread)
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "The reviewer rejected the plan: reject\n", stdout)
}

// TestStatusAnswersWithEveryWorkerStopped runs the walk-through as on
// several machines — two workers sharing a PostgreSQL checkpointer
// (--postgres), the connection given as the Temporal CLI's flags — stops
// every worker while the run waits for approval, and asks for its
// status: it is answered from the run's memo, plan included. A worker
// started afterwards carries the run on.
func TestStatusAnswersWithEveryWorkerStopped(t *testing.T) {
	addr := devServer(t)
	pg := os.Getenv("AGENTGRAPH_TEST_POSTGRES_URL")
	if pg == "" {
		t.Skip("no PostgreSQL: set AGENTGRAPH_TEST_POSTGRES_URL")
	}
	dir := t.TempDir()
	queue := fmt.Sprintf("agentgraph-example-pg-%d-%d", os.Getpid(), time.Now().UnixNano())
	conn := []string{"--address", addr, "--namespace", "default"}
	store := append([]string{"--postgres", pg}, conn...)
	var workers []*exec.Cmd
	for i := range 2 {
		workers = append(workers, startWorker(t, filepath.Join(dir, fmt.Sprintf("worker%d.log", i)), append([]string{"--queue", queue}, store...)...))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	thread := "thread-" + queue
	code, _, stderr := runCmd(ctx, append([]string{"start", "--queue", queue, "--thread", thread, demoQuestion}, store...)...)
	require.Equal(t, exitOK, code, stderr)
	c, err := dial(dialOptions(addr), &bytes.Buffer{})
	require.NoError(t, err)
	defer c.Close()
	_, err = waitPaused(ctx, c, thread, time.Minute)
	require.NoError(t, err)

	for _, w := range workers {
		require.NoError(t, w.Process.Kill())
		_ = w.Wait()
	}
	code, stdout, stderr := runCmd(ctx, append([]string{"status", "--thread", thread}, conn...)...)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "thread "+thread+" (research): step 1, waiting for approval")
	require.Contains(t, stdout, "at node approve")
	require.Contains(t, stdout, "question: "+demoQuestion)
	require.Contains(t, stdout, "1. Search the notes")

	startWorker(t, filepath.Join(dir, "worker2.log"), append([]string{"--queue", queue}, store...)...)
	code, _, stderr = runCmd(ctx, append([]string{"approve", "--thread", thread}, conn...)...)
	require.Equal(t, exitOK, code, stderr)
	code, stdout, stderr = runCmd(ctx, append([]string{"wait", "--thread", thread}, store...)...)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "kept for 30 days")
	code, stdout, stderr = runCmd(ctx, append([]string{"status", "--thread", thread}, conn...)...)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "thread "+thread+" (research): done")
}

// TestRunOutlivesTheWorkerThatStartedIt kills (kill -9) the only worker
// while the run waits for approval; a worker started afterwards, in
// another process with its own offline model, carries the run to its
// answer.
func TestRunOutlivesTheWorkerThatStartedIt(t *testing.T) {
	addr := devServer(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "checkpoints.db")
	queue := fmt.Sprintf("agentgraph-example-k-%d-%d", os.Getpid(), time.Now().UnixNano())
	first := startWorker(t, filepath.Join(dir, "worker0.log"), "--addr", addr, "--queue", queue, "--db", db)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	thread := "thread-" + queue
	code, _, stderr := runCmd(ctx, "start", "--addr", addr, "--queue", queue, "--db", db, "--thread", thread, demoQuestion)
	require.Equal(t, exitOK, code, stderr)
	c, err := dial(dialOptions(addr), &bytes.Buffer{})
	require.NoError(t, err)
	defer c.Close()
	_, err = waitPaused(ctx, c, thread, time.Minute)
	require.NoError(t, err)

	require.NoError(t, first.Process.Kill())
	_ = first.Wait() // killed
	second := startWorker(t, filepath.Join(dir, "worker1.log"), "--addr", addr, "--queue", queue, "--db", db)
	require.NotEqual(t, first.Process.Pid, second.Process.Pid)

	code, _, stderr = runCmd(ctx, "approve", "--addr", addr, "--thread", thread)
	require.Equal(t, exitOK, code, stderr)
	code, stdout, stderr := runCmd(ctx, "wait", "--addr", addr, "--db", db, "--thread", thread)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "kept for 30 days")
	log, err := os.ReadFile(filepath.Join(dir, "worker1.log"))
	require.NoError(t, err)
	require.Contains(t, string(log), "this worker runs OFFLINE on scripted models")
}

// TestHostileUse checks the commands' answers to misuse against a real
// server: a second start on an open thread, an approval and a status of a
// thread with no run, and two approvals racing for one interrupt.
func TestHostileUse(t *testing.T) {
	addr := devServer(t)
	queue, db, thread, ctx := startDemoRun(t, addr, "h")

	t.Run("second start on an open thread", func(t *testing.T) {
		code, stdout, stderr := runCmd(ctx, "start", "--addr", addr, "--queue", queue, "--db", db, "--thread", thread, "Another question?")
		require.Equal(t, exitError, code)
		require.Empty(t, stdout)
		require.Contains(t, stderr, ErrThreadUsed.Error())
	})
	t.Run("approve a thread with no run", func(t *testing.T) {
		code, _, stderr := runCmd(ctx, "approve", "--addr", addr, "--thread", "no-such-"+queue, "--timeout", "1m")
		require.Equal(t, exitError, code)
		require.Contains(t, stderr, "no run")
	})
	t.Run("status of a thread with no run", func(t *testing.T) {
		code, _, _ := runCmd(ctx, "status", "--addr", addr, "--thread", "no-such-"+queue)
		require.Equal(t, exitError, code)
	})
	t.Run("two approvals race", func(t *testing.T) {
		type result struct {
			answer string
			code   int
		}
		results := make(chan result, 2)
		for _, answer := range []string{"approve", "reject"} {
			go func() {
				code, _, _ := runCmd(ctx, "approve", "--addr", addr, "--thread", thread, "--answer", answer, "--timeout", "30s")
				results <- result{answer, code}
			}()
		}
		a, b := <-results, <-results
		require.ElementsMatch(t, []int{exitOK, exitError}, []int{a.code, b.code})
		winner := a.answer
		if b.code == exitOK {
			winner = b.answer
		}
		code, stdout, stderr := runCmd(ctx, "wait", "--addr", addr, "--db", db, "--thread", thread)
		require.Equal(t, exitOK, code, stderr)
		if winner == "reject" {
			require.Equal(t, "The reviewer rejected the plan: reject\n", stdout)
		} else {
			require.Contains(t, stdout, "kept for 30 days")
		}
	})
}

// startWorker starts a worker process with args, logging to logPath; it
// is stopped when the test ends, and its log shown if the test failed.
func startWorker(t *testing.T, logPath string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envWorker+"="+strings.Join(args, "\n"))
	out, err := os.Create(logPath)
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
		out.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("worker (pid %d) output:\n%s", cmd.Process.Pid, b)
		}
	})
	return cmd
}

// dialOptions are the options of a command that dials addr.
func dialOptions(addr string) *options {
	return &options{conn: connOptions{address: addr, namespace: defaultNamespace}}
}

// devServer returns the Temporal dev server's address, or skips the test.
func devServer(t *testing.T) string {
	t.Helper()
	addr := os.Getenv(envAddr)
	if addr == "" {
		t.Skipf("no Temporal server: run eval \"$(scripts/temporal-dev.sh)\" to set %s", envAddr)
	}
	return addr
}

// startDemoRun starts a worker on a task queue of its own (named with
// tag) and the demo question's run on it, and returns where it runs and a
// context bounding the test.
func startDemoRun(t *testing.T, addr, tag string) (queue, db, thread string, ctx context.Context) {
	t.Helper()
	dir := t.TempDir()
	db = filepath.Join(dir, "checkpoints.db")
	queue = fmt.Sprintf("agentgraph-example-%s-%d-%d", tag, os.Getpid(), time.Now().UnixNano())
	startWorker(t, filepath.Join(dir, "worker.log"), "--addr", addr, "--queue", queue, "--db", db)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	thread = "thread-" + queue
	code, _, stderr := runCmd(ctx, "start", "--addr", addr, "--queue", queue, "--db", db, "--thread", thread, demoQuestion)
	require.Equal(t, exitOK, code, stderr)
	return queue, db, thread, ctx
}
