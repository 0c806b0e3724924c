package tools

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// limitCgroups are the cgroup v1 directories (pids, memory) holding one
// command.
type limitCgroups struct {
	pids, memory string // "" where there is none
}

// cgroupV1Parents returns this process's own cgroup directories of the
// cgroup v1 pids and memory hierarchies, where they exist and this
// process may make cgroups in them (as root, usually).
var cgroupV1Parents = sync.OnceValues(func() (pids, memory string) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", ""
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, ctrl := range strings.Split(parts[1], ",") {
			if ctrl != "pids" && ctrl != "memory" {
				continue
			}
			dir := filepath.Join("/sys/fs/cgroup", ctrl, parts[2])
			probe := filepath.Join(dir, "agentgraph-probe-"+strconv.Itoa(os.Getpid()))
			if err := os.Mkdir(probe, 0o755); err != nil {
				continue
			}
			_ = os.Remove(probe)
			if ctrl == "pids" {
				pids = dir
			} else {
				memory = dir
			}
		}
	}
	return pids, memory
})

// newLimitCgroups makes the cgroups applying l's process and memory
// limits, where it can. The caller removes them.
func newLimitCgroups(l Limits) *limitCgroups {
	pidsParent, memParent := cgroupV1Parents()
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "agentgraph-" + hex.EncodeToString(b[:])
	c := &limitCgroups{}
	if l.Procs > 0 && pidsParent != "" {
		dir := filepath.Join(pidsParent, name)
		if os.Mkdir(dir, 0o755) == nil {
			if writeCgroup(dir, "pids.max", strconv.Itoa(l.Procs)) == nil {
				c.pids = dir
			} else {
				_ = os.Remove(dir)
			}
		}
	}
	if l.MemoryBytes > 0 && memParent != "" {
		dir := filepath.Join(memParent, name)
		if os.Mkdir(dir, 0o755) == nil {
			limit := strconv.FormatInt(l.MemoryBytes, 10)
			if writeCgroup(dir, "memory.limit_in_bytes", limit) == nil {
				// Swap counts too where the kernel accounts it, or a
				// hog would only be swapped out.
				_ = writeCgroup(dir, "memory.memsw.limit_in_bytes", limit)
				c.memory = dir
			} else {
				_ = os.Remove(dir)
			}
		}
	}
	return c
}

func writeCgroup(dir, file, value string) error {
	return os.WriteFile(filepath.Join(dir, file), []byte(value), 0)
}

// applies says which limits the cgroups apply.
func (c *limitCgroups) applies() (procs, memory bool) { return c.pids != "", c.memory != "" }

// procsFiles returns the cgroup.procs files a command's first process
// joins.
func (c *limitCgroups) procsFiles() []string {
	var files []string
	for _, dir := range []string{c.pids, c.memory} {
		if dir != "" {
			files = append(files, filepath.Join(dir, "cgroup.procs"))
		}
	}
	return files
}

// wrap returns the command that runs name with args after joining the
// cgroups: a shell that writes its own pid to their cgroup.procs and then
// executes the command, so that it and everything it starts are in them
// from the start.
func (c *limitCgroups) wrap(name string, args []string) (string, []string) {
	files := c.procsFiles()
	if len(files) == 0 {
		return name, args
	}
	var b strings.Builder
	for _, f := range files {
		b.WriteString("echo $$ > '" + f + "' || exit 126\n")
	}
	b.WriteString(`exec "$@"`)
	return "/bin/sh", append([]string{"-c", b.String(), "sh", name}, args...)
}

// exceeded says which limits the command reached: the pids limit refused
// a fork, the memory limit made the kernel kill a process.
func (c *limitCgroups) exceeded() (procs, memory bool) {
	if c.pids != "" {
		procs = cgroupCount(filepath.Join(c.pids, "pids.events"), "max") > 0
	}
	if c.memory != "" {
		memory = cgroupCount(filepath.Join(c.memory, "memory.oom_control"), "oom_kill") > 0
	}
	return procs, memory
}

// cgroupCount reads the value of the "key value" line of a cgroup file.
func cgroupCount(file, key string) int64 {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// remove kills what is left in the cgroups and removes them.
func (c *limitCgroups) remove() {
	for _, dir := range []string{c.pids, c.memory} {
		if dir == "" {
			continue
		}
		for range 50 {
			if err := os.Remove(dir); err == nil || !errors.Is(err, syscall.EBUSY) {
				break
			}
			data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			for _, f := range strings.Fields(string(data)) {
				if pid, e := strconv.Atoi(f); e == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// fileSizeKill reports whether a command ended killed by SIGXFSZ, as
// process.Run reports it (the signal), or as a shell or bwrap does (exit
// status 128+SIGXFSZ).
func fileSizeKill(sig syscall.Signal, exit int) bool {
	return sig == syscall.SIGXFSZ || exit == 128+int(syscall.SIGXFSZ)
}
