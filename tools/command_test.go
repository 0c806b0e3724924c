//go:build linux

package tools

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRunCommandGivesTheProgramItsStdinAndEnv(t *testing.T) {
	t.Parallel()
	for _, mode := range bashModes(t) {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			ws := newTestWorkspace(t)
			var out bytes.Buffer
			res, err := RunCommand(context.Background(), ws, Command{
				Args:   []string{"sh", "-c", `read line; echo "$line $GREETING"; pwd`},
				Env:    []string{"GREETING=world"},
				Stdin:  strings.NewReader("hello\n"),
				Stdout: &out,
			}, mode.opts...)
			require.NoError(t, err)
			require.Equal(t, 0, res.ExitCode)
			require.Equal(t, mode.name == "sandboxed", res.Sandboxed)
			require.Equal(t, "hello world\n"+ws.Root()+"\n", out.String())
		})
	}
}

func TestRunCommandKeepsThisProcesssSecretsFromTheProgram(t *testing.T) {
	t.Setenv("AGENTGRAPH_TEST_API_KEY", "s3cret")
	for _, mode := range bashModes(t) {
		t.Run(mode.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := RunCommand(context.Background(), newTestWorkspace(t), Command{
				Args: []string{"sh", "-c", `echo "key=$AGENTGRAPH_TEST_API_KEY"`}, Stdout: &out,
			}, mode.opts...)
			require.NoError(t, err)
			require.Equal(t, "key=\n", out.String())
		})
	}
}

func TestRunCommandReportsANonZeroExitAsAResult(t *testing.T) {
	t.Parallel()
	for _, mode := range bashModes(t) {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			var errOut bytes.Buffer
			res, err := RunCommand(context.Background(), newTestWorkspace(t), Command{
				Args: []string{"sh", "-c", "echo failing >&2; exit 3"}, Stderr: &errOut,
			}, mode.opts...)
			require.NoError(t, err)
			require.Equal(t, 3, res.ExitCode)
			require.Equal(t, "failing\n", errOut.String())
		})
	}
}

func TestRunCommandKillsAProgramAtItsTimeout(t *testing.T) {
	t.Parallel()
	for _, mode := range bashModes(t) {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			opts := append([]Option{WithTimeout(300 * time.Millisecond)}, mode.opts...)
			res, err := RunCommand(context.Background(), newTestWorkspace(t), Command{Args: []string{"sleep", "30"}}, opts...)
			require.NoError(t, err)
			require.True(t, res.TimedOut)
			require.Equal(t, -1, res.ExitCode)
		})
	}
}

func TestRunCommandReturnsTheContextsErrorWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := RunCommand(ctx, newTestWorkspace(t), Command{Args: []string{"sleep", "30"}})
	require.ErrorIs(t, err, context.Canceled)
}

func TestRunCommandRefusesAnEmptyCommand(t *testing.T) {
	t.Parallel()
	_, err := RunCommand(context.Background(), newTestWorkspace(t), Command{})
	require.ErrorContains(t, err, "no program to run")
}

func TestRunCommandWithSandboxRequiredRunsNothingWhereThereIsNone(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	_, err := RunCommand(context.Background(), ws, Command{Args: []string{"touch", "ran"}},
		WithSandbox(SandboxRequired), withSandboxInfo(SandboxInfo{Reason: "test: no bwrap"}))
	require.ErrorIs(t, err, ErrSandboxUnavailable)
	require.NoFileExists(t, filepath.Join(ws.Root(), "ran"))
}

func TestRunCommandInTheSandboxWritesOnlyInsideTheWorkspace(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	outside := t.TempDir()
	ws := newTestWorkspace(t)
	var errOut bytes.Buffer
	res, err := RunCommand(context.Background(), ws, Command{
		Args:   []string{"sh", "-c", `echo in > inside.txt; echo out > "$1/outside.txt"; ls "$1"`, "sh", outside},
		Stderr: &errOut,
	}, WithSandbox(SandboxRequired))
	require.NoError(t, err)
	require.NotEqual(t, 0, res.ExitCode, "the directory outside the workspace should not exist in the sandbox")
	require.FileExists(t, filepath.Join(ws.Root(), "inside.txt"))
	require.NoFileExists(t, filepath.Join(outside, "outside.txt"))
}

