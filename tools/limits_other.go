//go:build !linux

package tools

import "syscall"

// limitCgroups are not available here: limits are rlimits only.
type limitCgroups struct{}

func newLimitCgroups(Limits) *limitCgroups { return &limitCgroups{} }

func (c *limitCgroups) wrap(name string, args []string) (string, []string) { return name, args }

func (c *limitCgroups) applies() (procs, memory bool) { return false, false }

func (c *limitCgroups) exceeded() (procs, memory bool) { return false, false }

func (c *limitCgroups) remove() {}

func fileSizeKill(sig syscall.Signal, exit int) bool { return false }
