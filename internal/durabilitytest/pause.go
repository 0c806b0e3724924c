//go:build unix

package durabilitytest

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

var pauseTrials = flag.Int("pause.trials", 3, "SIGSTOP trials of TestPausedHolder (the issue's measure: -pause.trials=50)")

// PauseTTL is the lease time to live of the PausedHolder test.
const PauseTTL = 500 * time.Millisecond

// PausedHolder runs -pause.trials trials (3 by default) of the fencing
// promise with real processes. In each, process A runs a thread step after
// step (a checkpoint a step) and is SIGSTOPped at a random moment; once
// its lease expired (it cannot renew it while stopped), process B resumes
// the thread — taking it over — and runs it on for 20 steps; then A is
// SIGCONTed. Every checkpoint of A's that lands after B took over is
// counted: there must be none; A's run must end with a
// *checkpoint.FencedError (or, when its renewal timer fires before its
// next write, with checkpoint.ErrLeaseLost), and B's run must succeed.
//
// A is stopped between transactions: a stop that the backend's WriteProbe
// finds inside a write transaction is undone (SIGCONT) and tried again, and
// counted. Inside one, A would hold SQLite's file write lock, or on
// PostgreSQL the shared advisory lock on the thread's lease that its
// write took, and B's takeover would wait for it (on PostgreSQL for at
// most the 5s idle timeout of a write taking the long way; a
// one-round-trip write is committed by the server without waiting for A):
// that window is documented in docs/durability.md.
func PausedHolder(t *testing.T, b Backend) {
	skipShort(t)
	addr := b.Fresh(t)
	parent := openParent(t, b, addr)
	probe := b.WriteProbe(t, addr)
	ttl := env(envLeaseTTL, PauseTTL.String())
	a := startOps(t, b, addr, "A", ttl)
	bb := startOps(t, b, addr, "B", ttl)
	countA := func(thread string) int {
		n := 0
		for _, err := range parent.List(t.Context(), thread, checkpoint.ListOptions{Filter: map[string]any{"run_id": "A"}}) {
			require.NoError(t, err)
			n++
		}
		return n
	}
	var landed, fenced, lost, inTx, retried, locked int
	for trial := range *pauseTrials {
		thread := fmt.Sprintf("paused-%d", trial)
		a.send(request{Op: "spin", Thread: thread, N: ptr(0), RunID: "A", Count: 1 << 30})
		require.Equal(t, "spinning", a.recv().Event)
		for {
			time.Sleep(rand.N(20 * time.Millisecond))
			require.NoError(t, syscall.Kill(a.pid(), syscall.SIGSTOP))
			// kill returns before the process has stopped: a probe made
			// then could miss a transaction A begins on its way to the stop.
			waitStopped(t, a.pid())
			if !probe(a.pid()) {
				break
			}
			// Stopped inside a write transaction: SQLite's window (B
			// would wait for the file's lock until A resumes). Resume A
			// and stop it again.
			inTx++
			require.NoError(t, syscall.Kill(a.pid(), syscall.SIGCONT))
		}
		stopped := time.Now()
		time.Sleep(PauseTTL + 100*time.Millisecond)
		before := countA(thread)

		// B takes the thread over once A's lease expired, and runs on.
		var r reply
		for {
			bb.send(request{Op: "spin-resume", Thread: thread, RunID: "B", Count: 20})
			r = recvFinal(bb)
			busy := r.Kind == "other" && strings.Contains(r.Err, "SQLITE_BUSY")
			if r.Kind != "lease" && !busy {
				break
			}
			if busy {
				// The file's write lock, held by A (stopped in a state
				// the probe does not see) or taken for a moment by
				// another connection: tried again, and counted.
				locked++
			}
			retried++
			require.Less(t, time.Since(stopped), time.Minute, "trial %d: B was refused for a minute after A stopped; last: %+v; locks: %s", trial, r, procLocks())
			time.Sleep(20 * time.Millisecond)
		}
		require.Empty(t, r.Err, "trial %d: B's run", trial)
		require.Equal(t, before, countA(thread), "trial %d: A wrote while stopped", trial)

		require.NoError(t, syscall.Kill(a.pid(), syscall.SIGCONT))
		ra := recvFinal(a)
		// A's next write is refused, unless its renewal timer fires
		// first and finds the lease lost.
		require.Contains(t, []string{"fenced", "lost"}, ra.Kind, "trial %d: A's run after it woke up: %+v", trial, ra)
		if ra.Kind == "fenced" {
			fenced++
		} else {
			lost++
		}
		landed += countA(thread) - before
	}
	a.close()
	bb.close()
	t.Logf("%s: %d trials, lease TTL %v: checkpoints of the stopped holder landed after the takeover: %d; its run ended with FencedError at its next write: %d, with ErrLeaseLost from its renewal: %d; the new holder's runs succeeded: %d of %d; stops inside a write transaction (retried): %d; new holder refused while the lease lived: %d times, of which SQLITE_BUSY: %d",
		b.Name, *pauseTrials, PauseTTL, landed, fenced, lost, *pauseTrials, *pauseTrials, inTx, retried, locked)
	require.Zero(t, landed)
}

// waitStopped waits until every thread of process pid is stopped by a
// signal (state T in /proc/PID/task/TID/stat).
func waitStopped(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Stat("/proc/self"); err != nil {
				t.Skip("needs /proc, to see that a process has stopped")
			}
		}
		require.NoError(t, err)
		stopped := true
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			if err != nil {
				continue // the thread ended
			}
			// The state follows the command name, which is in parentheses.
			if i := strings.LastIndexByte(string(b), ')'); i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
		require.True(t, time.Now().Before(deadline), "process %d did not stop", pid)
		time.Sleep(time.Millisecond)
	}
}

// procLocks returns this machine's /proc/locks, for a failure's message.
func procLocks() string {
	b, _ := os.ReadFile("/proc/locks")
	return string(b)
}

// recvFinal reads p's replies up to the one that ends its request.
func recvFinal(p *proc) reply {
	p.t.Helper()
	for {
		r := p.recv()
		if r.Event == "" {
			return r
		}
	}
}
