//go:build unix

package process

import (
	"os/exec"
	"syscall"
)

// setProcessGroup makes cmd the leader of a new process group.
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// killGroup kills the process group led by pid, if it still exists.
func killGroup(pid int) {
	if pid > 0 {
		// A negative pid addresses the process group.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
