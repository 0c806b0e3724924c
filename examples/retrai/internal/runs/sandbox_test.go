package runs

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/examples/retrai/samples"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/tools"
)

// A run whose commands fall back to no sandbox says so in its events:
// never silently.
func TestARunWithoutASandboxWarnsInItsEvents(t *testing.T) {
	tests := []struct {
		name     string
		info     tools.SandboxInfo
		mode     tools.SandboxMode
		warnings int
	}{
		{"auto without a sandbox", tools.SandboxInfo{Reason: "bwrap (package bubblewrap) is not installed"}, tools.SandboxAuto, 1},
		{"auto with a sandbox", tools.SandboxInfo{Available: true, Path: "/usr/bin/bwrap"}, tools.SandboxAuto, 0},
		{"off", tools.SandboxInfo{Reason: "bwrap (package bubblewrap) is not installed"}, tools.SandboxOff, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sandboxStatus = func() tools.SandboxInfo { return tc.info }
			t.Cleanup(func() { sandboxStatus = tools.SandboxStatus })
			dir := copySample(t, samples.Shell)
			script, err := samples.Script(samples.Shell)
			require.NoError(t, err)
			models := &scriptedModels{models: []llm.Model{llm.NewScripted(script...)}}
			m, err := Open(t.Context(), Options{DB: filepath.Join(t.TempDir(), "runs.db"), Models: models.factory, Sandbox: tc.mode})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, m.Close()) })
			run, err := m.Create(t.Context(), Config{Cwd: dir, Model: "scripted"})
			require.NoError(t, err)
			drain := collect(t, m, run.ID)
			require.NoError(t, m.Start(t.Context(), run.ID))
			evs := drain()
			require.Equal(t, tc.warnings, count(evs, events.KindSandboxWarning), "%v", kinds(evs))
			if tc.warnings > 0 {
				require.Equal(t, events.SandboxWarning{Mode: "auto", Reason: tc.info.Reason}, evs[0].Data)
			}
			_, err = m.Wait(t.Context(), run.ID)
			require.NoError(t, err)
		})
	}
}
