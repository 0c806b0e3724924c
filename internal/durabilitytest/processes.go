//go:build unix

package durabilitytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/internal/liveness"
)

// openParent opens the parent's own saver on addr, closed when t ends.
func openParent(t *testing.T, b Backend, addr string) Saver {
	t.Helper()
	s, err := b.Open(t.Context(), addr)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// readN reads N at checkpoint id of thread.
func readN(t *testing.T, g *graph.Graph[counter], thread, id string) int {
	t.Helper()
	snap, err := g.GetState(t.Context(), graph.WithThread(thread), graph.WithCheckpointID(id))
	require.NoError(t, err)
	require.Equal(t, id, snap.CheckpointID)
	return snap.Values.N.Get()
}

// requireOneChain checks that rows (ID order) are one chain: each
// checkpoint's parent is the one before it — no silent fork.
func requireOneChain(t *testing.T, rows []Row) {
	t.Helper()
	for i, r := range rows {
		want := ""
		if i > 0 {
			want = rows[i-1].ID
		}
		require.Equal(t, want, r.Parent, "parent of checkpoint %d (%s, step %d, source %s)", i, r.ID, r.Step, r.Source)
	}
}

// ForkCollision: two processes, A and B, start first; then a third, C,
// runs a thread (so its channel versions are the youngest: with versions
// seeded from each process's clock, A and B would both pick the version
// after C's and store two values under it). A and B then fork the thread's
// step-0 checkpoint in turns, each with its own values — with UpdateState
// at that checkpoint and with a replay that updates N there — and each
// fork must read back its own value, in the forking process and in the
// parent.
func ForkCollision(t *testing.T, b Backend) {
	skipShort(t)
	addr := b.Fresh(t)
	const thread = "fork"
	a := startOps(t, b, addr, "A")
	bb := startOps(t, b, addr, "B")
	c := startOps(t, b, addr, "C")
	r := c.call(request{Op: "invoke", Thread: thread, N: ptr(0)})
	require.Empty(t, r.Err)
	require.Equal(t, 1, r.N)
	c.close()

	rows := b.Rows(t, addr, thread)
	i := slices.IndexFunc(rows, func(r Row) bool { return r.Step == 0 })
	require.GreaterOrEqual(t, i, 0, "the step-0 checkpoint in %v", rows)
	base := rows[i].ID

	type fork struct {
		who, how string
		id       string
		want     int
	}
	var forks []fork
	wrong := 0
	const rounds = 4
	for round := range rounds {
		procs := []*proc{a, bb}
		if round%2 == 1 {
			procs = []*proc{bb, a}
		}
		for k, p := range procs {
			v := 1000*(round+1) + 10*k
			// A fork by UpdateState at the old checkpoint.
			r := p.call(request{Op: "update", Thread: thread, CheckpointID: base, N: ptr(v)})
			require.Empty(t, r.Err, "process %s: update", p.name)
			if r.ReadN != v {
				wrong++
				t.Errorf("process %s forked with N=%d and read back %d", p.name, v, r.ReadN)
			}
			forks = append(forks, fork{p.name, "update", r.ID, v})
			// A replay from the old checkpoint with new input: the
			// update sets N, then inc adds 1.
			runID := fmt.Sprintf("replay-%s-%d", p.name, round)
			r = p.call(request{Op: "resume", Thread: thread, CheckpointID: base, N: ptr(v + 1), RunID: runID})
			require.Empty(t, r.Err, "process %s: replay", p.name)
			require.NotEmpty(t, r.ID, "process %s: replay's last checkpoint", p.name)
			if r.N != v+2 || r.ReadN != v+2 {
				wrong++
				t.Errorf("process %s replayed with N=%d: got %d, read back %d; want %d", p.name, v+1, r.N, r.ReadN, v+2)
			}
			forks = append(forks, fork{p.name, "replay", r.ID, v + 2})
		}
	}
	a.close()
	bb.close()

	// The parent reads every fork back.
	g := rmwGraph(t, openParent(t, b, addr))
	for _, f := range forks {
		if got := readN(t, g, thread, f.id); got != f.want {
			wrong++
			t.Errorf("%s fork of process %s (%s): parent reads N=%d, want %d", f.how, f.who, f.id, got, f.want)
		}
	}
	require.Zero(t, wrong, "wrong values read back")
	t.Logf("%s: %d forks of one checkpoint by 2 processes, 0 wrong values", b.Name, len(forks))
}

// OldProcessFork: process A starts and keeps running; process B, started
// later, runs a thread for several runs; then A forks B's old checkpoints
// (the first at step 0 with N=7). A's forks read back A's values, and B's
// checkpoints still read back B's, in B and in the parent.
func OldProcessFork(t *testing.T, b Backend) {
	skipShort(t)
	addr := b.Fresh(t)
	const thread = "old"
	a := startOps(t, b, addr, "A")
	// A works on another thread meanwhile: its version state is in use.
	r := a.call(request{Op: "invoke", Thread: "a-own", N: ptr(0)})
	require.Empty(t, r.Err)
	time.Sleep(20 * time.Millisecond) // B is younger by a clear margin
	bb := startOps(t, b, addr, "B")
	const runs = 5
	for i := range runs {
		req := request{Op: "invoke", Thread: thread}
		if i == 0 {
			req.N = ptr(0)
		}
		r := bb.call(req)
		require.Empty(t, r.Err)
		require.Equal(t, i+1, r.N)
	}
	g := rmwGraph(t, openParent(t, b, addr))
	rows := b.Rows(t, addr, thread)
	requireOneChain(t, rows)
	before := map[string]int{}
	// The first step of each of B's runs (the first is the thread's step
	// 0): the checkpoints after the input checkpoints.
	var step0 []string
	for i, row := range rows {
		before[row.ID] = readN(t, g, thread, row.ID)
		if i > 0 && rows[i-1].Source == "input" {
			step0 = append(step0, row.ID)
		}
	}
	require.Len(t, step0, runs)
	require.Equal(t, 0, rows[1].Step)

	wrong := 0
	forked := map[string]int{}
	for i, id := range step0 {
		v := 7
		if i > 0 {
			v = 70 + i
		}
		r := a.call(request{Op: "update", Thread: thread, CheckpointID: id, N: ptr(v)})
		require.Empty(t, r.Err, "update")
		if r.ReadN != v {
			wrong++
			t.Errorf("A forked step 0 of B's run %d with N=%d and read back %d", i+1, v, r.ReadN)
		}
		forked[r.ID] = v
	}
	// B's checkpoints read back B's values, in B and in the parent.
	for id, want := range before {
		if got := bb.call(request{Op: "get", Thread: thread, CheckpointID: id}).ReadN; got != want {
			wrong++
			t.Errorf("B reads N=%d at its checkpoint %s after A's forks, want %d", got, id, want)
		}
		if got := readN(t, g, thread, id); got != want {
			wrong++
			t.Errorf("the parent reads N=%d at B's checkpoint %s after A's forks, want %d", got, id, want)
		}
	}
	for id, want := range forked {
		if got := readN(t, g, thread, id); got != want {
			wrong++
			t.Errorf("the parent reads N=%d at A's fork %s, want %d", got, id, want)
		}
	}
	a.close()
	bb.close()
	require.Zero(t, wrong, "wrong values read back")
	t.Logf("%s: an old process forked %d checkpoints of a younger one's thread (%d checkpoints), 0 wrong values", b.Name, len(forked), len(before))
}

// AlternatingWriters: two processes run read-modify-write runs (each run
// reads N and writes N+1 in a node) on one thread, 20 each: first taking
// turns, then all at once. Taking turns, every run succeeds and reads the
// other's last write. At once, every run either succeeds or fails with a
// *checkpoint.LeaseHeldError or checkpoint.ErrConflict, and nothing is
// lost silently: the final N is the number of successful runs, the runs
// returned 1…N once each, and the thread's history is one chain whose N
// grows by one at each run's inc step.
func AlternatingWriters(t *testing.T, b Backend) {
	skipShort(t)
	const perProc = 20
	addr := b.Fresh(t)
	a := startOps(t, b, addr, "A")
	bb := startOps(t, b, addr, "B")
	g := rmwGraph(t, openParent(t, b, addr))

	// checkHistory checks the thread's history and returns the number of
	// increments of N along it.
	checkHistory := func(thread string) (incs int) {
		rows := b.Rows(t, addr, thread)
		requireOneChain(t, rows)
		prev := 0
		for _, row := range rows {
			n := readN(t, g, thread, row.ID)
			switch {
			case n == prev+1 && row.Source == "loop":
				incs++
			case n != prev:
				t.Errorf("checkpoint %s (step %d, source %s): N=%d after %d", row.ID, row.Step, row.Source, n, prev)
			}
			prev = n
		}
		return incs
	}

	t.Run("turns", func(t *testing.T) {
		const thread = "turns"
		wrong := 0
		for i := range perProc {
			for k, p := range []*proc{a, bb} {
				r := p.call(request{Op: "rmw", Thread: thread, Count: 1})
				require.Len(t, r.Results, 1)
				o := r.Results[0]
				require.Empty(t, o.Err, "process %s run %d", p.name, i)
				if want := 2*i + k + 1; o.N != want {
					wrong++
					t.Errorf("process %s run %d: N=%d, want %d", p.name, i, o.N, want)
				}
			}
		}
		require.Zero(t, wrong)
		require.Equal(t, 2*perProc, checkHistory(thread))
		snap, err := g.GetState(t.Context(), graph.WithThread(thread))
		require.NoError(t, err)
		require.Equal(t, 2*perProc, snap.Values.N.Get())
		t.Logf("%s: 2 processes × %d runs taking turns: final N %d, 0 wrong values", b.Name, perProc, snap.Values.N.Get())
	})

	t.Run("at-once", func(t *testing.T) {
		const thread = "at-once"
		for _, p := range []*proc{a, bb} {
			p.send(request{Op: "rmw", Thread: thread, Count: perProc, Pause: 3 * time.Millisecond})
		}
		var ns []int
		kinds := map[string]int{}
		for _, p := range []*proc{a, bb} {
			r := p.recv()
			require.Len(t, r.Results, perProc)
			ok := 0
			for i, o := range r.Results {
				kinds[o.Kind]++
				switch o.Kind {
				case "":
					ok++
					ns = append(ns, o.N)
				case "lease":
					require.Contains(t, o.Holder, "pid ", "the error names the holder")
				case "conflict":
				default:
					t.Errorf("process %s run %d: unexpected error: %s", p.name, i, o.Err)
				}
			}
			t.Logf("process %s: %d of %d runs succeeded", p.name, ok, perProc)
		}
		slices.Sort(ns)
		want := make([]int, len(ns))
		for i := range want {
			want[i] = i + 1
		}
		require.Equal(t, want, ns, "the successful runs returned 1…N, once each")
		snap, err := g.GetState(t.Context(), graph.WithThread(thread))
		require.NoError(t, err)
		require.Equal(t, len(ns), snap.Values.N.Get(), "final N is the number of successful runs")
		require.Equal(t, len(ns), checkHistory(thread), "one inc checkpoint per successful run")
		require.NotZero(t, len(ns))
		t.Logf("%s: 2 processes × %d runs at once: %d succeeded, %d refused with LeaseHeldError, %d with ErrConflict; final N %d: nothing lost",
			b.Name, perProc, kinds[""], kinds["lease"], kinds["conflict"], snap.Values.N.Get())
	})
	a.close()
	bb.close()
}

// LeaseTTL is the lease time to live of the Lease test.
const LeaseTTL = 1500 * time.Millisecond

// Lease: process A runs a thread whose second node blocks; process B's
// Invoke and Resume on the thread are refused with a LeaseHeldError naming
// A, also after several times the lease's time to live (A renews it). Then
// A is SIGKILLed; once its lease expires B's Resume finishes the run from
// A's last checkpoint, without running A's committed node again.
func Lease(t *testing.T, b Backend) {
	skipShort(t)
	addr := b.Fresh(t)
	const thread = "lease"
	ttl := env(envLeaseTTL, LeaseTTL.String())
	a := startOps(t, b, addr, "A", ttl)
	bb := startOps(t, b, addr, "B", ttl)
	a.send(request{Op: "invoke", Graph: "block", Thread: thread, N: ptr(0), Block: true})
	r := a.recv()
	require.Equal(t, "blocked", r.Event, "A reached the blocking node: %+v", r)

	nameA := fmt.Sprintf("pid %d ", a.pid())
	refused := func(when string, r reply) {
		t.Helper()
		require.Equal(t, "lease", r.Kind, "%s: B's run must be refused with a LeaseHeldError: %+v", when, r)
		require.Contains(t, r.Holder, nameA, "%s: the error names A", when)
		require.Contains(t, r.Err, nameA)
	}
	refused("at once", bb.call(request{Op: "invoke", Graph: "block", Thread: thread}))
	refused("at once", bb.call(request{Op: "resume", Graph: "block", Thread: thread}))
	// A renews its lease: it is still held after twice its time to live.
	time.Sleep(2 * LeaseTTL)
	refused("after 2×TTL", bb.call(request{Op: "resume", Graph: "block", Thread: thread}))

	a.kill()
	killed := time.Now()
	require.True(t, a.killed())
	r = bb.call(request{Op: "resume", Graph: "block", Thread: thread})
	if liveness.Self().Host != "" {
		// A died on this host, which the saver can tell: its lease is
		// taken over at once, not after its time to live.
		require.Empty(t, r.Kind, "right after the kill: B's run must take the dead holder's lease at once: %+v", r)
	} else if took := time.Since(killed); took < LeaseTTL/2 {
		// A renewed at most TTL/3 before it died.
		refused("right after the kill", r)
	} else {
		t.Logf("B's first Resume after the kill took %v; not checking that it was refused", took)
	}
	attempts := 1
	for r.Kind == "lease" {
		require.Less(t, time.Since(killed), LeaseTTL+10*time.Second, "A's lease never expired")
		time.Sleep(50 * time.Millisecond)
		r = bb.call(request{Op: "resume", Graph: "block", Thread: thread})
		attempts++
	}
	waited := time.Since(killed)
	require.Empty(t, r.Err)
	// prep ran once, in A (N 0→1); wait ran in B (N 1→101).
	require.Equal(t, 101, r.N)
	require.Equal(t, 2, r.Runs, "A's committed node did not run again")
	require.LessOrEqual(t, waited, LeaseTTL+3*time.Second)
	bb.close()

	g := blockGraph(t, openParent(t, b, addr), func(context.Context) error { return nil })
	rows := b.Rows(t, addr, thread)
	requireOneChain(t, rows)
	snap, err := g.GetState(t.Context(), graph.WithThread(thread))
	require.NoError(t, err)
	require.Equal(t, 101, snap.Values.N.Get())
	require.Empty(t, snap.Next)
	t.Logf("%s: lease TTL %v: B was refused while A lived (holder %q); B's Resume succeeded %v after SIGKILL (attempt %d) and finished the run; history %d checkpoints, one chain",
		b.Name, LeaseTTL, strings.TrimSpace(nameA), waited.Round(time.Millisecond), attempts, len(rows))
}
