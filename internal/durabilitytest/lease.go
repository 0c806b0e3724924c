//go:build unix

package durabilitytest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/internal/liveness"
)

// LeaseChildTest is the name of the test function, in each backend's test
// package, that calls [LeaseChild]: the child process of
// [LeaseHolderKilled] runs it.
const LeaseChildTest = "TestLeaseChild"

const (
	// envLeaseAddr names the database of LeaseChildTest.
	envLeaseAddr = "AGENTGRAPH_DURABILITY_LEASE_ADDR"
	// leaseChildTTL is the time to live of the child's lease, which it
	// renews every tenth of it.
	leaseChildTTL = 1500 * time.Millisecond
	leaseThread   = "leased"
)

// LeaseHolderKilled runs a child process (this test binary, re-executed,
// running [LeaseChildTest]) that takes a thread's lease, keeps renewing it
// and hangs. While the child lives, the lease is refused to this process,
// naming the child, also after the first time to live has passed; once the
// child is killed with SIGKILL, this process takes the lease at its first
// attempt, as the child died on this host (where that cannot be told, once
// the lease expired by the database's clock).
func LeaseHolderKilled(t *testing.T, b Backend) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	addr := b.Fresh(t)
	s := openParent(t, b, addr)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+LeaseChildTest+"$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), envLeaseAddr+"="+addr)
	holder := startLeaseChild(t, cmd)

	// Refused, naming the child, for longer than the time to live: the
	// child's renewals keep the lease.
	for start := time.Now(); time.Since(start) < leaseChildTTL+500*time.Millisecond; time.Sleep(50 * time.Millisecond) {
		_, err := s.AcquireLease(t.Context(), leaseThread, "parent", time.Minute)
		held, ok := errors.AsType[*checkpoint.LeaseHeldError](err)
		require.True(t, ok, "AcquireLease while the child holds the lease: %v", err)
		require.Equal(t, holder, held.Holder)
	}

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait() // killed
	killed := time.Now()
	if liveness.Self().Host != "" {
		// The child died on this host, which the saver can tell: its
		// lease is taken over at once, not after its time to live.
		l, err := s.AcquireLease(t.Context(), leaseThread, "parent", time.Minute)
		require.NoError(t, err, "AcquireLease right after the holder was killed on this host")
		require.Equal(t, "parent", l.Holder)
		t.Logf("lease taken %v after the holder was killed, at the first attempt (time to live %v)", time.Since(killed).Round(time.Millisecond), leaseChildTTL)
		return
	}
	for {
		l, err := s.AcquireLease(t.Context(), leaseThread, "parent", time.Minute)
		if err == nil {
			require.Equal(t, "parent", l.Holder)
			break
		}
		_, ok := errors.AsType[*checkpoint.LeaseHeldError](err)
		require.True(t, ok, "AcquireLease: %v", err)
		require.Less(t, time.Since(killed), 30*time.Second, "the killed child's lease never expired")
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("lease taken %v after the holder was killed (time to live %v)", time.Since(killed).Round(time.Millisecond), leaseChildTTL)
}

// startLeaseChild starts cmd, a LeaseChildTest process, and returns the
// holder of the lease it took, once it took it.
func startLeaseChild(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	want := fmt.Sprintf("lease held by pid %d", cmd.Process.Pid)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("child exited without taking the lease: %v\n%s", cmd.Wait(), &stderr)
			}
			if line == want {
				go func() {
					for range lines { // drain
					}
				}()
				return fmt.Sprintf("pid %d", cmd.Process.Pid)
			}
		case <-timeout:
			t.Fatalf("child did not take the lease within 30s\n%s", &stderr)
		}
	}
}

// LeaseChild is the body of [LeaseChildTest], the child process of
// [LeaseHolderKilled]: it takes the lease of leaseThread, says so on stdout
// and renews it until killed. Run on its own it is skipped.
func LeaseChild(t *testing.T, b Backend) {
	addr := os.Getenv(envLeaseAddr)
	if addr == "" {
		t.Skip("child process of TestLeaseHolderKilled")
	}
	ctx := context.Background()
	s, err := b.Open(ctx, addr)
	require.NoError(t, err)
	defer s.Close()
	holder := fmt.Sprintf("pid %d", os.Getpid())
	l, err := s.AcquireLease(ctx, leaseThread, holder, leaseChildTTL)
	require.NoError(t, err)
	fmt.Println("lease held by " + holder)
	for {
		time.Sleep(leaseChildTTL / 10)
		l, err = s.RenewLease(ctx, l, leaseChildTTL)
		require.NoError(t, err)
	}
}
