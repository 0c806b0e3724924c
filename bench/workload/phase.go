package workload

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// A process runs a workload in two phases that cost differently. In the
// cold phase, the first invokes of a fresh process, every byte allocated is
// memory the process never touched before (the garbage collector has not
// run yet, so nothing is recycled), and touching it costs a page fault;
// what a benchmark harness that starts a process per measurement sees, as
// do CLIs, serverless functions and tests. In the steady phase, after the
// collector has cycled, allocations reuse memory already mapped, and cost
// what -benchmem's figures suggest. Cold and Steady measure each phase,
// with the bytes and allocations per invoke that explain the difference.

// Figures are what a phase of n invokes cost.
type Figures struct {
	Invokes int
	// Wall and CPU are the phase's elapsed and process CPU time (user and
	// system: page faults are system time).
	Wall, CPU time.Duration
	// Bytes and Allocs are the heap bytes and objects allocated (from
	// runtime.MemStats' TotalAlloc and Mallocs).
	Bytes, Allocs uint64
	// GCs is the number of garbage collections that ended in the phase;
	// Faults the minor page faults the process took (fresh memory).
	GCs    uint32
	Faults int64
}

// BytesPerInvoke returns the heap bytes allocated per invoke.
func (f Figures) BytesPerInvoke() float64 { return float64(f.Bytes) / float64(f.Invokes) }

// AllocsPerInvoke returns the heap objects allocated per invoke.
func (f Figures) AllocsPerInvoke() float64 { return float64(f.Allocs) / float64(f.Invokes) }

// Per returns wall and CPU time per unit, in microseconds, for units units
// in every invoke (nodes, steps, Sends, or 1).
func (f Figures) Per(units int) (wallUS, cpuUS float64) {
	n := float64(f.Invokes * units)
	return float64(f.Wall.Nanoseconds()) / 1e3 / n, float64(f.CPU.Nanoseconds()) / 1e3 / n
}

// Measure runs invoke n times and returns what it cost.
func Measure(n int, invoke func() error) (Figures, error) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0, faults0 := processUsage()
	t0 := time.Now()
	for range n {
		if err := invoke(); err != nil {
			return Figures{}, err
		}
	}
	wall := time.Since(t0)
	cpu1, faults1 := processUsage()
	runtime.ReadMemStats(&m1)
	return Figures{
		Invokes: n, Wall: wall, CPU: cpu1 - cpu0,
		Bytes: m1.TotalAlloc - m0.TotalAlloc, Allocs: m1.Mallocs - m0.Mallocs,
		GCs: m1.NumGC - m0.NumGC, Faults: faults1 - faults0,
	}, nil
}

// Settle runs invoke until the process is in its steady phase: at least
// minInvokes invokes, then until the garbage collector has completed two
// cycles since Settle began (so that the memory the cold phase touched is
// being recycled) or budget has passed, whichever comes first (a workload
// that allocates next to nothing never needs a collection).
func Settle(minInvokes int, budget time.Duration, invoke func() error) error {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	gc0, t0 := m.NumGC, time.Now()
	for i := 0; ; i++ {
		if err := invoke(); err != nil {
			return err
		}
		if i >= minInvokes {
			runtime.ReadMemStats(&m)
			if m.NumGC-gc0 >= 2 || time.Since(t0) > budget {
				return nil
			}
		}
	}
}

// SettleBudget bounds the time Run spends reaching the steady phase.
const SettleBudget = 2 * time.Second

// Protocol is how many invokes of a workload the peer harness measures
// in a fresh process (bench/peers/RESULTS.md §2), and how many units of
// the workload's metric one invoke is.
type Protocol struct {
	Name          string
	Warm, Measure int
	Metric        string // per_node, per_superstep, per_invoke, per_send
	Units         int    // units of Metric in one invoke
	// PerInvoke reports that the harness also reads the time of a whole
	// invoke (per_invoke), besides Metric.
	PerInvoke bool
	// Invoke returns the function running one invoke of a graph built
	// for the process.
	Invoke func(ctx context.Context) (func() error, error)
}

// Protocols are W1–W4 as the peer harness runs them (W5, which
// checkpoints, is measured by BenchmarkW5Savers).
var Protocols = []Protocol{
	{Name: "W1", Warm: 200, Measure: 2000, Metric: "per_node", Units: W1Nodes, PerInvoke: true, Invoke: func(ctx context.Context) (func() error, error) {
		g, err := W1()
		return func() error { return RunW1(ctx, g) }, err
	}},
	{Name: "W2", Warm: 1, Measure: 1, Metric: "per_superstep", Units: W2Steps, Invoke: func(ctx context.Context) (func() error, error) {
		g, err := W2()
		return func() error { return RunW2(ctx, g) }, err
	}},
	{Name: "W3", Warm: 50, Measure: 500, Metric: "per_invoke", Units: 1, Invoke: func(ctx context.Context) (func() error, error) {
		g, err := W3()
		return func() error { return RunW3(ctx, g) }, err
	}},
	{Name: "W4", Warm: 2, Measure: 20, Metric: "per_send", Units: W4Sends, PerInvoke: true, Invoke: func(ctx context.Context) (func() error, error) {
		g, err := W4()
		return func() error { return RunW4(ctx, g) }, err
	}},
}

// ProtocolOf returns the protocol of workload name.
func ProtocolOf(name string) (Protocol, error) {
	for _, p := range Protocols {
		if p.Name == name {
			return p, nil
		}
	}
	return Protocol{}, fmt.Errorf("workload: no workload %q", name)
}

// Phases are a protocol's figures in one fresh process: Cold, the
// harness's measured invokes right after its warm-up ones, and Steady, as
// many invokes measured once the process settled (see Settle).
type Phases struct {
	Cold, Steady Figures
}

// Run measures p's cold and steady phases; it must be called in a fresh
// process for Cold to be cold.
func (p Protocol) Run(ctx context.Context) (Phases, error) {
	invoke, err := p.Invoke(ctx)
	if err != nil {
		return Phases{}, err
	}
	for range p.Warm {
		if err := invoke(); err != nil {
			return Phases{}, err
		}
	}
	var ph Phases
	if ph.Cold, err = Measure(p.Measure, invoke); err != nil {
		return ph, err
	}
	if err := Settle(p.Warm, SettleBudget, invoke); err != nil {
		return ph, err
	}
	ph.Steady, err = Measure(p.Measure, invoke)
	return ph, err
}
