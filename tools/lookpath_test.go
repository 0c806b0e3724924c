package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A program planted in the project is never found, whichever way PATH
// leads into the project.
func TestLookPathOutsideSkipsTheProjectsPrograms(t *testing.T) {
	project, system := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(project, "bin"), system} {
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "go"), []byte("#!/bin/sh\n"), 0o755))
	}
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(filepath.Join(project, "bin"), link))
	outsideLink := filepath.Join(t.TempDir(), "go")
	require.NoError(t, os.Symlink(filepath.Join(project, "bin", "go"), outsideLink))
	list := func(entries ...string) string { return strings.Join(entries, string(os.PathListSeparator)) }
	tests := []struct {
		name, path, program, want string
	}{
		{"entry inside the project", list(filepath.Join(project, "bin"), system), "go", filepath.Join(system, "go")},
		{"relative entry", list("bin", system), "go", filepath.Join(system, "go")},
		{"empty entry", list("", system), "go", filepath.Join(system, "go")},
		{"entry linking into the project", list(link, system), "go", filepath.Join(system, "go")},
		{"program linking into the project", list(filepath.Dir(outsideLink), system), "go", filepath.Join(system, "go")},
		{"absolute name outside", "", filepath.Join(system, "go"), filepath.Join(system, "go")},
		{"only the project's", list(filepath.Join(project, "bin")), "go", ""},
		{"absolute name inside", system, filepath.Join(project, "bin", "go"), ""},
		{"relative name", list(project), "bin/go", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LookPathOutside(tc.path, project, tc.program)
			if tc.want == "" {
				require.ErrorIs(t, err, exec.ErrNotFound)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestPathListOutsideDropsTheProjectsEntries(t *testing.T) {
	project := t.TempDir()
	list := strings.Join([]string{filepath.Join(project, "bin"), "/usr/bin", "rel", "", project, "/bin"}, string(os.PathListSeparator))
	require.Equal(t, "/usr/bin"+string(os.PathListSeparator)+"/bin", PathListOutside(list, project))
}

// run_tests never runs a go planted in the workspace, even when PATH
// finds it first.
func TestRunTestsDoesNotRunARunnerPlantedInTheWorkspace(t *testing.T) {
	requireGo(t)
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"go.mod": goModule, "m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestBad(t *testing.T) { t.Fatal(\"boom\") }\n"})
	bin := filepath.Join(ws.Root(), "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte("#!/bin/sh\necho PLANTED\nexit 0\n"), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	report, err := RunTests(t.Context(), ws, FrameworkGo, WithSandbox(SandboxOff))
	require.NoError(t, err)
	require.NotContains(t, report.Output, "PLANTED")
	require.Equal(t, 1, report.Failed, report.Output)
}

// The go asked for this machine's toolchain (go env, on the host, out of
// the sandbox) is never one planted in the workspace, even when PATH finds
// it first: a sandboxed command of that workspace runs, and the planted
// program does not.
func TestASandboxedCommandNeverRunsAGoPlantedInTheWorkspaceOnTheHost(t *testing.T) {
	requireGo(t)
	ws := newTestWorkspace(t)
	bin := filepath.Join(ws.Root(), "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	ran := filepath.Join(t.TempDir(), "ran")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte("#!/bin/sh\ntouch "+ran+"\necho '{}'\n"), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	res, err := RunCommand(t.Context(), ws, Command{Args: []string{"true"}}, WithSandbox(SandboxOff), WithGoCaches())
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.NoFileExists(t, ran, "the planted go ran on the host")
}
