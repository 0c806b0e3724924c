// Command agentgraph-bench runs one workload of the peer benchmark
// (bench/peers/RESULTS.md §2) and prints its metrics in the harness's
// format, `agentgraph W1 per_invoke 12.3 us`, so that bench/peers/run.sh
// measures agentgraph beside LangGraph.js and Eino. From the repository root:
//
//	go build -o bench/agentgraph-bench ./bench
//	EXTRA_PEERS="agentgraph|$PWD/bench|./agentgraph-bench|" REPS=5 bench/peers/run.sh
//
// It exits 2 when a result fails validation and 3 for an unknown workload.
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/agentgraph/agentgraph/bench/workload"
	"github.com/agentgraph/agentgraph/checkpoint"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs warm warm-up invokes, then n timed ones, and returns wall
// and CPU time of the timed region.
func measure(warm, n int, invoke func() error) (wall, cpu time.Duration, err error) {
	for range warm {
		if err := invoke(); err != nil {
			return 0, 0, err
		}
	}
	c0, t0 := cpuTime(), time.Now()
	for range n {
		if err := invoke(); err != nil {
			return 0, 0, err
		}
	}
	return time.Since(t0), cpuTime() - c0, nil
}

// report prints metric, the wall time per count, and metric_cpu, the CPU
// time per count.
func report(w, metric string, wall, cpu time.Duration, count int) {
	perUS := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(count) }
	fmt.Printf("agentgraph %s %s %.4g us\n", w, metric, perUS(wall))
	fmt.Printf("agentgraph %s %s_cpu %.4g us\n", w, metric, perUS(cpu))
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: agentgraph-bench W1|W2|W3|W4|W5")
		os.Exit(3)
	}
	w := os.Args[1]
	ctx := context.Background()
	var (
		wall, cpu time.Duration
		err       error
	)
	switch w {
	case "W1":
		g, e := workload.W1()
		if e != nil {
			fail(e)
		}
		wall, cpu, err = measure(200, 2000, func() error { return workload.RunW1(ctx, g) })
		if err == nil {
			report(w, "per_invoke", wall, cpu, 2000)
			report(w, "per_node", wall, cpu, 2000*workload.W1Nodes)
		}
	case "W2":
		g, e := workload.W2()
		if e != nil {
			fail(e)
		}
		wall, cpu, err = measure(1, 1, func() error { return workload.RunW2(ctx, g) })
		if err == nil {
			report(w, "per_superstep", wall, cpu, workload.W2Steps)
		}
	case "W3":
		g, e := workload.W3()
		if e != nil {
			fail(e)
		}
		wall, cpu, err = measure(50, 500, func() error { return workload.RunW3(ctx, g) })
		if err == nil {
			report(w, "per_invoke", wall, cpu, 500)
		}
	case "W4":
		g, e := workload.W4()
		if e != nil {
			fail(e)
		}
		wall, cpu, err = measure(2, 20, func() error { return workload.RunW4(ctx, g) })
		if err == nil {
			report(w, "per_invoke", wall, cpu, 20)
			report(w, "per_send", wall, cpu, 20*workload.W4Sends)
		}
	case "W5":
		saver := &workload.CountingSaver{Saver: checkpoint.NewMemory()}
		g, e := workload.W5(saver)
		if e != nil {
			fail(e)
		}
		if err = workload.RunW5(ctx, g); err == nil {
			before := saver.Puts.Load()
			wall, cpu, err = measure(0, 1, func() error { return workload.RunW5(ctx, g) })
			if err == nil {
				report(w, "per_superstep", wall, cpu, workload.W5Steps)
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
