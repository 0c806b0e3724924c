//go:build unix

package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/groupcommit"
)

// BenchmarkCommitBatch measures the group's writer alone: batches of 460
// fenced Puts of 1,000 threads (each a step of its thread, as W5Threads
// makes them) committed by Saver.commit on the benchmark's goroutine,
// write by write or set-based. ns/op is per batch, ns/write per Put, and
// cpu-ns/write the process's CPU time (user and system, the background
// checkpointer's and the garbage collector's included) during the commits
// per Put: on a shared machine the steadier figure.
//
//	go test -run '^$' -bench CommitBatch -benchtime 100x ./checkpoint/sqlite/
func BenchmarkCommitBatch(b *testing.B) {
	const threads, batchSize = 1000, 460
	for _, mode := range []struct {
		name   string
		noSets bool
	}{{"statements", true}, {"sets", false}} {
		b.Run(mode.name, func(b *testing.B) {
			s, err := Open(b.Context(), filepath.Join(b.TempDir(), "commit.db"))
			require.NoError(b, err)
			b.Cleanup(func() { s.Close() })
			s.noSets = mode.noSets
			ctxs := make([]context.Context, threads)
			steps := make([]int, threads)
			for i := range threads {
				l, err := s.AcquireLease(b.Context(), fmt.Sprintf("thread-%04d", i), "bench", time.Hour)
				require.NoError(b, err)
				ctxs[i] = checkpoint.WithLease(b.Context(), l)
			}
			order := rand.Perm(threads)
			next, id := 0, 0
			last := make([]string, threads)
			put := func(i int) *groupWrite {
				k := steps[i]
				steps[i]++
				id++
				cp := &checkpoint.Checkpoint{
					ThreadID: fmt.Sprintf("thread-%04d", i), ID: fmt.Sprintf("%012d", id), ParentID: last[i],
					Metadata:  checkpoint.Metadata{Source: "loop", Step: k},
					CreatedAt: time.Now(),
					Channels:  []checkpoint.Channel{{Name: "Counter", Version: int64(k + 1), Value: fmt.Appendf(nil, "%d", k)}},
					Frontier:  []byte(`{"tasks":["inc"]}`),
				}
				last[i] = cp.ID
				op, err := s.putWrite(cp)
				require.NoError(b, err)
				return &groupcommit.Write[writeOp]{Ctx: ctxs[i], Op: op}
			}
			batch := make([]*groupWrite, batchSize)
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				for j := range batch {
					batch[j] = put(order[next])
					next = (next + 1) % threads
				}
				b.StartTimer()
				before := processCPU(b)
				s.commit(batch)
				cpu += processCPU(b) - before
				for _, w := range batch {
					if w.Err != nil {
						b.Fatal(w.Err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchSize), "ns/write")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*batchSize), "cpu-ns/write")
		})
	}
}

// processCPU returns the CPU time (user and system) the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
