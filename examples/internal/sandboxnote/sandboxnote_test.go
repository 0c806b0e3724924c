package sandboxnote

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/tools"
)

func TestLinesWarnLoudlyOfAFallbackToNoSandbox(t *testing.T) {
	missing := tools.SandboxInfo{Reason: "bwrap (package bubblewrap) is not installed", ProcessTree: "process group"}
	working := tools.SandboxInfo{Available: true, Path: "/usr/bin/bwrap"}
	tests := []struct {
		name      string
		info      tools.SandboxInfo
		mode      tools.SandboxMode
		want      string // a line that must be there
		fallback  bool
		mustNotBe string
	}{
		{"auto without a sandbox", missing, tools.SandboxAuto, "WARNING: commands are NOT sandboxed (--sandbox auto, and bwrap (package bubblewrap) is not installed)", true, ""},
		{"required without a sandbox", missing, tools.SandboxRequired, "every command and test run will be refused", false, "WARNING"},
		{"off", missing, tools.SandboxOff, "(--sandbox off)", false, "WARNING"},
		{"auto with a sandbox", working, tools.SandboxAuto, "bash_exec sandbox: bubblewrap (/usr/bin/bwrap)", false, "WARNING"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Lines(tc.info, tc.mode)
			require.Contains(t, got, tc.want)
			if tc.mustNotBe != "" {
				require.NotContains(t, got, tc.mustNotBe)
			}
			ev, ok := Warning(tc.info, tc.mode)
			require.Equal(t, tc.fallback, ok)
			if ok {
				require.Equal(t, events.SandboxWarning{Mode: "auto", Reason: tc.info.Reason}, ev)
			}
		})
	}
}
