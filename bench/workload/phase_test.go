package workload_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/bench/workload"
)

// phasesEnv names the workload a child process of BenchmarkPhases
// measures (see TestPhasesChild).
const phasesEnv = "AGENTGRAPH_BENCH_PHASES"

// TestPhasesChild is the child process of BenchmarkPhases: it measures one
// workload's cold and steady phases in the fresh process it is, and
// prints them as JSON. It is skipped unless phasesEnv names a workload.
func TestPhasesChild(t *testing.T) {
	name := os.Getenv(phasesEnv)
	if name == "" {
		t.Skip("the child process of BenchmarkPhases")
	}
	p, err := workload.ProtocolOf(name)
	require.NoError(t, err)
	ph, err := p.Run(ctx)
	require.NoError(t, err)
	require.NoError(t, json.NewEncoder(os.Stdout).Encode(ph))
}

// BenchmarkPhases measures W1–W4 as the peer harness does, each in a fresh
// process (this test binary, run again): the cold phase, the harness's
// measured invokes after its warm-up ones, before the garbage collector
// has recycled anything, and the steady phase, once it has (see
// workload.Protocol.Run). It reports µs per unit and bytes and
// allocations per invoke of both, and the page faults of the cold phase:
//
//	go test -run X -bench Phases ./bench/workload/
func BenchmarkPhases(b *testing.B) {
	for _, p := range workload.Protocols {
		b.Run(p.Name, func(b *testing.B) {
			var sum workload.Phases
			n := 0
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^TestPhasesChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), phasesEnv+"="+p.Name)
				out, err := cmd.Output()
				require.NoError(b, err, "%s", out)
				var ph workload.Phases
				require.NoError(b, json.Unmarshal(firstLine(out), &ph), "%s", out)
				add(&sum.Cold, ph.Cold)
				add(&sum.Steady, ph.Steady)
				n++
			}
			cold, _ := sum.Cold.Per(p.Units)
			steady, _ := sum.Steady.Per(p.Units)
			unit := "us/" + p.Metric[len("per_"):]
			b.ReportMetric(cold, "cold-"+unit)
			b.ReportMetric(steady, "steady-"+unit)
			b.ReportMetric(sum.Cold.BytesPerInvoke(), "cold-B/invoke")
			b.ReportMetric(sum.Steady.BytesPerInvoke(), "steady-B/invoke")
			b.ReportMetric(sum.Cold.AllocsPerInvoke(), "allocs/invoke")
			b.ReportMetric(float64(sum.Cold.Faults)/float64(n), "cold-faults/process")
			b.ReportMetric(0, "ns/op") // a process's time is not the point
		})
	}
}

// add adds f's figures to sum.
func add(sum *workload.Figures, f workload.Figures) {
	sum.Invokes += f.Invokes
	sum.Wall += f.Wall
	sum.CPU += f.CPU
	sum.Bytes += f.Bytes
	sum.Allocs += f.Allocs
	sum.GCs += f.GCs
	sum.Faults += f.Faults
}

// firstLine returns the JSON line a child printed, before go test's own
// output.
func firstLine(out []byte) []byte {
	for i, c := range out {
		if c == '\n' {
			return out[:i]
		}
	}
	return out
}
