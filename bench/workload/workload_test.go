package workload_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/bench/workload"
	"github.com/agentgraph/agentgraph/checkpoint"
)

var ctx = context.Background()

func TestWorkloadsValidate(t *testing.T) {
	g1, err := workload.W1()
	require.NoError(t, err)
	require.NoError(t, workload.RunW1(ctx, g1))
	g2, err := workload.W2()
	require.NoError(t, err)
	require.NoError(t, workload.RunW2(ctx, g2))
	g3, err := workload.W3()
	require.NoError(t, err)
	require.NoError(t, workload.RunW3(ctx, g3))
	g4, err := workload.W4()
	require.NoError(t, err)
	require.NoError(t, workload.RunW4(ctx, g4))
	cs := &workload.CountingSaver{Saver: checkpoint.NewMemory()}
	g5, err := workload.W5(cs)
	require.NoError(t, err)
	require.NoError(t, workload.RunW5(ctx, g5))
	require.EqualValues(t, workload.W5Steps+2, cs.Puts.Load(), "input checkpoint, the start step and one per loop step")
}

func BenchmarkW1Chain(b *testing.B) {
	g, err := workload.W1()
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if err := workload.RunW1(ctx, g); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*workload.W1Nodes), "ns/node")
}

func BenchmarkW2Loop(b *testing.B) {
	g, err := workload.W2()
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if err := workload.RunW2(ctx, g); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*workload.W2Steps), "ns/step")
}

// BenchmarkW2Floor is W2's work as a plain Go loop: the floor any engine
// is measured against.
func BenchmarkW2Floor(b *testing.B) {
	type st struct{ counter int }
	inc := func(_ context.Context, s st) st { return st{counter: s.counter + 1} }
	route := func(_ context.Context, s st) bool { return s.counter < workload.W2Steps }
	for b.Loop() {
		s := st{}
		for {
			s = inc(ctx, s)
			if !route(ctx, s) {
				break
			}
		}
		if s.counter != workload.W2Steps {
			b.Fatal(s.counter)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*workload.W2Steps), "ns/step")
}

func BenchmarkW3FanOut(b *testing.B) {
	g, err := workload.W3()
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if err := workload.RunW3(ctx, g); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkW4MapReduce(b *testing.B) {
	g, err := workload.W4()
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if err := workload.RunW4(ctx, g); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*workload.W4Sends), "ns/send")
}

// BenchmarkW5CheckpointedLoop runs W5 on a fresh thread per iteration and
// deletes the thread afterwards, so that, as in the side-by-side harness,
// the saver holds one run's checkpoints, not b.N runs'.
func BenchmarkW5CheckpointedLoop(b *testing.B) {
	saver := &workload.CountingSaver{Saver: checkpoint.NewMemory()}
	g, err := workload.W5(saver)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if err := workload.RunW5(ctx, g); err != nil {
			b.Fatal(err)
		}
		require.NoError(b, saver.DeleteThread(ctx, workload.LastThread()))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*workload.W5Steps), "ns/step")
}

// TestW2AllocatesOneSmallRecordPerStep bounds the bytes a step allocates
// in steady state: a superstep of one inline task allocates only its node's
// context (32 bytes, from a slab; see graph's loop.newEnv). In a fresh
// process every byte a step allocates is memory touched for the first
// time, which is what made early invokes several times slower than later
// ones (BenchmarkPhases measures it).
func TestW2AllocatesOneSmallRecordPerStep(t *testing.T) {
	g, err := workload.W2()
	require.NoError(t, err)
	require.NoError(t, workload.RunW2(ctx, g))
	const runs = 3
	f, err := workload.Measure(runs, func() error { return workload.RunW2(ctx, g) })
	require.NoError(t, err)
	perStep := f.BytesPerInvoke() / workload.W2Steps
	require.LessOrEqual(t, perStep, 40.0, "bytes allocated per step")
}
