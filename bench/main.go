// Command agentgraph-bench runs one workload of the peer benchmark
// (bench/peers/RESULTS.md §2) and prints its metrics in the harness's
// format, `agentgraph W1 per_invoke 12.3 us`, so that bench/peers/run.sh
// measures agentgraph beside LangGraph.js and Eino. From the repository root:
//
//	go build -o bench/agentgraph-bench ./bench
//	EXTRA_PEERS="agentgraph|$PWD/bench|./agentgraph-bench|" REPS=5 bench/peers/run.sh
//
// For W1–W4 it measures two phases of one process (see
// bench/workload.Protocol.Run): the harness's protocol (warm-up invokes,
// then the measured ones), which in a fresh process is the cold phase —
// before the first garbage collection every allocation is fresh memory —
// printed under the harness's metric names (per_node, …), and the steady
// phase, once the collector has cycled, printed with a steady_ prefix
// (steady_per_node, …). Each phase also prints the heap bytes and
// allocations per invoke (bytes_per_invoke, allocs_per_invoke) and the
// collections it saw (gcs).
//
// It exits 2 when a result fails validation and 3 for an unknown workload.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentgraph/agentgraph/bench/workload"
	"github.com/agentgraph/agentgraph/checkpoint"
)

// report prints a phase's figures: metric, the wall time per unit, and
// metric_cpu, the CPU time per unit, with prefix before the metric's name
// ("" for the cold phase, which is the harness's protocol, "steady_" for
// the steady one), then the bytes and allocations per invoke.
func report(w, prefix, metric string, f workload.Figures, units int) {
	reportTime(w, prefix, metric, f, units)
	fmt.Printf("agentgraph %s %sbytes_per_invoke %.0f B\n", w, prefix, f.BytesPerInvoke())
	fmt.Printf("agentgraph %s %sallocs_per_invoke %.1f count\n", w, prefix, f.AllocsPerInvoke())
	fmt.Printf("agentgraph %s %sgcs %d count\n", w, prefix, f.GCs)
}

// reportTime prints metric and metric_cpu (see report).
func reportTime(w, prefix, metric string, f workload.Figures, units int) {
	wall, cpu := f.Per(units)
	fmt.Printf("agentgraph %s %s%s %.4g us\n", w, prefix, metric, wall)
	fmt.Printf("agentgraph %s %s%s_cpu %.4g us\n", w, prefix, metric, cpu)
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: agentgraph-bench W1|W2|W3|W4|W5")
		os.Exit(3)
	}
	w := os.Args[1]
	ctx := context.Background()
	var err error
	p, perr := workload.ProtocolOf(w)
	switch {
	case perr == nil: // W1–W4
		var ph workload.Phases
		if ph, err = p.Run(ctx); err == nil {
			if p.PerInvoke {
				reportTime(w, "", "per_invoke", ph.Cold, 1)
			}
			report(w, "", p.Metric, ph.Cold, p.Units)
			report(w, "steady_", p.Metric, ph.Steady, p.Units)
		}
	case w == "W5":
		saver := &workload.CountingSaver{Saver: checkpoint.NewMemory()}
		g, e := workload.W5(saver)
		if e != nil {
			fail(e)
		}
		if err = workload.RunW5(ctx, g); err == nil {
			before := saver.Puts.Load()
			var f workload.Figures
			f, err = workload.Measure(1, func() error { return workload.RunW5(ctx, g) })
			if err == nil {
				report(w, "", "per_superstep", f, workload.W5Steps)
				fmt.Printf("agentgraph %s checkpoints_written %d count\n", w, saver.Puts.Load()-before)
			}
		}
	default:
		fmt.Fprintf(os.Stderr, "agentgraph-bench: unknown workload %q\n", w)
		os.Exit(3)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentgraph-bench:", err)
		os.Exit(2)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "agentgraph-bench:", err)
	os.Exit(1)
}
