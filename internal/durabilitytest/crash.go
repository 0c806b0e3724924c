//go:build unix

package durabilitytest

// Crash test: a child process (the test binary, re-executed) runs a
// checkpointed graph on a database and dies of SIGKILL at a random moment;
// the parent then resumes the thread in-process and checks the result
// against an uninterrupted run.
//
// Kill points (Trial.Kind):
//
//   - "between": the parent kills the child after it reported a random
//     number of node executions, plus a random delay below a millisecond:
//     anywhere in the run, between or inside nodes and saver calls.
//   - "node": the child kills itself inside its k-th node execution,
//     right after the node's side effect (its side-log line) and before
//     the node returns: the result of a node that did its work is lost.
//   - "write": the parent kills the child while a saver write transaction
//     (Put or PutWrites) is open. The child reports on its pipe when each
//     Put, PutWrites and lease call begins and ends; from the k-th write
//     on, while one is in flight and no lease call is, the parent probes
//     the database for an open write transaction of the child
//     (Backend.WriteProbe: SQLite's WAL write lock, held from BEGIN
//     IMMEDIATE to COMMIT; a PostgreSQL session of the child inside a
//     transaction block) and SIGKILLs it at the first hit. A trial counts
//     as landed inside a write when the probe hit with exactly one write in
//     flight, no lease call in flight, and that write is not in the
//     database afterwards (so it had not committed: its transaction was
//     open when the child died).
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
// side log shows in the child and in the resumed run. A node may
// legitimately run twice — once in the child, once after the resume — when
// the kill came after it ran and before its result was committed. What
// must never happen is to run again a task whose result was committed.
// Precisely:
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
//  6. the database passes its integrity check after the kill (SQLite's
//     PRAGMA integrity_check); after the resume the thread's checkpoints
//     (sync, async) are one chain with consecutive steps from the input
//     checkpoint (-1) to the last step — nothing lost, nothing written
//     twice — or (exit) one checkpoint of the last step;
//  7. a node the child died in (kind "node") ran in the child, is not
//     committed, and ran again once after the resume.
//
// The child holds the thread's lease (TTL crashLeaseTTL) when it dies; the
// parent's resume is refused with a LeaseHeldError until it expires, and
// retried.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

const (
	crashTicks    = 100
	crashFanEvery = 20
	crashThread   = "crash"
	// crashLeaseTTL is the thread lease's time to live in the crash runs:
	// how long the parent waits, at most, for a dead child's lease.
	crashLeaseTTL = 500 * time.Millisecond

	envCrashLog        = "AGENTGRAPH_CRASH_LOG"
	envCrashDurability = "AGENTGRAPH_CRASH_DURABILITY"
	envCrashSelfKill   = "AGENTGRAPH_CRASH_SELF_KILL"
)

// Kill points.
const (
	KillBetween = "between"
	KillNode    = "node"
	KillWrite   = "write"
)

var crashKinds = []string{KillBetween, KillNode, KillWrite}

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

// reporter writes the child's progress lines to the parent.
type reporter struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *reporter) line(format string, args ...any) {
	if r == nil {
		return
	}
	b := fmt.Appendf(nil, format+"\n", args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.w.Write(b) // the parent may be gone
}

// sideLog records node executions.
type sideLog struct {
	f        *os.File // opened O_APPEND
	phase    string
	progress *reporter // the child's pipe to the parent, or nil
	killAt   int64     // the child kills itself in this execution (1-based; 0: never)
	n        atomic.Int64
}

func (l *sideLog) ran(step int, node string) error {
	// One Write per line: fmt.Fprintf formats first, then writes once.
	if _, err := fmt.Fprintf(l.f, "%s step %d node %s\n", l.phase, step, node); err != nil {
		return err
	}
	l.progress.line("n")
	if l.killAt > 0 && l.n.Add(1) == l.killAt {
		// Die inside the node: its side effect is done, its result is
		// not returned.
		l.progress.line("k %d %s", step, node)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
	}
	return nil
}

func openSideLog(t testing.TB, path, phase string) *sideLog {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return &sideLog{f: f, phase: phase}
}

func crashGraph(t testing.TB, saver checkpoint.Saver, log *sideLog) *graph.Graph[crashState] {
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
	}, graph.WithDestinations(append([]string{"tick", graph.End}, crashFan...)...))
	g, err := b.Compile(graph.WithCheckpointer(saver), graph.WithLeaseTTL(crashLeaseTTL))
	require.NoError(t, err)
	return g
}

var crashModes = map[string]graph.Durability{
	"sync":  graph.DurabilitySync,
	"async": graph.DurabilityAsync,
	"exit":  graph.DurabilityExit,
}

