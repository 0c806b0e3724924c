package process

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// markerVar is the environment variable that marks a command's
// descendants when no cgroup holds them.
const markerVar = "AGENTGRAPH_PROCESS_TREE"

// cgroupDisabled turns the cgroup off after it failed.
var cgroupDisabled atomic.Bool

// tree is the process tree of one command: its process group, plus its
// cgroup or its environment marker.
type tree struct {
	cgroup   string // the command's cgroup directory, "" if none
	cgroupFD int    // open directory of cgroup, -1 if none
	marker   string // "markerVar=token" if there is no cgroup
}

// newTree prepares the tree of a command, in a new cgroup if useCgroup is
// set and cgroups are available.
func newTree(useCgroup bool) *tree {
	t := &tree{cgroupFD: -1}
	if parent := cgroupParent(); parent != "" && useCgroup && !cgroupDisabled.Load() {
		dir, err := os.MkdirTemp(parent, "agentgraph-")
		switch {
		case err == nil:
			fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
			if err == nil {
				t.cgroup, t.cgroupFD = dir, fd
				return t
			}
			_ = os.Remove(dir)
		case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
			cgroupDisabled.Store(true)
		}
	}
	t.marker = newMarker()
	return t
}

// env returns the variables the command's environment needs.
func (t *tree) env() []string {
	if t.marker == "" {
		return nil
	}
	return []string{t.marker}
}

// start starts the command build returns in its own process group and,
// if there is one, in the tree's cgroup. If starting in the cgroup fails,
// it falls back to the environment marker.
func (t *tree) start(build func() *exec.Cmd) (*exec.Cmd, error) {
	cmd := build()
	setProcessGroup(cmd)
	if t.cgroupFD < 0 {
		return cmd, cmd.Start()
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = t.cgroupFD
	err := cmd.Start()
	if err == nil {
		return cmd, nil
	}
	// Perhaps the kernel cannot start a process in a cgroup (clone3 is
	// missing or refused): retry without it.
	t.release()
	t.marker = newMarker()
	cmd = build()
	setProcessGroup(cmd)
	if retryErr := cmd.Start(); retryErr != nil {
		return cmd, retryErr
	}
	cgroupDisabled.Store(true)
	return cmd, nil
}

// wait waits for the started cmd to exit, kills what it left behind and
// reaps it. The tree is killed before cmd is reaped, so that its process
// group id cannot have been reused.
func (t *tree) wait(cmd *exec.Cmd) error {
	pid := cmd.Process.Pid
	awaitExit(pid)
	t.kill(pid)
	err := cmd.Wait()
	t.kill(pid)
	return err
}

// awaitExit blocks until the process pid has exited, without reaping it.
func awaitExit(pid int) {
	const (
		pPID    = 1          // P_PID
		wNowait = 0x01000000 // WNOWAIT
	)
	var info [16]uint64 // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|wNowait, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}

// kill kills every process of the tree of the command whose first process
// is pid.
func (t *tree) kill(pid int) {
	if t.cgroup != "" {
		killCgroup(t.cgroup)
	}
	killGroup(pid)
	if t.marker != "" {
		killMarked(t.marker)
	}
}

// release removes the tree's cgroup once its processes are gone.
func (t *tree) release() {
	if t.cgroupFD >= 0 {
		_ = syscall.Close(t.cgroupFD)
		t.cgroupFD = -1
	}
	if t.cgroup == "" {
		return
	}
	// The kernel delivers the kill asynchronously; the cgroup can be
	// removed once the last process has exited.
	for range 500 {
		err := os.Remove(t.cgroup)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			break
		}
		killCgroup(t.cgroup)
		time.Sleep(2 * time.Millisecond)
	}
	t.cgroup = ""
}

// killCgroup kills every process in the cgroup dir.
func killCgroup(dir string) {
	if f, err := os.OpenFile(filepath.Join(dir, "cgroup.kill"), os.O_WRONLY, 0); err == nil {
		_, werr := f.Write([]byte("1"))
		_ = f.Close()
		if werr == nil {
			return
		}
	}
	// Before Linux 5.14 there is no cgroup.kill: kill the members one by
	// one until none is left.
	for range 100 {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			return
		}
		for _, field := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(field); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// killMarked kills every process whose environment holds marker. It scans
// again while it finds some, to catch children forked during the scan.
func killMarked(marker string) {
	self := os.Getpid()
	for range 20 {
		found := false
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self || !hasEnv(pid, marker) {
				continue
			}
			// Pin the process (a pidfd on current kernels) and check
			// again, so that a recycled pid is never killed.
			p, err := os.FindProcess(pid)
			if err != nil {
				continue
			}
			if hasEnv(pid, marker) {
				_ = p.Signal(syscall.SIGKILL)
				found = true
			}
			_ = p.Release()
		}
		if !found {
			return
		}
	}
}

// hasEnv reports whether the environment of process pid holds the
// variable entry ("NAME=value").
func hasEnv(pid int, entry string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for v := range bytes.SplitSeq(data, []byte{0}) {
		if string(v) == entry {
			return true
		}
	}
	return false
}

// newMarker returns a fresh "markerVar=token" environment entry.
func newMarker() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return markerVar + "=" + hex.EncodeToString(b[:])
}

// cgroupParent returns the cgroup v2 directory of this process, under
// which commands get their cgroups, or "" if there is none.
var cgroupParent = sync.OnceValue(func() string {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	var own string
	found := false
	for line := range strings.SplitSeq(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own, found = p, true
			break
		}
	}
	if !found {
		return ""
	}
	mount, root := cgroup2Mount()
	if mount == "" {
		return ""
	}
	if root != "/" {
		rel, ok := strings.CutPrefix(own, root)
		if !ok {
			return ""
		}
		own = rel
	}
	dir := filepath.Join(mount, own)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return dir
})

// cgroup2Mount returns the mount point of the cgroup v2 hierarchy and the
// cgroup mounted there, from /proc/self/mountinfo.
func cgroup2Mount() (mount, root string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mount-point options [optional...] - type source super-options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) < 5 {
			continue
		}
		return unescapeMountinfo(fields[4]), unescapeMountinfo(fields[3])
	}
	return "", ""
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of
// /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// containment probes once whether commands get their own cgroup.
var containment = sync.OnceValue(func() string {
	parent := cgroupParent()
	if parent != "" {
		if dir, err := os.MkdirTemp(parent, "agentgraph-probe-"); err == nil {
			_ = os.Remove(dir)
			return "process group and cgroup v2 (" + parent + "): every descendant is killed"
		}
	}
	return "process group and environment marker (no writable cgroup v2)" + markerCaveat
})

// markerCaveat is what the environment marker misses.
const markerCaveat = ": descendants that leave the process group and clear their environment (setsid with env -i) can survive"

// Containment describes how Run finds and kills a command's descendants
// on this machine.
func Containment() string {
	if cgroupDisabled.Load() {
		return "process group and environment marker (cgroup v2 unavailable)" + markerCaveat
	}
	return containment()
}
