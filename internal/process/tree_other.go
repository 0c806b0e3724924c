//go:build !unix

package process

import "os/exec"

// setProcessGroup is a no-op where process groups are not available.
func setProcessGroup(cmd *exec.Cmd) {}

// killGroup is a no-op where process groups are not available: os/exec
// kills the command's first process.
func killGroup(pid int) {}
