//go:build !unix

package workload

import "time"

// processUsage returns zeros: the process's CPU time and page faults are
// not read here.
func processUsage() (cpu time.Duration, faults int64) { return 0, 0 }
