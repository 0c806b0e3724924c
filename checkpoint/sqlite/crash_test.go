//go:build unix

package sqlite_test

// Crash test: a child process (this test binary, re-executed) runs a
// checkpointed graph on a SQLite file and is killed with SIGKILL at a
// random moment; the parent then resumes the thread in-process and checks
// the result against an uninterrupted run.
//
// The graph (crashGraph) loops crashTicks times through "tick", which
// appends the superstep it runs in to Steps; every crashFanEvery ticks it
// fans out to four parallel nodes that append "node@step" to Fan, so that
// pending writes are exercised. Every node adds 1 to Runs. Before
// returning, every node appends "<phase> step <N> node <X>" to a side log
// opened O_APPEND (one write(2) per line, so a line is written whole or not
// at all), and the child also reports each execution on a pipe, which the
// parent reads to place the kill.
//
// Invariants. Let R be the (step, node) executions of an uninterrupted
// run, each exactly once; C the results committed to the database when the
// child died — every task of a step whose checkpoint is stored (the graph
// is deterministic: the tasks of step k are R's), plus the tasks of the
// next step whose pending writes are stored against the latest checkpoint
// (TaskInfo.Done in Graph.GetState); Child and Resumed the executions the
// side log shows in the child and in the resumed run. A node may legitimately run twice — once in the child,
// once after the resume — when the kill came after it ran and before its
// result was committed. What must never happen is to run again a task
// whose result was committed. Precisely:
//
//  1. Child ⊆ R with no duplicates, and C ⊆ Child: nothing is committed
//     that did not run;
//  2. Resumed ∩ C = ∅: no committed result is executed again;
//  3. Resumed = R \ C exactly, each once: the resumed run does all the
//     remaining work and nothing else;
//  4. DurabilitySync: Child \ C lies in the step after the latest
//     checkpoint — a step never starts before the previous one's
//     checkpoint is committed, so a crash loses at most one step's work.
//     DurabilityAsync may lose several steps (they are logged);
//     DurabilityExit writes nothing before the run ends, so C is either
//     empty or everything;
//  5. the final state equals the uninterrupted run's (so Runs, which only
//     counts committed executions, equals |R|);
//  6. the database passes PRAGMA integrity_check after the kill; after the
//     resume the thread's checkpoints (sync, async) are one chain with
//     consecutive steps from the input checkpoint (-1) to the last step —
//     nothing lost, nothing written twice — or (exit) one checkpoint of
//     the last step.
//
// go test ./checkpoint/sqlite/ -run TestCrashResume -crash.trials=200 runs
// more trials; -crash.seed replays a logged seed. Trials run in parallel
// (-test.parallel at a time).

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

var (
	crashTrials = flag.Int("crash.trials", 20, "SIGKILL trials of TestCrashResume with DurabilitySync (async and exit get a quarter as many each)")
	crashSeed   = flag.Uint64("crash.seed", 0, "seed of TestCrashResume's kill moments (0: random, logged)")
)

const (
	crashTicks    = 100
	crashFanEvery = 20
	crashThread   = "crash"

	envCrashDB         = "AGENTGRAPH_CRASH_DB"
	envCrashLog        = "AGENTGRAPH_CRASH_LOG"
	envCrashDurability = "AGENTGRAPH_CRASH_DURABILITY"
)

var crashFan = []string{"fa", "fb", "fc", "fd"}

type crashState struct {
	Steps state.Append[int]
	Fan   state.Append[string]
	Runs  state.Sum[int]
}

// crashView is crashState as plain values, for comparisons.
type crashView struct {
	Steps []int
	Fan   []string
	Runs  int
}

func viewCrash(s crashState) crashView {
	return crashView{Steps: s.Steps.Get(), Fan: s.Fan.Get(), Runs: s.Runs.Get()}
}

// sideLog records node executions.
type sideLog struct {
	f        *os.File // opened O_APPEND
	phase    string
	progress io.Writer // the child's pipe to the parent, or nil
}

