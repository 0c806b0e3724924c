package tools

import (
	"fmt"
	"os"
	"strconv"
)

// Limits bound the resources of one bash_exec, run_tests or RunCommand
// command, all its processes together where a cgroup holds them. A zero
// field means no limit of that kind.
type Limits struct {
	// Procs bounds the number of processes and threads the command has at
	// once; a fork beyond it fails (EAGAIN). It is a cgroup's pids.max
	// where one can be made (as root: the kernel does not apply
	// RLIMIT_NPROC to root). Where none can, a limit set with WithLimits
	// is applied as RLIMIT_NPROC, which counts every process and thread
	// of the user, the command's or not; DefaultLimits' process bound
	// then does not apply.
	Procs int
	// MemoryBytes bounds the memory the command uses; beyond it the kernel
	// kills one of its processes. It is a cgroup's memory limit (swap
	// included where the kernel counts it) where one can be made. Where
	// none can, a limit set with WithLimits is applied as RLIMIT_AS, the
	// address space of each process, which programs that reserve much
	// more than they use (the race detector, node) may not start under;
	// DefaultLimits' memory bound then does not apply.
	MemoryBytes int64
	// FileBytes bounds the size of any one file the command writes
	// (RLIMIT_FSIZE); a write beyond it kills the process with SIGXFSZ
	// or fails with EFBIG. It does not bound the total written.
	FileBytes int64
}

// DefaultLimits are the limits of a command when WithLimits is not given:
// 2,048 processes and threads, 4 GiB of memory, and files of 4 GiB.
var DefaultLimits = Limits{Procs: 2048, MemoryBytes: 4 << 30, FileBytes: 4 << 30}

// WithLimits sets the resource limits of bash_exec, run_tests and
// RunCommand commands (see Limits; DefaultLimits without it). A command
// that reaches one is reported as such: bash_exec's result and
// RunCommand's CommandResult.LimitHit say which; run_tests adds a failure
// named "limit".
func WithLimits(l Limits) Option {
	return func(c *config) { c.limits, c.limitsSet = l, true }
}

// prlimitPath is the util-linux prlimit program, which sets the rlimits of
// the program it starts, as found in this process's PATH outside the
// workspace root (a system program, visible in every sandbox), or ""
// where it is missing.
func prlimitPath(root string) string {
	p, err := LookPathOutside(os.Getenv("PATH"), root, "prlimit")
	if err != nil {
		return ""
	}
	return p
}

// rlimitArgs returns prlimit's options setting the rlimits of l; procs
// and memory only where no cgroup applies them.
func rlimitArgs(l Limits, explicit, cgroupProcs, cgroupMemory bool) []string {
	var a []string
	if l.Procs > 0 && !cgroupProcs && explicit {
		a = append(a, "--nproc="+strconv.Itoa(l.Procs))
	}
	if l.MemoryBytes > 0 && !cgroupMemory && explicit {
		a = append(a, "--as="+strconv.FormatInt(l.MemoryBytes, 10))
	}
	if l.FileBytes > 0 {
		a = append(a, "--fsize="+strconv.FormatInt(l.FileBytes, 10))
	}
	return a
}

// sizeString writes n bytes in the largest binary unit that divides it.
func sizeString(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
