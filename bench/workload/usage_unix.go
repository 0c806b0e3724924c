//go:build unix

package workload

import (
	"syscall"
	"time"
)

// processUsage returns the CPU time and the minor page faults of this
// process so far.
func processUsage() (cpu time.Duration, faults int64) {
	var r syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano()), int64(r.Minflt)
}
