package temporal_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	agtemporal "github.com/agentgraph/agentgraph/temporal"
)

// The integration tests run against a Temporal server at
// $AGENTGRAPH_TEMPORAL_ADDR (started by scripts/temporal-dev.sh) and are
// skipped without one. Their workers are this test binary, started again
// with $AGENTGRAPH_TEMPORAL_WORKER set (see TestMain).
const (
	envAddr   = "AGENTGRAPH_TEMPORAL_ADDR"
	envWorker = "AGENTGRAPH_TEMPORAL_WORKER"
	envDB     = "AGENTGRAPH_TEMPORAL_TEST_DB"
	envLog    = "AGENTGRAPH_TEMPORAL_TEST_EFFECTS"
	envQueue  = "AGENTGRAPH_TEMPORAL_TEST_QUEUE"
	// The kill tests' timings (see killOptions and killGraph) and a
	// worker's tag (see effectPID).
	envHeartbeat = "AGENTGRAPH_TEMPORAL_TEST_HEARTBEAT"
	envLeaseTTL  = "AGENTGRAPH_TEMPORAL_TEST_LEASE_TTL"
	envRetry     = "AGENTGRAPH_TEMPORAL_TEST_RETRY"
	envTag       = "AGENTGRAPH_TEMPORAL_TEST_TAG"
)

func TestMain(m *testing.M) {
	if os.Getenv(envWorker) != "" {
		if err := runWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// killOptions are the options of the integration tests' workflows, the
// same in the workers and the starter: a killed worker is noticed after a
// 2 s heartbeat timeout ($AGENTGRAPH_TEMPORAL_TEST_HEARTBEAT), and retried
// after 200 ms growing to 2 s (Temporal's default retry policy with
// $AGENTGRAPH_TEMPORAL_TEST_RETRY=default).
func killOptions() []agtemporal.Option {
	rp := &sdktemporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 1.5, MaximumInterval: 2 * time.Second}
	if os.Getenv(envRetry) == "default" {
		rp = nil
	}
	return []agtemporal.Option{agtemporal.WithActivityOptions(workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    envDuration(envHeartbeat, 2*time.Second),
		RetryPolicy:         rp,
	})}
}

// envDuration returns the duration in the environment variable name, or
// def.
func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

// effectPID is the number the side-effect log records for this process:
// its PID, or $AGENTGRAPH_TEMPORAL_TEST_TAG for a worker in a PID
// namespace of its own (where every PID is 1).
var effectPID = os.Getpid()

// effect appends a line to the side-effect log shared by the workers.
func effect(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s %d\n", line, effectPID)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// killGraph is n1 → (n2 ∥ slow) → n4 → n5; every node logs a "done"
// line, and the first run of slow logs "start slow" and then blocks until
// its worker is killed (n2 has finished by then). Its thread lease lasts
// 3 s ($AGENTGRAPH_TEMPORAL_TEST_LEASE_TTL).
func killGraph(saver checkpoint.Saver, effects string) (*graph.Graph[St], error) {
	b := graph.New[St]()
	for _, name := range []string{"n1", "n2", "slow", "n4", "n5"} {
		b.AddNode(name, func(ctx context.Context, s St) (St, error) {
			if name == "slow" {
				if err := waitForEffect(ctx, effects, "done n2"); err != nil {
					return St{}, err
				}
				before, err := os.ReadFile(effects)
				if err != nil {
					return St{}, err
				}
				if err := effect(effects, "start slow"); err != nil {
					return St{}, err
				}
				if !strings.Contains(string(before), "start slow") {
					select { // the first run waits for its kill -9
					case <-ctx.Done():
						return St{}, ctx.Err()
					case <-time.After(5 * time.Minute):
						return St{}, fmt.Errorf("slow was not killed")
					}
				}
			}
			if err := effect(effects, "done "+name); err != nil {
				return St{}, err
			}
			var o St
			o.Log.Append(name)
			return o, nil
		})
	}
	b.AddEdge(graph.Start, "n1")
	b.AddEdge("n1", "n2")
	b.AddEdge("n1", "slow")
	b.AddJoin([]string{"n2", "slow"}, "n4")
	b.AddEdge("n4", "n5")
	return b.Compile(graph.WithCheckpointer(saver), graph.WithLeaseTTL(envDuration(envLeaseTTL, 3*time.Second)))
}

// waitForEffect waits until the side-effect log has line.
func waitForEffect(ctx context.Context, path, line string) error {
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), line+" ") {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func quietLogger() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
}

