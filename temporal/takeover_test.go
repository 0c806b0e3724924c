//go:build linux

package temporal_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	agtemporal "github.com/agentgraph/agentgraph/temporal"
)

// A worker on another machine is killed inside slow, in a step activity
// (WithStepsPerActivity: the step activity holds the thread's lease; a
// task activity holds none, so with tasks as activities the lease is in
// the way only of a step's single task, which runs in the step activity);
// the other worker's retried attempt takes the lease over when it
// expires and finishes the run, with no finished node run again. The workers run in
// PID namespaces of their own, which the savers take for other hosts: the
// lease cannot be handed over at once, as it is from a dead process on
// the same host. The log line gives the time from the kill to the node
// running again (the takeover) and to the run's end.
//
// The ordinary suite runs it with a 2 s heartbeat timeout and a 3 s lease;
// AGENTGRAPH_TEMPORAL_TEST_HEARTBEAT, AGENTGRAPH_TEMPORAL_TEST_LEASE_TTL
// and AGENTGRAPH_TEMPORAL_TEST_RETRY=default (Temporal's default retry
// policy) measure other settings, e.g. the package's defaults:
//
//	AGENTGRAPH_TEMPORAL_TEST_HEARTBEAT=30s AGENTGRAPH_TEMPORAL_TEST_LEASE_TTL=30s AGENTGRAPH_TEMPORAL_TEST_RETRY=default \
//	  go test -run TestTakeoverFromAWorkerOnAnotherHost -v ./temporal/
func TestTakeoverFromAWorkerOnAnotherHost(t *testing.T) {
	it := newITest(t, 0)
	workers := map[int]*exec.Cmd{}
	for i := range 2 {
		tag := 1000 + i
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), append(it.env, envTag+"="+strconv.Itoa(tag))...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
		out, err := os.Create(filepath.Join(t.TempDir(), fmt.Sprintf("worker%d.log", i)))
		require.NoError(t, err)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Skipf("cannot start a worker in a PID namespace of its own (needs root or CAP_SYS_ADMIN): %v", err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				b, _ := os.ReadFile(out.Name())
				t.Logf("worker %d output:\n%s", tag, b)
			}
		})
		workers[tag] = cmd
	}
	g, err := killGraph(it.saver, it.effects)
	require.NoError(t, err)
	w, err := agtemporal.New("killtest-steps", g, append(killOptions(), agtemporal.WithStepsPerActivity(1))...)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	thread := "takeover-" + it.queue
	run, err := w.Start(ctx, it.c, thread, St{}, client.StartWorkflowOptions{TaskQueue: it.queue})
	require.NoError(t, err)

	victim := 0
	for victim == 0 {
		require.NoError(t, ctx.Err(), "no worker ran slow")
		lines, tags := readEffects(t, it.effects)
		for i, l := range lines {
			if l == "start slow" {
				victim = tags[i]
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Contains(t, workers, victim)
	killed := time.Now()
	require.NoError(t, workers[victim].Process.Signal(syscall.SIGKILL))
	_ = workers[victim].Wait()

	var takeover time.Duration
	for takeover == 0 {
		require.NoError(t, ctx.Err(), "slow never ran again")
		lines, tags := readEffects(t, it.effects)
		for i, l := range lines {
			if l == "start slow" && tags[i] != victim {
				takeover = time.Since(killed)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	var st agtemporal.Status
	require.NoError(t, run.Get(ctx, &st))
	finished := time.Since(killed)
	s, err := w.Values(ctx, st)
	require.NoError(t, err)
	require.Equal(t, []string{"n1", "n2", "slow", "n4", "n5"}, s.Log.Get())
	lines, _ := readEffects(t, it.effects)
	count := map[string]int{}
	for _, l := range lines {
		count[l]++
	}
	require.Equal(t, map[string]int{"done n1": 1, "done n2": 1, "start slow": 2, "done slow": 1, "done n4": 1, "done n5": 1}, count)
	hb, ttl := killHeartbeat(), envDuration(envLeaseTTL, 3*time.Second)
	t.Logf("recovery from a kill on another host: heartbeat timeout %s (a step activity's lease), graph's lease TTL %s, retry policy %s: slow ran again %.1f s after the kill, the run ended %.1f s after it",
		hb, ttl, retryName(), takeover.Seconds(), finished.Seconds())
}

// killHeartbeat is the heartbeat timeout of killOptions.
func killHeartbeat() time.Duration { return envDuration(envHeartbeat, 2*time.Second) }

// retryName names the retry policy of killOptions.
func retryName() string {
	if os.Getenv(envRetry) == "default" {
		return "Temporal's default (1 s doubling, up to 100 s)"
	}
	return "200 ms growing 1.5× up to 2 s"
}
