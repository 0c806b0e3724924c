//go:build unix

package goals

import (
	"os/exec"
	"syscall"
)

// setProcessGroup makes cmd the leader of a new process group and makes
// cancellation kill the whole group, so that the children a command starts
// (make recipes, pipelines, test binaries) die with it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		// A negative pid addresses the process group.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
