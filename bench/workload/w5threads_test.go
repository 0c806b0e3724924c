package workload_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/bench/workload"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
)

// BenchmarkW5Threads measures durable steps per second with many threads
// checkpointing at once on one saver (group commit, issue 25 item 4): an
// op runs W5's graph on 1 or 1,000 threads concurrently, each on a fresh
// thread with default (sync) durability, on one SQLite file with
// synchronous NORMAL and FULL, and on PostgreSQL when
// AGENTGRAPH_TEST_POSTGRES_URL is set. One thread runs W5 itself (1,000
// steps); each of 1,000 threads runs 20 steps (W5N), or
// AGENTGRAPH_BENCH_W5_THREAD_STEPS. "steps/s" counts loop steps (a
// checkpoint each), not the two checkpoints a run writes before its
// first step.
//
//	go test -run '^$' -bench 'W5Threads' -benchtime=1x -count=3 -timeout 30m ./bench/workload/
func BenchmarkW5Threads(b *testing.B) {
	manySteps := 20
	if v := os.Getenv("AGENTGRAPH_BENCH_W5_THREAD_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err)
		manySteps = n
	}
	savers := []struct {
		name string
		open func(b *testing.B) checkpoint.Saver
	}{
		{"sqlite-NORMAL", func(b *testing.B) checkpoint.Saver { return openSQLiteSync(b, "NORMAL") }},
		{"sqlite-FULL", func(b *testing.B) checkpoint.Saver { return openSQLiteSync(b, "FULL") }},
		{"postgres", func(b *testing.B) checkpoint.Saver { s, _ := openPostgres(b); return s }},
	}
	for _, sv := range savers {
		for _, threads := range []int{1, 1000} {
			steps := workload.W5Steps
			if threads > 1 {
				steps = manySteps
			}
			b.Run(fmt.Sprintf("%s/threads=%d", sv.name, threads), func(b *testing.B) {
				s := sv.open(b)
				g, err := workload.W5N(s, steps)
				require.NoError(b, err)
				var run atomic.Int64
				b.ReportAllocs()
				for b.Loop() {
					var wg sync.WaitGroup
					errs := make([]error, threads)
					for i := range threads {
						thread := fmt.Sprintf("w5t-%d-%d", run.Add(1), i)
						wg.Go(func() { errs[i] = workload.RunW5N(ctx, g, thread, steps) })
					}
					wg.Wait()
					for _, err := range errs {
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				total := float64(b.N * threads * steps)
				b.ReportMetric(total/b.Elapsed().Seconds(), "steps/s")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/step")
			})
		}
	}
}

// openSQLiteSync opens a fresh SQLite saver with PRAGMA synchronous sync.
func openSQLiteSync(tb testing.TB, sync string) checkpoint.Saver {
	s, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "threads.db"), sqlite.WithSynchronous(sync))
	require.NoError(tb, err)
	tb.Cleanup(func() { s.Close() })
	return s
}
