//go:build !unix

package process

import "os/exec"

// setProcessGroup is a no-op where process groups are not available:
// cancellation kills only the direct child.
func setProcessGroup(cmd *exec.Cmd) {}
