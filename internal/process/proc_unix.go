//go:build unix

package process

import (
	"os/exec"
	"syscall"
)

// setProcessGroup makes cmd the leader of a new process group and makes
// cancellation kill the whole group, so that children started by the
// command (pipelines, background jobs, test binaries) die with it.
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
