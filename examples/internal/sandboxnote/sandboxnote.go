// Package sandboxnote words what the example programs say at start-up
// about the sandbox their agents' commands run in, so that a fallback to
// no sandbox is never silent.
package sandboxnote

import (
	"fmt"

	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/tools"
)

// Fallback reports whether commands run with mode on a machine whose
// sandbox is info run unconfined: mode auto where no sandbox works.
func Fallback(info tools.SandboxInfo, mode tools.SandboxMode) bool {
	return mode == tools.SandboxAuto && !info.Available
}

// Lines returns the start-up lines about the sandbox: with mode off, that
// there is none; else info's sentence and the mode, then a WARNING line
// when mode falls back to no sandbox, or an error line when mode requires
// a sandbox that is not there. Each line ends in a newline.
func Lines(info tools.SandboxInfo, mode tools.SandboxMode) string {
	if mode == tools.SandboxOff {
		return "no sandbox (--sandbox off): the agent's commands, tests and programs run unconfined, with this process's " +
			"rights, files and network\n"
	}
	s := fmt.Sprintf("%s (--sandbox %s)\n", info, mode)
	switch {
	case Fallback(info, mode):
		s += fmt.Sprintf("WARNING: commands are NOT sandboxed (--sandbox auto, and %s): the agent's commands and tests run with "+
			"this process's rights, files, environment and network. Install bubblewrap, or pass --sandbox required to refuse "+
			"commands instead.\n", info.Reason)
	case mode == tools.SandboxRequired && !info.Available:
		s += fmt.Sprintf("sandbox required but unavailable (%s): every command and test run will be refused.\n", info.Reason)
	}
	return s
}

// Warning returns the event that warns of the fallback, and true, when
// mode falls back to no sandbox on a machine whose sandbox is info.
func Warning(info tools.SandboxInfo, mode tools.SandboxMode) (events.SandboxWarning, bool) {
	if !Fallback(info, mode) {
		return events.SandboxWarning{}, false
	}
	return events.SandboxWarning{Mode: mode.String(), Reason: info.Reason}, true
}