// reportingSaver reports on the progress pipe when each write and lease
// call begins ("w …", "l") and ends ("e …", "L"), and counts the writes.
type reportingSaver struct {
	Saver
	rep    *reporter
	writes atomic.Int64
}

func (s *reportingSaver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	s.writes.Add(1)
	key := "put " + cp.ID
	s.rep.line("w %s", key)
	defer s.rep.line("e %s", key)
	return s.Saver.Put(ctx, cp)
}

func (s *reportingSaver) PutWrites(ctx context.Context, ref checkpoint.Ref, writes []checkpoint.Write) error {
	s.writes.Add(1)
	task := ""
	if len(writes) > 0 {
		task = writes[0].TaskID
	}
	key := "writes " + ref.ID + " " + task
	s.rep.line("w %s", key)
	defer s.rep.line("e %s", key)
	return s.Saver.PutWrites(ctx, ref, writes)
}

func (s *reportingSaver) AcquireLease(ctx context.Context, threadID, holder string, ttl time.Duration) (checkpoint.Lease, error) {
	s.rep.line("l")
	defer s.rep.line("L")
	return s.Saver.AcquireLease(ctx, threadID, holder, ttl)
}

func (s *reportingSaver) RenewLease(ctx context.Context, lease checkpoint.Lease, ttl time.Duration) (checkpoint.Lease, error) {
	s.rep.line("l")
	defer s.rep.line("L")
	return s.Saver.RenewLease(ctx, lease, ttl)
}

func (s *reportingSaver) ReleaseLease(ctx context.Context, lease checkpoint.Lease) error {
	s.rep.line("l")
	defer s.rep.line("L")
	return s.Saver.ReleaseLease(ctx, lease)
}