func (l *sideLog) ran(step int, node string) error {
	// One Write per line: fmt.Fprintf formats first, then writes once.
	if _, err := fmt.Fprintf(l.f, "%s step %d node %s\n", l.phase, step, node); err != nil {
		return err
	}
	if l.progress != nil {
		_, _ = l.progress.Write([]byte{'.'}) // the parent may be gone
	}
	return nil
}

func openSideLog(t testing.TB, path, phase string) *sideLog {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return &sideLog{f: f, phase: phase}
}

func crashGraph(t testing.TB, saver *sqlite.Saver, log *sideLog) *graph.Graph[crashState] {
	b := graph.New[crashState]()
	b.AddNode("tick", func(ctx context.Context, _ crashState) (crashState, error) {
		step := graph.Step(ctx)
		if err := log.ran(step, "tick"); err != nil {
			return crashState{}, err
		}
		return crashState{Steps: state.Items(step), Runs: state.Delta(1)}, nil
	})
	for _, name := range crashFan {
		b.AddNode(name, func(ctx context.Context, _ crashState) (crashState, error) {
			step := graph.Step(ctx)
			if err := log.ran(step, name); err != nil {
				return crashState{}, err
			}
			return crashState{Fan: state.Items(fmt.Sprintf("%s@%d", name, step)), Runs: state.Delta(1)}, nil
		})
		b.AddEdge(name, "tick")
	}
	b.AddEdge(graph.Start, "tick")
	b.AddBranch("tick", func(_ context.Context, s crashState) (graph.Route[crashState], error) {
		switch n := s.Steps.Len(); {
		case n >= crashTicks:
			return graph.To[crashState](graph.End), nil
		case n%crashFanEvery == 0:
			return graph.To[crashState](crashFan...), nil
		}
		return graph.To[crashState]("tick"), nil
	}, graph.Destinations(append([]string{"tick", graph.End}, crashFan...)...))
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

var crashModes = map[string]graph.Durability{
	"sync":  graph.DurabilitySync,
	"async": graph.DurabilityAsync,
	"exit":  graph.DurabilityExit,
}

// TestCrashChild is the child process of TestCrashResume: it runs the
// crash graph on the database named by the environment until it ends or is
// killed. Run on its own it is skipped.
func TestCrashChild(t *testing.T) {
	db := os.Getenv(envCrashDB)
	if db == "" {
		t.Skip("child process of TestCrashResume")
	}
	d, ok := crashModes[os.Getenv(envCrashDurability)]
	require.True(t, ok, "durability %q", os.Getenv(envCrashDurability))
	ctx := context.Background()
	s, err := sqlite.Open(ctx, db)
	require.NoError(t, err)
	defer s.Close()
	log := openSideLog(t, os.Getenv(envCrashLog), "child")
	log.progress = os.NewFile(3, "progress") // cmd.ExtraFiles[0]
	_, err = crashGraph(t, s, log).Invoke(ctx, crashState{}, graph.WithThread(crashThread), graph.WithDurability(d))
	require.NoError(t, err)
}

// execKey is one execution of a node in a superstep.
type execKey struct {
	Step int
	Node string
}

func (k execKey) String() string { return fmt.Sprintf("%s@%d", k.Node, k.Step) }

// readSideLog returns the executions of each phase in log order.
func readSideLog(t *testing.T, path string) map[string][]execKey {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string][]execKey{}
	}
	require.NoError(t, err)
	out := map[string][]execKey{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var phase, node string
		var step int
		_, err := fmt.Sscanf(sc.Text(), "%s step %d node %s", &phase, &step, &node)
		require.NoError(t, err, "malformed side-log line %q", sc.Text())
		out[phase] = append(out[phase], execKey{step, node})
	}
	require.NoError(t, sc.Err())
	require.True(t, len(data) == 0 || data[len(data)-1] == '\n', "torn last line in the side log")
	return out
}

// count turns executions into a multiset.
func count(execs []execKey) map[execKey]int {
	m := make(map[execKey]int, len(execs))
	for _, e := range execs {
		m[e]++
	}
	return m
}