// runWorker is the main function of a worker process.
func runWorker() error {
	ctx := context.Background()
	if tag, err := strconv.Atoi(os.Getenv(envTag)); err == nil {
		effectPID = tag
	}
	saver, err := sqlite.Open(ctx, os.Getenv(envDB))
	if err != nil {
		return err
	}
	defer saver.Close()
	kg, err := killGraph(saver, os.Getenv(envLog))
	if err != nil {
		return err
	}
	kw, err := agtemporal.New("killtest", kg, killOptions()...)
	if err != nil {
		return err
	}
	ksw, err := agtemporal.New("killtest-steps", kg, append(killOptions(), agtemporal.WithStepsPerActivity(1))...)
	if err != nil {
		return err
	}
	ag, err := askGraph("ask1", "ask2")(saver)
	if err != nil {
		return err
	}
	aw, err := agtemporal.New("asktest", ag)
	if err != nil {
		return err
	}
	vw, err := agtemporal.New("visibletest", ag, visibleOptions()...)
	if err != nil {
		return err
	}
	c, err := client.Dial(client.Options{HostPort: os.Getenv(envAddr), Logger: quietLogger()})
	if err != nil {
		return err
	}
	defer c.Close()
	wk := worker.New(c, os.Getenv(envQueue), worker.Options{})
	kw.Register(wk)
	ksw.Register(wk)
	aw.Register(wk)
	vw.Register(wk)
	return wk.Run(worker.InterruptCh())
}

// integration returns the dev server's address, or skips the test.
func integration(t *testing.T) string {
	addr := os.Getenv(envAddr)
	if addr == "" {
		t.Skipf("no Temporal server: run eval \"$(scripts/temporal-dev.sh)\" to set %s", envAddr)
	}
	return addr
}

// startWorkers starts n worker processes and returns them; they are
// killed when the test ends.
func startWorkers(t *testing.T, n int, env []string) []*exec.Cmd {
	t.Helper()
	var cmds []*exec.Cmd
	for i := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), env...)
		out, err := os.Create(filepath.Join(t.TempDir(), fmt.Sprintf("worker%d.log", i)))
		require.NoError(t, err)
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				b, _ := os.ReadFile(out.Name())
				t.Logf("worker %d (pid %d) output:\n%s", i, cmd.Process.Pid, b)
			}
		})
		cmds = append(cmds, cmd)
	}
	return cmds
}

// readEffects returns the lines of the side-effect log, each as its text
// and the pid that wrote it.
func readEffects(t *testing.T, path string) (lines []string, pids []int) {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		i := strings.LastIndexByte(sc.Text(), ' ')
		pid, err := strconv.Atoi(sc.Text()[i+1:])
		require.NoError(t, err)
		lines, pids = append(lines, sc.Text()[:i]), append(pids, pid)
	}
	require.NoError(t, sc.Err())
	return lines, pids
}

type itest struct {
	c       client.Client
	saver   *sqlite.Saver
	effects string
	queue   string
	workers []*exec.Cmd
	// env is the workers' environment (for startWorkers).
	env []string
}