// crashChild runs the crash graph on the database named by the environment
// until it ends or is killed.
func crashChild(t *testing.T, b Backend) {
	d, ok := crashModes[os.Getenv(envCrashDurability)]
	require.True(t, ok, "durability %q", os.Getenv(envCrashDurability))
	ctx := context.Background()
	progress := &reporter{w: os.NewFile(3, "progress")} // cmd.ExtraFiles[0]
	s, err := b.Open(ctx, os.Getenv(envAddr))
	require.NoError(t, err)
	defer s.Close()
	log := openSideLog(t, os.Getenv(envCrashLog), "child")
	log.progress = progress
	if k := os.Getenv(envCrashSelfKill); k != "" {
		log.killAt, err = strconv.ParseInt(k, 10, 64)
		require.NoError(t, err)
	}
	saver := &reportingSaver{Saver: s, rep: progress}
	_, err = crashGraph(t, saver, log).Invoke(ctx, crashState{}, graph.WithThread(crashThread), graph.WithDurability(d))
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

// reference runs the graph uninterrupted with each durability mode and
// returns its final state, its executions and the number of saver writes
// (Put and PutWrites calls) of each mode.
func reference(t *testing.T, b Backend) (crashView, map[execKey]int, map[string]int) {
	t.Helper()
	var view crashView
	var execs map[execKey]int
	writes := map[string]int{}
	for mode, d := range crashModes {
		dir := t.TempDir()
		s, err := b.Open(t.Context(), b.Fresh(t))
		require.NoError(t, err)
		saver := &reportingSaver{Saver: s}
		logPath := filepath.Join(dir, "side.log")
		out, err := crashGraph(t, saver, openSideLog(t, logPath, "ref")).Invoke(t.Context(), crashState{}, graph.WithThread(crashThread), graph.WithDurability(d))
		require.NoError(t, err)
		require.NoError(t, s.Close())
		ex := count(readSideLog(t, logPath)["ref"])
		for e, n := range ex {
			require.Equal(t, 1, n, "%v ran %d times in the uninterrupted run", e, n)
		}
		runs := crashTicks + len(crashFan)*((crashTicks-1)/crashFanEvery)
		require.Len(t, ex, runs)
		require.Equal(t, runs, out.Runs.Get())
		if execs == nil {
			view, execs = viewCrash(out), ex
		} else {
			require.Equal(t, view, viewCrash(out), "%s run", mode)
			require.Equal(t, execs, ex, "%s run", mode)
		}
		writes[mode] = int(saver.writes.Load())
	}
	return view, execs, writes
}

// requireChain checks that cps (oldest first) form one chain from the
// input checkpoint with consecutive steps: no step lost, none written
// twice.
func requireChain(t *testing.T, cps []Row) {
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
func committed(t *testing.T, g *graph.Graph[crashState], d graph.Durability, cps []Row, ref map[execKey]int) (c map[execKey]bool, latest int) {
	t.Helper()
	c = map[execKey]bool{}
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

func lastStep(ref map[execKey]int) int {
	n := 0
	for e := range ref {
		n = max(n, e.Step)
	}
	return n
}

// CrashOptions configures [CrashResume].
type CrashOptions struct {
	// Trials is the number of DurabilitySync trials; DurabilityAsync and
	// DurabilityExit get a quarter as many each, at least 3. Trial i of a
	// mode kills at crashKinds[i%3]; trial 0 kills the child as it
	// starts.
	Trials int
	// Seed seeds the kill moments (0: random, logged).
	Seed uint64
}

// trialResult says where a trial's kill landed.
type trialResult struct {
	kind      string
	killed    bool
	latest    int // step of the latest checkpoint at the kill, -2 if none
	committed int // committed executions
	lost      int // executions of the child that were not committed
	lostSteps int // distinct steps of those
	// kind "write": the kill landed inside an open write transaction
	// (see the file comment), or after the write in flight committed.
	insideWrite, afterCommit bool
	inFlight                 string // the write in flight at the kill
	// kind "node": the node the child died in.
	selfKilled string
	leaseWait  time.Duration // how long the resume waited for the lease
}

// CrashResume runs the crash trials on backend b (see the file comment).
// The trials of a mode run in parallel, -test.parallel at a time.
func CrashResume(t *testing.T, b Backend, o CrashOptions) {
	skipShort(t)
	seed := o.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("%s: seed %d (replay with -crash.seed=%d)", b.Name, seed, seed)
	want, ref, writes := reference(t, b)
	total := len(ref)
	t.Logf("%s: the uninterrupted run executes %d nodes; saver writes (Put, PutWrites) per mode: %v", b.Name, total, writes)
	n := max(1, o.Trials)
	trials := []struct {
		mode string
		n    int
	}{{"sync", n}, {"async", max(3, n/4)}, {"exit", max(3, n/4)}}
	start := time.Now()
	var mu sync.Mutex
	var all []*trialResult
	for _, tr := range trials {
		t.Run(tr.mode, func(t *testing.T) {
			t.Parallel()
			results := make([]*trialResult, tr.n)
			t.Run("trials", func(t *testing.T) {
				for i := range tr.n {
					rng := rand.New(rand.NewPCG(seed, uint64(i)<<8|uint64(crashModes[tr.mode])))
					tc := trialCfg{mode: tr.mode, kind: crashKinds[i%len(crashKinds)]}
					switch tc.kind {
					case KillBetween:
						// Kill after a random number of node executions
						// plus a random delay, so that kills land inside
						// and between the saver's transactions; the first
						// trial kills the child as it starts, before
						// anything is saved.
						tc.after = rng.IntN(total + 1)
						if i == 0 {
							tc.after = 0
						}
						tc.delay = time.Duration(rng.Int64N(int64(time.Millisecond)))
					case KillNode:
						tc.after = 1 + rng.IntN(total)
					case KillWrite:
						tc.after = 1 + rng.IntN(writes[tr.mode])
					}
					t.Run(fmt.Sprintf("%03d-%s", i, tc.kind), func(t *testing.T) {
						t.Parallel()
						t.Cleanup(func() {
							if t.Failed() {
								t.Logf("failed trial: %s (-crash.seed=%d)", tc, seed)
							}
						})
						r := crashTrial(t, b, tc, want, ref)
						results[i] = &r
					})
				}
			})
			mu.Lock()
			for _, r := range results {
				if r != nil {
					all = append(all, r)
				}
			}
			mu.Unlock()
			logTally(t, b.Name+" "+tr.mode, results)
		})
	}
	t.Cleanup(func() {
		if !t.Failed() {
			logTally(t, b.Name+" all modes", all)
			t.Logf("%s: %d trials in %v", b.Name, len(all), time.Since(start).Round(time.Millisecond))
		}
	})
}

// logTally logs where the kills of results landed.
func logTally(t *testing.T, what string, results []*trialResult) {
	type tally struct{ trials, killed, inside, afterCommit int }
	by := map[string]*tally{}
	maxLost, maxLostSteps, n := 0, 0, 0
	var waits []time.Duration
	for _, r := range results {
		if r == nil {
			continue
		}
		n++
		k := by[r.kind]
		if k == nil {
			k = &tally{}
			by[r.kind] = k
		}
		k.trials++
		if r.killed {
			k.killed++
		}
		if r.insideWrite || r.selfKilled != "" {
			k.inside++
		}
		if r.afterCommit {
			k.afterCommit++
		}
		maxLost, maxLostSteps = max(maxLost, r.lost), max(maxLostSteps, r.lostSteps)
		if r.leaseWait > 0 {
			waits = append(waits, r.leaseWait)
		}
	}
	var parts []string
	for _, kind := range crashKinds {
		k := by[kind]
		if k == nil {
			continue
		}
		s := fmt.Sprintf("%s: %d trials, %d killed", kind, k.trials, k.killed)
		switch kind {
		case KillNode:
			s += fmt.Sprintf(" (%d inside a node)", k.inside)
		case KillWrite:
			s += fmt.Sprintf(" (%d inside an open write transaction, %d just after the write committed)", k.inside, k.afterCommit)
		}
		parts = append(parts, s)
	}
	slices.Sort(waits)
	wait := ""
	if len(waits) > 0 {
		wait = fmt.Sprintf("; %d resumes waited for the dead child's lease (median %v, max %v)", len(waits), waits[len(waits)/2].Round(time.Millisecond), waits[len(waits)-1].Round(time.Millisecond))
	}
	t.Logf("%s: %d trials passed — %s; most executions lost %d (in %d steps)%s", what, n, strings.Join(parts, "; "), maxLost, maxLostSteps, wait)
}

// trialCfg is one trial's kill point.
type trialCfg struct {
	mode, kind string
	// after: kind between: node executions before the kill; node: the
	// execution the child dies in; write: the saver write from which on
	// the parent probes.
	after int
	delay time.Duration
}

func (c trialCfg) String() string {
	switch c.kind {
	case KillBetween:
		return fmt.Sprintf("%s: kill after %d executions + %v", c.mode, c.after, c.delay)
	case KillNode:
		return fmt.Sprintf("%s: the child kills itself inside execution %d", c.mode, c.after)
	}
	return fmt.Sprintf("%s: kill inside a write transaction from write %d on", c.mode, c.after)
}

// progress is what the parent knows of the child's progress.
type progress struct {
	mu       sync.Mutex
	nodes    int
	writes   int
	inFlight map[string]bool // writes begun and not ended
	leases   int             // lease calls in flight
	selfKill string
	notify   chan struct{} // a line was read (capacity 1)
	eof      chan struct{}
}

func readProgress(t *testing.T, r io.Reader) *progress {
	p := &progress{inFlight: map[string]bool{}, notify: make(chan struct{}, 1), eof: make(chan struct{})}
	go func() {
		defer close(p.eof)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			switch {
			case line == "n":
				p.nodes++
			case line == "l":
				p.leases++
			case line == "L":
				p.leases--
			case strings.HasPrefix(line, "w "):
				p.writes++
				p.inFlight[line[2:]] = true
			case strings.HasPrefix(line, "e "):
				delete(p.inFlight, line[2:])
			case strings.HasPrefix(line, "k "):
				p.selfKill = line[2:]
			}
			p.mu.Unlock()
			select {
			case p.notify <- struct{}{}:
			default:
			}
		}
	}()
	return p
}

// crashTrial runs the child, kills it at the trial's kill point, resumes
// the thread and checks the invariants.
func crashTrial(t *testing.T, b Backend, tc trialCfg, want crashView, ref map[execKey]int) trialResult {
	d := crashModes[tc.mode]
	addr := b.Fresh(t)
	logPath := filepath.Join(t.TempDir(), "side.log")
	vars := []string{env(envRole, "crash"), env(envAddr, addr), env(envCrashLog, logPath), env(envCrashDurability, tc.mode)}
	if tc.kind == KillNode {
		vars = append(vars, env(envCrashSelfKill, strconv.Itoa(tc.after)))
	}
	var probe func(int) bool
	if tc.kind == KillWrite {
		probe = b.WriteProbe(t, addr)
	}
	child := startProc(t, "crash", false, vars...)
	prog := readProgress(t, child.pipe)
	res := trialResult{kind: tc.kind}
	var atKill []string
	leasesAtKill := 0

	switch tc.kind {
	case KillBetween:
	wait:
		for {
			prog.mu.Lock()
			n := prog.nodes
			prog.mu.Unlock()
			if n >= tc.after {
				time.Sleep(tc.delay)
				_ = child.cmd.Process.Kill()
				break
			}
			select {
			case <-prog.notify:
			case <-child.exited:
				break wait
			}
		}
	case KillWrite:
	probing:
		for {
			prog.mu.Lock()
			ready := prog.writes >= tc.after && len(prog.inFlight) > 0 && prog.leases == 0
			prog.mu.Unlock()
			if !ready {
				select {
				case <-prog.notify:
				case <-child.exited:
					break probing
				}
				continue
			}
			if child.done() {
				break
			}
			if probe(child.pid()) {
				prog.mu.Lock()
				atKill = slices.Sorted(maps.Keys(prog.inFlight))
				leasesAtKill = prog.leases
				_ = child.cmd.Process.Kill()
				prog.mu.Unlock()
				res.inFlight = strings.Join(atKill, ", ")
				break
			}
			runtime.Gosched()
		}
	}
	<-child.exited
	<-prog.eof
	res.killed = child.killed()
	if !res.killed {
		require.NoError(t, child.werr, "child:\n%s", child.out.String())
		require.Contains(t, child.out.String(), "--- PASS: "+ChildTest, "the child ran the graph")
	}
	if tc.kind == KillNode {
		res.selfKilled = prog.selfKill
		require.True(t, res.killed && res.selfKilled != "", "the child killed itself in execution %d:\n%s", tc.after, child.out.String())
	}

	// What the crash left, once the database is done with the child.
	if b.Settle != nil {
		b.Settle(t, addr, child.pid())
	}
	b.Integrity(t, addr)
	s, err := b.Open(t.Context(), addr)
	require.NoError(t, err)
	defer s.Close()
	g := crashGraph(t, s, openSideLog(t, logPath, "resume"))
	cps := b.Rows(t, addr, crashThread)
	if res.killed && len(atKill) > 0 {
		committedWrite := func(key string) bool {
			f := strings.Fields(key)
			switch f[0] {
			case "put":
				return slices.ContainsFunc(cps, func(r Row) bool { return r.ID == f[1] })
			case "writes":
				tu, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: crashThread, ID: f[1]})
				if errors.Is(err, checkpoint.ErrNotFound) {
					return false
				}
				require.NoError(t, err)
				return len(f) > 2 && slices.ContainsFunc(tu.PendingWrites, func(w checkpoint.Write) bool { return w.TaskID == f[2] })
			}
			t.Fatalf("unknown write %q", key)
			return false
		}
		if len(atKill) == 1 && leasesAtKill == 0 {
			if committedWrite(atKill[0]) {
				res.afterCommit = true
			} else {
				res.insideWrite = true
			}
		}
	}
	c, latest := committed(t, g, d, cps, ref)
	childSet := count(readSideLog(t, logPath)["child"])
	if !res.killed {
		require.Len(t, c, len(ref), "the child ended, so did the run")
	}

	// Resume (or start over when nothing was saved), once the dead
	// child's lease has expired.
	var final crashState
	began := time.Now()
	for {
		if latest == -2 {
			final, err = g.Invoke(t.Context(), crashState{}, graph.WithThread(crashThread), graph.WithDurability(d))
		} else {
			final, err = g.Resume(t.Context(), graph.Command[crashState]{}, graph.WithThread(crashThread), graph.WithDurability(d))
		}
		var held *checkpoint.LeaseHeldError
		if !errors.As(err, &held) {
			break
		}
		require.True(t, res.killed, "the child ended but left its lease: %v", err)
		require.Less(t, time.Since(began), crashLeaseTTL+20*time.Second, "the dead child's lease never expired")
		time.Sleep(min(max(time.Until(held.Expires), time.Millisecond), 50*time.Millisecond))
		res.leaseWait = time.Since(began)
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

	// 7. The node the child died in ran, did not commit, and ran again.
	if res.selfKilled != "" {
		var e execKey
		_, err := fmt.Sscanf(res.selfKilled, "%d %s", &e.Step, &e.Node)
		require.NoError(t, err)
		require.Contains(t, childSet, e, "the node the child died in did its side effect")
		require.False(t, c[e], "the node the child died in is not committed")
		require.Equal(t, 1, resumed[e], "the node the child died in ran again once")
	}

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
	cps = b.Rows(t, addr, crashThread)
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

	res.latest, res.committed, res.lost, res.lostSteps = latest, len(c), len(lost), len(steps)
	where := ""
	switch {
	case res.insideWrite:
		where = " inside write " + res.inFlight
	case res.afterCommit:
		where = " just after write " + res.inFlight + " committed"
	case res.selfKilled != "":
		where = " inside node " + res.selfKilled
	}
	t.Logf("%s: killed %v%s, latest checkpoint step %d, %d executions committed, %d lost in steps %v, lease wait %v",
		tc, res.killed, where, latest, len(c), len(lost), slices.Sorted(maps.Keys(steps)), res.leaseWait.Round(time.Millisecond))
	return res
}
