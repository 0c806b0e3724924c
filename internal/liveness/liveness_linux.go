package liveness

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

func selfProc() (Proc, bool) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return Proc{}, false
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return Proc{}, false
	}
	pid := os.Getpid()
	start, state, ok := stat(pid)
	if !ok || state == 'Z' {
		return Proc{}, false
	}
	return Proc{Host: strings.TrimSpace(string(boot)) + " " + ns, PID: pid, Start: start}, true
}

// alive reports whether the process pid runs and started at start.
func alive(pid int, start int64) bool {
	got, state, ok := stat(pid)
	if !ok {
		// No such process, or /proc cannot tell: only a missing entry
		// means dead.
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		return err == nil || !os.IsNotExist(err)
	}
	return got == start && state != 'Z' && state != 'X'
}

// stat reads the start time (field 22) and state (field 3) of process pid
// from /proc/pid/stat.
func stat(pid int) (start int64, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses: the fields after it follow its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, false
	}
	start, err = strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return start, f[0][0], true
}
