//go:build !linux

package process

import "os/exec"

// tree is the process tree of one command: its process group where there
// are process groups.
type tree struct{}

// newTree prepares the tree of a command.
func newTree(useCgroup bool) *tree { return &tree{} }

// env returns the variables the command's environment needs.
func (t *tree) env() []string { return nil }

// start starts the command build returns in its own process group.
func (t *tree) start(build func() *exec.Cmd) (*exec.Cmd, error) {
	cmd := build()
	setProcessGroup(cmd)
	return cmd, cmd.Start()
}

// wait waits for the started cmd to exit and kills what it left behind.
func (t *tree) wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	t.kill(cmd.Process.Pid)
	return err
}

// kill kills the process group of the command whose first process is pid.
func (t *tree) kill(pid int) { killGroup(pid) }

// release is a no-op.
func (t *tree) release() {}

// Containment describes how Run finds and kills a command's descendants
// on this machine.
func Containment() string {
	return "process group only: descendants that leave it (setsid) survive"
}