// reference runs the graph uninterrupted and returns its final state and
// executions.
func reference(t *testing.T) (crashView, map[execKey]int) {
	t.Helper()
	dir := t.TempDir()
	s, err := sqlite.Open(t.Context(), filepath.Join(dir, "ref.db"))
	require.NoError(t, err)
	defer s.Close()
	logPath := filepath.Join(dir, "side.log")
	out, err := crashGraph(t, s, openSideLog(t, logPath, "ref")).Invoke(t.Context(), crashState{}, graph.WithThread(crashThread))
	require.NoError(t, err)
	execs := count(readSideLog(t, logPath)["ref"])
	for e, n := range execs {
		require.Equal(t, 1, n, "%v ran %d times in the uninterrupted run", e, n)
	}
	runs := crashTicks + len(crashFan)*((crashTicks-1)/crashFanEvery)
	require.Len(t, execs, runs)
	require.Equal(t, runs, out.Runs.Get())
	return viewCrash(out), execs
}

// cpRow is a stored checkpoint, read from the checkpoints table without
// decoding any value (reading thousands of full checkpoints per test would
// dominate its run time, under the race detector above all).
type cpRow struct {
	ID, Parent, Source string
	Step               int
}

func readCheckpoints(t *testing.T, path string) []cpRow {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), `SELECT id, parent_id, json_extract(metadata, '$.step'), json_extract(metadata, '$.source')
		FROM checkpoints WHERE thread_id = ? AND ns = '' ORDER BY id`, crashThread)
	require.NoError(t, err)
	defer rows.Close()
	var out []cpRow
	for rows.Next() {
		var r cpRow
		require.NoError(t, rows.Scan(&r.ID, &r.Parent, &r.Step, &r.Source))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// requireChain checks that cps (oldest first) form one chain from the
// input checkpoint with consecutive steps: no step lost, none written
// twice.
func requireChain(t *testing.T, cps []cpRow) {
	t.Helper()
	for i, cp := range cps {
		require.Equal(t, i-1, cp.Step, "checkpoint %d of the thread", i)
		if i == 0 {
			require.Equal(t, "input", cp.Source)
			require.Empty(t, cp.Parent)
			continue
		}
		require.Equal(t, "loop", cp.Source)
		require.Equal(t, cps[i-1].ID, cp.Parent, "parent of step %d", cp.Step)
	}
}

// committed reads what the database says was committed: every task of a
// step whose checkpoint is stored (the tasks of a step are those of the
// uninterrupted run: the graph is deterministic) and the finished tasks of
// the step after the latest checkpoint (its pending writes, TaskInfo.Done
// of the thread's state). It also returns the latest checkpoint's step (-2
// when there is none).
func committed(t *testing.T, g *graph.Graph[crashState], d graph.Durability, path string, ref map[execKey]int) (c map[execKey]bool, latest int) {
	t.Helper()
	c = map[execKey]bool{}
	cps := readCheckpoints(t, path)
	if len(cps) == 0 {
		return c, -2
	}
	snap, err := g.GetState(t.Context(), graph.WithThread(crashThread))
	require.NoError(t, err)
	require.Equal(t, cps[len(cps)-1].ID, snap.CheckpointID)
	if d == graph.DurabilityExit {
		// One checkpoint, written when the run ended.
		require.Len(t, cps, 1, "DurabilityExit writes once")
		require.Empty(t, snap.Tasks, "DurabilityExit wrote a checkpoint of an unfinished run")
		for e := range ref {
			c[e] = true
		}
		return c, snap.Metadata.Step
	}
	requireChain(t, cps)
	latest = snap.Metadata.Step
	var next, wantNext []string
	for e := range ref {
		switch {
		case e.Step <= latest:
			c[e] = true
		case e.Step == latest+1:
			wantNext = append(wantNext, e.Node)
		}
	}
	for _, task := range snap.Tasks {
		if task.Name == graph.Start {
			continue
		}
		next = append(next, task.Name)
		if task.Done {
			c[execKey{latest + 1, task.Name}] = true
		}
	}
	slices.Sort(next)
	slices.Sort(wantNext)
	require.Equal(t, wantNext, next, "the tasks after the latest checkpoint (step %d)", latest)
	return c, latest
}

func integrityCheck(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return // killed before the file was created
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	defer db.Close()
	var res string
	require.NoError(t, db.QueryRowContext(t.Context(), `PRAGMA integrity_check`).Scan(&res))
	require.Equal(t, "ok", res)
}

func lastStep(ref map[execKey]int) int {
	n := 0
	for e := range ref {
		n = max(n, e.Step)
	}
	return n
}

// trialResult says where a trial's kill landed.
type trialResult struct {
	killed    bool
	latest    int // step of the latest checkpoint at the kill, -2 if none
	committed int // committed executions
	lost      int // executions of the child that were not committed
	lostSteps int // distinct steps of those
}

func TestCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	seed := *crashSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -crash.seed=%d)", seed, seed)
	want, ref := reference(t)
	total := len(ref)
	trials := []struct {
		mode string
		n    int
	}{{"sync", *crashTrials}, {"async", max(1, *crashTrials/4)}, {"exit", max(1, *crashTrials/4)}}
	for _, tr := range trials {
		t.Run(tr.mode, func(t *testing.T) {
			t.Parallel()
			// The trials run in parallel (-test.parallel at a time):
			// each waits mostly on its child.
			results := make([]*trialResult, tr.n)
			t.Run("trials", func(t *testing.T) {
				for i := range tr.n {
					rng := rand.New(rand.NewPCG(seed, uint64(i)<<8|uint64(crashModes[tr.mode])))
					// Kill after a random number of node executions
					// plus a random delay, so that kills land inside and
					// between the saver's transactions; the first trial
					// kills the child as it starts, before anything is
					// saved.
					after := rng.IntN(total + 1)
					if i == 0 {
						after = 0
					}
					delay := time.Duration(rng.Int64N(int64(time.Millisecond)))
					t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
						t.Parallel()
						t.Cleanup(func() {
							if t.Failed() {
								t.Logf("failed trial: %s kill after %d executions + %v (-crash.seed=%d)", tr.mode, after, delay, seed)
							}
						})
						r := crashTrial(t, tr.mode, after, delay, want, ref)
						results[i] = &r
					})
				}
			})
			killed, maxLost, maxLostSteps, n := 0, 0, 0, 0
			var at []string
			for _, r := range results {
				if r == nil {
					continue
				}
				n++
				if r.killed {
					killed++
				}
				maxLost, maxLostSteps = max(maxLost, r.lost), max(maxLostSteps, r.lostSteps)
				at = append(at, fmt.Sprintf("%d/%d", r.committed, r.latest))
			}
			t.Logf("%s: %d trials passed, %d of them ended by SIGKILL (the others ended first); committed executions/latest checkpoint step at the kill: %s; most executions lost %d (in %d steps)",
				tr.mode, n, killed, strings.Join(at, " "), maxLost, maxLostSteps)
		})
	}
}

