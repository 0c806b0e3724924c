package postgres_test

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
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
)

const (
	// envLeaseSchema names the schema of TestLeaseChild.
	envLeaseSchema = "CHECKPOINT_POSTGRES_LEASE_SCHEMA"
	// leaseChildTTL is the time to live of the child's lease, which it
	// renews every tenth of it.
	leaseChildTTL = 1500 * time.Millisecond
	leaseThread   = "leased"
)

// TestLeaseHolderKilled runs a child process (this test binary,
// re-executed) that takes a thread's lease, keeps renewing it and hangs.
// While the child lives, the lease is refused to this process, naming the
// child, also after the first time to live has passed; once the child is
// killed with SIGKILL, its lease expires (by the database's clock) and this
// process takes it.
func TestLeaseHolderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	schema := freshSchema(t)
	s := open(t, schema)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestLeaseChild$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), envLeaseSchema+"="+schema)
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

// startLeaseChild starts cmd, a TestLeaseChild process, and returns the
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

// TestLeaseChild is the child process of TestLeaseHolderKilled: it takes
// the lease of leaseThread, says so on stdout and renews it until killed.
// Run on its own it is skipped.
func TestLeaseChild(t *testing.T) {
	schema := os.Getenv(envLeaseSchema)
	if schema == "" {
		t.Skip("child process of TestLeaseHolderKilled")
	}
	ctx := context.Background()
	s, err := postgres.Open(ctx, pgdbtest.URL(t), postgres.WithSchema(schema), postgres.WithMaxConns(2))
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

func BenchmarkLease(b *testing.B) {
	s, err := postgres.Open(b.Context(), pgdbtest.URL(b), postgres.WithSchema(pgdbtest.FreshSchema(b, "agt_bench")))
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	ctx := b.Context()
	for b.Loop() {
		l, err := s.AcquireLease(ctx, "bench", "bench", time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.ReleaseLease(ctx, l); err != nil {
			b.Fatal(err)
		}
	}
}
