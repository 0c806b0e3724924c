package workload_test

// The cost of thread leases: W5 (1,000 steps, a checkpoint after each) with
// the engine's default lease (every run takes its thread's lease, renews it
// every TTL/3 and releases it at the end) and with leasing off
// (graph.WithLeaseTTL(0)), on SQLite and PostgreSQL (and in memory); and
// the saver's AcquireLease + ReleaseLease pair alone, which is what leasing adds to
// each run (a W5 run lasts far less than the TTL/3 after which the first
// renewal comes).
//
//	go test ./bench/workload/ -run '^$' -bench 'W5Lease|LeaseAcquireRelease' -benchtime=20x

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/bench/workload"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// leaseBackends are the savers that lease; memory shows the engine's side
// of the cost without a database's.
var leaseBackends = []backend{
	{"memory", func(testing.TB) (checkpoint.Saver, *storage) { return checkpoint.NewMemory(), nil }},
	{"sqlite", openSQLite},
	{"postgres", openPostgres},
}

// BenchmarkW5Lease runs W5 with DurabilitySync on a fresh thread per run,
// with the default lease ("lease") and without ("nolease"), with a
// context that cannot be cancelled; "nolease-cancelable" is without lease
// but with a cancelable context, which makes every node run on a goroutine
// of its own (so that a cancelled run returns at once even when a node
// ignores its context). The lease does not make the context cancelable: a
// lost lease stops the run at its next checkpoint.
func BenchmarkW5Lease(b *testing.B) {
	for _, be := range leaseBackends {
		b.Run(be.name, func(b *testing.B) {
			for _, v := range []struct {
				name       string
				ttl        graph.CompileOption
				cancelable bool
			}{
				{"lease", graph.WithLeaseTTL(graph.DefaultLeaseTTL), false},
				{"nolease", graph.WithLeaseTTL(0), false},
				{"nolease-cancelable", graph.WithLeaseTTL(0), true},
			} {
				b.Run(v.name, func(b *testing.B) {
					saver, _ := be.open(b)
					_, leases := saver.(checkpoint.Leaser)
					require.True(b, leases, "%s saver leases", be.name)
					g, err := workload.W5(saver, v.ttl)
					require.NoError(b, err)
					ctx := context.Background()
					if v.cancelable {
						var cancel context.CancelFunc
						ctx, cancel = context.WithCancel(ctx)
						defer cancel()
					}
					b.ReportAllocs()
					for b.Loop() {
						if err := runW5(ctx, g, graph.DurabilitySync); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*workload.W5Steps), "ns/step")
				})
			}
		})
	}
}

var leaseThread atomic.Int64

// BenchmarkLeaseAcquireRelease measures what leasing adds to a run: one
// AcquireLease and one ReleaseLease, on a fresh thread each time (as runs
// of new threads do) and on one thread over and over.
func BenchmarkLeaseAcquireRelease(b *testing.B) {
	for _, be := range leaseBackends {
		b.Run(be.name, func(b *testing.B) {
			for _, fresh := range []bool{true, false} {
				name := "same-thread"
				if fresh {
					name = "new-thread"
				}
				b.Run(name, func(b *testing.B) {
					saver, _ := be.open(b)
					leaser := saver.(checkpoint.Leaser)
					thread := "lease-bench"
					b.ReportAllocs()
					for b.Loop() {
						if fresh {
							thread = "lease-" + strconv.FormatInt(leaseThread.Add(1), 10)
						}
						l, err := leaser.AcquireLease(ctx, thread, "bench", graph.DefaultLeaseTTL)
						if err != nil {
							b.Fatal(err)
						}
						if err := leaser.ReleaseLease(ctx, l); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkLeaseRenew measures one renewal, which a live run makes every
// TTL/3 (10 s by default).
func BenchmarkLeaseRenew(b *testing.B) {
	for _, be := range leaseBackends {
		b.Run(be.name, func(b *testing.B) {
			saver, _ := be.open(b)
			leaser := saver.(checkpoint.Leaser)
			l, err := leaser.AcquireLease(ctx, "renew-bench", "bench", graph.DefaultLeaseTTL)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if l, err = leaser.RenewLease(ctx, l, graph.DefaultLeaseTTL); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestW5LeaseSmoke keeps the lease benchmarks' code working: a short W5
// loop with and without leasing on each backend.
func TestW5LeaseSmoke(t *testing.T) {
	for _, be := range leaseBackends {
		t.Run(be.name, func(t *testing.T) {
			saver, _ := be.open(t)
			for _, ttl := range []graph.CompileOption{graph.WithLeaseTTL(graph.DefaultLeaseTTL), graph.WithLeaseTTL(0)} {
				g, err := workload.W5(saver, ttl)
				require.NoError(t, err)
				out, err := g.Invoke(t.Context(), workload.Counter{Counter: state.Set(0)}, graph.WithThread("smoke-"+strconv.FormatInt(leaseThread.Add(1), 10)), graph.WithRecursionLimit(workload.W5Steps+100))
				require.NoError(t, err)
				require.Equal(t, workload.W5Steps, out.Counter.Get())
			}
		})
	}
}
