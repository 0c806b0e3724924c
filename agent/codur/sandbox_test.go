//go:build linux

package codur_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// requireSandbox skips the test where bubblewrap does not work.
func requireSandbox(t *testing.T) {
	t.Helper()
	if info := tools.SandboxStatus(); !info.Available {
		t.Skipf("bubblewrap sandbox not available: %s", info.Reason)
	}
}

func TestVerifiedProgramCannotReachTheWorkspaceOrAnythingOutsideItsCopy(t *testing.T) {
	requireSandbox(t)
	outside := t.TempDir()
	dir, _ := workspace(t, map[string]string{"expected.txt": "read no\n"})
	// The program tries to read the real expected output by its absolute
	// path, and to write into the user's workspace and another directory.
	prog := "def attempt(f):\n    try:\n        f()\n        return 'yes'\n    except OSError:\n        return 'no'\n" +
		"print('read', attempt(lambda: open(" + pyQuote(filepath.Join(dir, "expected.txt")) + ").read()))\n" +
		"attempt(lambda: open(" + pyQuote(filepath.Join(dir, "planted.txt")) + ", 'w').write('x'))\n" +
		"attempt(lambda: open(" + pyQuote(filepath.Join(outside, "planted.txt")) + ", 'w').write('x'))\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.py"), []byte(prog), 0o644))
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	v.RunOptions = []tools.Option{tools.WithSandbox(tools.SandboxRequired)}
	res, err := v.Run(t.Context())
	require.NoError(t, err)
	require.True(t, res.Passed, "output %q, stderr %q", res.Actual, res.Stderr)
	require.NoFileExists(t, filepath.Join(dir, "planted.txt"))
	require.NoFileExists(t, filepath.Join(outside, "planted.txt"))
}

func TestVerifiedGoProgramBuildsInTheSandbox(t *testing.T) {
	requireSandbox(t)
	dir, _ := workspace(t, map[string]string{
		"main.go":      "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(6 * 7) }\n",
		"expected.txt": "42\n",
	})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	v.RunOptions = []tools.Option{tools.WithSandbox(tools.SandboxRequired)}
	res, err := v.Run(t.Context())
	require.NoError(t, err)
	require.True(t, res.Passed, "output %q, stderr %q", res.Actual, res.Stderr)
}

func TestCLIAgentWritesOnlyInsideTheWorkspace(t *testing.T) {
	requireSandbox(t)
	outside := t.TempDir()
	dir, _ := workspace(t, nil)
	// The stand-in CLI lives outside the workspace, as real ones do.
	a := &codur.CLIAgent{
		Command:    standIn(t, `echo fixed > result.txt; echo leaked > "$CODUR_OUTSIDE/leak.txt" 2>/dev/null; echo "done in $(pwd)"`),
		Env:        []string{"CODUR_OUTSIDE=" + outside},
		RunOptions: []tools.Option{tools.WithSandbox(tools.SandboxRequired)},
	}
	reply, err := a.Run(t.Context(), codur.Request{Messages: []state.Message{state.Human("task")}, Dir: dir})
	require.NoError(t, err)
	require.Equal(t, "done in "+dir, reply.Message.Text())
	require.FileExists(t, filepath.Join(dir, "result.txt"))
	require.NoFileExists(t, filepath.Join(outside, "leak.txt"))
}

func TestConfigSandboxReachesTheCLIAgents(t *testing.T) {
	_, err := codur.ParseConfig([]byte("sandbox: sometimes\n"))
	require.ErrorContains(t, err, `sandbox "sometimes"`)

	requireSandbox(t)
	cfg, err := codur.ParseConfig([]byte(`sandbox: required
agents:
  local:
    command: sh
    args: [-c, 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "; echo {prompt} >/dev/null']
    network: false
`))
	require.NoError(t, err)
	reg, err := cfg.Registry(t.Context(), nil)
	require.NoError(t, err)
	agent, ok := reg.Get("agent:local")
	require.True(t, ok)
	dir, _ := workspace(t, nil)
	reply, err := agent.Run(t.Context(), codur.Request{Messages: []state.Message{state.Human("task")}, Dir: dir})
	require.NoError(t, err)
	require.Equal(t, "lo", reply.Message.Text(), "only the loopback interface without the network")
}

// pyQuote returns s as a Python string literal.
func pyQuote(s string) string {
	return "r'" + s + "'"
}
