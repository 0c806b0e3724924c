//go:build linux

package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// printEnvironment prints the command's environment and that of every
// process it can see, this test's included where it is visible.
const printEnvironment = `env; for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f" 2>/dev/null; done; echo printed`

// environTest is a Go test that prints os.Environ() and every
// /proc/*/environ it can read, then fails, so that all of it is in the
// report.
const environTest = `package m

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLeak(t *testing.T) {
	t.Log(strings.Join(os.Environ(), "\n"))
	files, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		t.Log(strings.ReplaceAll(string(b), "\x00", "\n"))
	}
	t.Fatal("printed")
}
`

func TestNoSecretOfThisProcessReachesAToolResult(t *testing.T) {
	for _, kv := range realisticSecrets {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	// Setenv does not change /proc/self/environ: a process started with
	// this environment shows it there, as an agent's own process would
	// to an unsandboxed command.
	holder := exec.Command("sleep", "600")
	holder.Env = os.Environ()
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	for _, mode := range bashModes(t) {
		t.Run(mode.name, func(t *testing.T) {
			t.Run("bash_exec", func(t *testing.T) {
				ws := newTestWorkspace(t)
				out, err := call(t, BashExec(ws, append(mode.opts, WithOutputLimit(1<<20))...), BashArgs{Command: printEnvironment})
				require.NoError(t, err)
				require.Contains(t, out, "printed")
				requireNoSecret(t, out)
			})
			t.Run("RunCommand", func(t *testing.T) {
				ws := newTestWorkspace(t)
				var out bytes.Buffer
				res, err := RunCommand(context.Background(), ws, Command{Args: []string{"bash", "-c", printEnvironment}, Stdout: &out, Stderr: &out}, mode.opts...)
				require.NoError(t, err)
				require.Equal(t, 0, res.ExitCode, out.String())
				require.Contains(t, out.String(), "printed")
				requireNoSecret(t, out.String())
			})
			t.Run("run_tests", func(t *testing.T) {
				requireGo(t)
				ws := newTestWorkspace(t)
				writeFiles(t, ws.Root(), map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n", "m_test.go": environTest})
				out, err := call(t, RunTestsTool(ws, append(mode.opts, WithOutputLimit(1<<20), WithTestTimeout(5*time.Minute))...), RunTestsArgs{})
				require.NoError(t, err)
				var report TestReport
				require.NoError(t, json.Unmarshal([]byte(out), &report))
				require.Equal(t, 1, report.Failed, out)
				require.Contains(t, report.Output, "printed")
				requireNoSecret(t, out)
			})
		})
	}
}

// A value the command is given on purpose (Command.Env), even one of this
// process's environment under another name, is not hidden from its
// output; the rest still is.
func TestAValueGivenToTheCommandIsNotRedacted(t *testing.T) {
	t.Setenv("AGENTGRAPH_TEST_GIVEN", "given-on-purpose")
	t.Setenv("AGENTGRAPH_TEST_SECRET", "sk_live_not-for-the-model")
	ws := newTestWorkspace(t)
	var out bytes.Buffer
	_, err := RunCommand(context.Background(), ws, Command{
		Args:   []string{"bash", "-c", `echo "$PASSED $AGENTGRAPH_TEST_SECRET_COPY"`},
		Env:    []string{"PASSED=" + os.Getenv("AGENTGRAPH_TEST_GIVEN"), "AGENTGRAPH_TEST_SECRET_COPY=sk_live_not-for-the-model"},
		Stdout: &out,
	}, WithSandbox(SandboxOff))
	require.NoError(t, err)
	require.Equal(t, "given-on-purpose sk_live_not-for-the-model\n", out.String())

	out.Reset()
	_, err = RunCommand(context.Background(), ws, Command{
		Args:   []string{"bash", "-c", `echo "$PASSED"; echo sk_live_not-for-the-model`},
		Env:    []string{"PASSED=given-on-purpose"},
		Stdout: &out,
	}, WithSandbox(SandboxOff))
	require.NoError(t, err)
	require.Equal(t, "given-on-purpose\n"+Redacted+"\n", out.String())
}