func TestRunCommandInTheSandboxHasNoNetworkUnlessAllowed(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	var out bytes.Buffer
	_, err := RunCommand(context.Background(), newTestWorkspace(t), Command{
		Args: []string{"sh", "-c", "ls /sys/class/net 2>/dev/null || ip -o link 2>/dev/null | cut -d: -f2"}, Stdout: &out,
	}, WithSandbox(SandboxRequired))
	require.NoError(t, err)
	require.Equal(t, []string{"lo"}, strings.Fields(out.String()))
}

func TestRunTestsRunsTheTestsInTheSandbox(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "planted.txt")
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		// A test the model wrote, that reaches out of the workspace.
		"m_test.go": "package m\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\n" +
			"func TestReachesOut(t *testing.T) {\n\t_ = os.WriteFile(" + strconv.Quote(outside) + ", []byte(\"x\"), 0o644)\n" +
			"\tif err := os.WriteFile(\"inside.txt\", []byte(\"x\"), 0o644); err != nil {\n\t\tt.Fatal(err)\n\t}\n}\n",
	})
	report, err := RunTests(context.Background(), ws, "", WithSandbox(SandboxRequired))
	require.NoError(t, err)
	require.Equal(t, 1, report.Passed, report.Output)
	require.FileExists(t, filepath.Join(ws.Root(), "inside.txt"))
	require.NoFileExists(t, outside)
}

func TestRunTestsWithSandboxRequiredRunsNothingWhereThereIsNone(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n"})
	_, err := RunTests(context.Background(), ws, "", WithSandbox(SandboxRequired), withSandboxInfo(SandboxInfo{Reason: "test: no bwrap"}))
	require.ErrorIs(t, err, ErrSandboxUnavailable)
}

func TestRunnerInstallShowsTheRunnersDirectoryBelowHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CARGO_HOME", "")
	t.Setenv("RUSTUP_HOME", filepath.Join(home, "rust"))
	tests := []struct {
		name, exe, framework string
		dirs, env            []string
	}{
		{"system runner", "/usr/bin/pytest", FrameworkPytest, nil, nil},
		{"pyenv", filepath.Join(home, ".pyenv/shims/pytest"), FrameworkPytest, []string{filepath.Join(home, ".pyenv")}, nil},
		{"pip --user, not the rest of ~/.local", filepath.Join(home, ".local/bin/pytest"), FrameworkPytest,
			[]string{filepath.Join(home, ".local/bin"), filepath.Join(home, ".local/lib")}, nil},
		{"rustup's cargo", filepath.Join(home, ".cargo/bin/cargo"), FrameworkCargo,
			[]string{filepath.Join(home, ".cargo"), filepath.Join(home, "rust")},
			[]string{"CARGO_HOME=" + filepath.Join(home, ".cargo"), "RUSTUP_HOME=" + filepath.Join(home, "rust")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dirs, env := runnerInstall(tc.exe, tc.framework)
			require.Equal(t, tc.dirs, dirs)
			require.Equal(t, tc.env, env)
		})
	}
}

func TestParseSandboxModeReadsWhatStringWrites(t *testing.T) {
	for _, m := range []SandboxMode{SandboxAuto, SandboxRequired, SandboxOff} {
		got, err := ParseSandboxMode(strings.ToUpper(m.String()))
		require.NoError(t, err)
		require.Equal(t, m, got)
	}
	got, err := ParseSandboxMode("")
	require.NoError(t, err)
	require.Equal(t, SandboxAuto, got)
	_, err = ParseSandboxMode("sometimes")
	require.EqualError(t, err, `sandbox "sometimes": want auto, required or off`)
}