// crashTrial runs the child, kills it once it has run after executions
// (then waited delay), resumes the thread and checks the invariants.
func crashTrial(t *testing.T, mode string, after int, delay time.Duration, want crashView, ref map[execKey]int) trialResult {
	d := crashModes[mode]
	dir := t.TempDir()
	dbPath, logPath := filepath.Join(dir, "crash.db"), filepath.Join(dir, "side.log")

	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pr.Close()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1", "-test.v")
	// GORACE: a race-enabled child would sleep a second before exiting.
	cmd.Env = append(os.Environ(), envCrashDB+"="+dbPath, envCrashLog+"="+logPath, envCrashDurability+"="+mode,
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.ExtraFiles = []*os.File{pw}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	pw.Close()

	reached := make(chan struct{})
	go func() {
		var buf [256]byte
		n := 0
		for n < after {
			k, err := pr.Read(buf[:])
			n += k
			if err != nil {
				return // the child ended first
			}
		}
		close(reached)
		_, _ = io.Copy(io.Discard, pr)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var werr error
	select {
	case <-reached:
		time.Sleep(delay)
		_ = cmd.Process.Kill() // SIGKILL; fails only if the child is gone
		werr = <-exited
	case werr = <-exited:
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	killed := ws.Signaled() && ws.Signal() == syscall.SIGKILL
	if !killed {
		require.NoError(t, werr, "child:\n%s", out.String())
		require.Contains(t, out.String(), "--- PASS: TestCrashChild", "the child ran the graph")
	}

	// What the crash left.
	integrityCheck(t, dbPath)
	s, err := sqlite.Open(t.Context(), dbPath)
	require.NoError(t, err)
	defer s.Close()
	g := crashGraph(t, s, openSideLog(t, logPath, "resume"))
	c, latest := committed(t, g, d, dbPath, ref)
	childSet := count(readSideLog(t, logPath)["child"])
	if !killed {
		require.Len(t, c, len(ref), "the child ended, so did the run")
	}

	// Resume (or start over when nothing was saved).
	var final crashState
	if latest == -2 {
		final, err = g.Invoke(t.Context(), crashState{}, graph.WithThread(crashThread), graph.WithDurability(d))
	} else {
		final, err = g.Resume(t.Context(), graph.Command[crashState]{}, graph.WithThread(crashThread), graph.WithDurability(d))
	}
	require.NoError(t, err)

	// 5. The final state is the uninterrupted run's.
	require.Empty(t, cmp.Diff(want, viewCrash(final)), "final state (-uninterrupted +resumed)")

	// 1. The child ran each task at most once, only tasks of the run, and
	// ran everything that was committed.
	for e, n := range childSet {
		require.Equal(t, 1, n, "the child ran %v %d times", e, n)
		require.Contains(t, ref, e, "the child ran %v, which the run does not have", e)
	}
	for e := range c {
		require.Contains(t, childSet, e, "%v is committed but the child did not run it", e)
	}

	// 2 and 3. The resumed run ran exactly the tasks not committed, once
	// each: no committed result ran again.
	resumed := count(readSideLog(t, logPath)["resume"])
	var again []string
	for e := range resumed {
		if c[e] {
			again = append(again, e.String())
		}
	}
	slices.Sort(again)
	require.Empty(t, again, "committed results executed again after the resume (latest checkpoint: step %d)", latest)
	wantResumed := map[execKey]int{}
	for e := range ref {
		if !c[e] {
			wantResumed[e] = 1
		}
	}
	require.Empty(t, cmp.Diff(wantResumed, resumed), "executions after the resume (-want +got)")

	// 4. What the crash lost.
	var lost []execKey
	for e := range childSet {
		if !c[e] {
			lost = append(lost, e)
		}
	}
	steps := map[int]bool{}
	for _, e := range lost {
		steps[e.Step] = true
	}
	switch d {
	case graph.DurabilitySync:
		for _, e := range lost {
			require.Equal(t, latest+1, e.Step, "with DurabilitySync a crash loses only the step in flight; lost %v", lost)
		}
	case graph.DurabilityExit:
		require.True(t, len(c) == 0 || len(c) == len(ref), "DurabilityExit commits all or nothing")
	}

	// 6. One chain of checkpoints, none written twice.
	cps := readCheckpoints(t, dbPath)
	if d == graph.DurabilityExit {
		require.Len(t, cps, 1, "DurabilityExit writes once")
	} else {
		requireChain(t, cps)
	}
	require.Equal(t, lastStep(ref), cps[len(cps)-1].Step, "step of the final checkpoint")
	snap, err := g.GetState(t.Context(), graph.WithThread(crashThread))
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(want, viewCrash(snap.Values)), "stored final state")
	require.Empty(t, snap.Next)

	t.Logf("%s: kill after %d executions + %v: killed %v, latest checkpoint step %d, %d executions committed, %d lost in steps %v",
		mode, after, delay, killed, latest, len(c), len(lost), slices.Sorted(maps.Keys(steps)))
	return trialResult{killed: killed, latest: latest, committed: len(c), lost: len(lost), lostSteps: len(steps)}
}
