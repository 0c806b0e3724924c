//go:build linux

// Package processtest holds test helpers that find the processes a
// command started, by a marker in their command line, and check that none
// survived it.
package processtest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// NewMarker returns a unique sleep duration, by which the processes
// sleeping it are found in /proc whatever pid namespace they run in.
func NewMarker() string {
	return fmt.Sprintf("%d.%06d", 5000+rand.IntN(1000), rand.IntN(1_000_000))
}

// MarkedProcesses returns the live (not zombie) processes whose command
// line contains marker.
func MarkedProcesses(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'Z' {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// RequireNoneLeft polls (the kill is asynchronous) until no process
// carries marker, and fails if some survive the bounded wait.
func RequireNoneLeft(t testing.TB, marker string) {
	t.Helper()
	for range 2000 {
		if len(MarkedProcesses(marker)) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	pids := MarkedProcesses(marker)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	t.Fatalf("processes %v (sleep %s) survived the command", pids, marker)
}

// BackgroundScript returns a script that starts, through launch, a
// background process that touches the file started and sleeps for marker
// seconds, and waits until the file exists.
func BackgroundScript(launch, marker string) string {
	return fmt.Sprintf(`%s sh -c 'touch started; exec sleep %s' &
while [ ! -e started ]; do sleep 0.01; done
echo up`, launch, marker)
}
