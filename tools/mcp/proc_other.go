//go:build !unix

package mcp

import (
	"errors"
	"os/exec"
)

// setProcessGroup does nothing: process groups are a Unix notion.
func setProcessGroup(*exec.Cmd) {}

// terminateGroup cannot send SIGTERM here; the caller kills the process.
func terminateGroup(*exec.Cmd) error { return errors.New("no SIGTERM on this platform") }

// killGroup kills the server process.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