func newITest(t *testing.T, workers int) *itest {
	addr := integration(t)
	dir := t.TempDir()
	it := &itest{effects: filepath.Join(dir, "effects.log"), queue: fmt.Sprintf("agentgraph-it-%d-%d", os.Getpid(), time.Now().UnixNano())}
	require.NoError(t, os.WriteFile(it.effects, nil, 0o644))
	db := filepath.Join(dir, "checkpoints.db")
	var err error
	it.saver, err = sqlite.Open(context.Background(), db)
	require.NoError(t, err)
	t.Cleanup(func() { it.saver.Close() })
	it.c, err = client.Dial(client.Options{HostPort: addr, Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(it.c.Close)
	it.env = []string{envWorker + "=1", envDB + "=" + db, envLog + "=" + it.effects, envQueue + "=" + it.queue}
	it.workers = startWorkers(t, workers, it.env)
	return it
}

// Two workers; the one running slow is killed with -9 while n2, its
// sibling in the step, has finished: the other worker finishes the run,
// and no node that had finished runs again — with tasks as activities
// and with supersteps as activities.
func TestKilledWorkerLosesNothing(t *testing.T) {
	for _, name := range []string{"killtest", "killtest-steps"} {
		t.Run(name, func(t *testing.T) { killedWorkerLosesNothing(t, name) })
	}
}

func killedWorkerLosesNothing(t *testing.T, name string) {
	it := newITest(t, 2)
	g, err := killGraph(it.saver, it.effects)
	require.NoError(t, err)
	opts := killOptions()
	if name == "killtest-steps" {
		opts = append(opts, agtemporal.WithStepsPerActivity(1))
	}
	w, err := agtemporal.New(name, g, opts...)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	thread := "kill-" + it.queue
	run, err := w.Start(ctx, it.c, thread, St{}, client.StartWorkflowOptions{TaskQueue: it.queue})
	require.NoError(t, err)

	// Wait for a worker to be inside slow, and kill it.
	var victim int
	for victim == 0 {
		require.NoError(t, ctx.Err(), "no worker ran slow")
		lines, pids := readEffects(t, it.effects)
		for i, l := range lines {
			if l == "start slow" {
				victim = pids[i]
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	killed := false
	for _, cmd := range it.workers {
		if cmd.Process.Pid == victim {
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()
			killed = true
		}
	}
	require.True(t, killed, "slow ran in pid %d, which is not one of the workers", victim)

	var st agtemporal.Status
	require.NoError(t, run.Get(ctx, &st))
	require.True(t, st.Done)
	s, err := w.Values(ctx, st)
	require.NoError(t, err)
	require.Equal(t, []string{"n1", "n2", "slow", "n4", "n5"}, s.Log.Get())

	lines, pids := readEffects(t, it.effects)
	count := map[string]int{}
	for i, l := range lines {
		count[l]++
		if l == "start slow" && pids[i] != victim || l == "done n4" || l == "done n5" {
			require.NotEqual(t, victim, pids[i], "%s ran in the killed worker", l)
		}
	}
	require.Equal(t, map[string]int{"done n1": 1, "done n2": 1, "start slow": 2, "done slow": 1, "done n4": 1, "done n5": 1}, count,
		"a node that completed before the kill ran again, or one never ran")
	t.Logf("effects: %v (killed pid %d)", lines, victim)

	// The history, with its worker switch, replays on this workflow code;
	// AGENTGRAPH_TEMPORAL_RECORD=path saves it for TestRecordedHistoryReplays.
	hist := &historypb.History{}
	iter := it.c.GetWorkflowHistory(ctx, thread, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		hist.Events = append(hist.Events, ev)
	}
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(w.Run, workflow.RegisterOptions{Name: w.Name()})
	require.NoError(t, replayer.ReplayWorkflowHistory(quietLogger(), hist))
	if path := os.Getenv("AGENTGRAPH_TEMPORAL_RECORD"); path != "" && name == "killtest" {
		b, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(hist)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}
}

// Histories recorded from TestKilledWorkerLosesNothing on a dev server
// (two workers, the one running slow killed with -9) replay on this
// workflow code: killtest-history.json with tasks as activities,
// killtest-steps-history.json (recorded before tasks were activities, on
// a chain n1 → n2 → slow → n4 → n5) with supersteps as activities.
func TestRecordedHistoryReplays(t *testing.T) {
	for _, tc := range []struct {
		file string
		opts []agtemporal.Option
	}{
		{"testdata/killtest-history.json", nil},
		{"testdata/killtest-steps-history.json", []agtemporal.Option{agtemporal.WithStepsPerActivity(1)}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			g, err := killGraph(checkpoint.NewMemory(), filepath.Join(t.TempDir(), "effects.log"))
			require.NoError(t, err)
			w, err := agtemporal.New("killtest", g, append(killOptions(), tc.opts...)...)
			require.NoError(t, err)
			replayer := worker.NewWorkflowReplayer()
			replayer.RegisterWorkflowWithOptions(w.Run, workflow.RegisterOptions{Name: w.Name()})
			require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(quietLogger(), tc.file))
		})
	}
}

func TestInterruptsAnsweredThroughTheClient(t *testing.T) {
	it := newITest(t, 1)
	g, err := askGraph("ask1", "ask2")(it.saver)
	require.NoError(t, err)
	w, err := agtemporal.New("asktest", g)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	thread := "ask-" + it.queue
	run, err := w.Start(ctx, it.c, thread, St{}, client.StartWorkflowOptions{TaskQueue: it.queue})
	require.NoError(t, err)
	var st agtemporal.Status
	for !st.Paused() {
		require.NoError(t, ctx.Err(), "the run never paused")
		st, err = agtemporal.Query(ctx, it.c, thread)
		require.NoError(t, err)
		time.Sleep(50 * time.Millisecond)
	}
	require.Len(t, st.Interrupts, 2)
	ids := map[string]string{}
	for _, in := range st.Interrupts {
		ids[in.Node] = in.ID
	}
	err = agtemporal.AnswerChecked(ctx, it.c, thread, "no-such-interrupt", "x")
	require.ErrorContains(t, err, "no pending interrupt to answer")
	require.NoError(t, agtemporal.Answer(ctx, it.c, thread, ids["ask1"], "signal"))
	require.NoError(t, agtemporal.AnswerChecked(ctx, it.c, thread, ids["ask2"], "update"))
	require.NoError(t, run.Get(ctx, &st))
	s, err := w.Values(ctx, st)
	require.NoError(t, err)
	require.Equal(t, []string{"before", "ask1 got signal", "ask2 got update", "after"}, s.Log.Get())
}
