//go:build linux

package tools

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// sandboxed runs script with sh -c in the sandbox of ws and returns its
// stdout and stderr.
func sandboxed(t *testing.T, ws *Workspace, script string, opts ...Option) (string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	_, err := RunCommand(context.Background(), ws, Command{Args: []string{"sh", "-c", script}, Stdout: &out, Stderr: &errOut},
		append([]Option{WithSandbox(SandboxRequired)}, opts...)...)
	require.NoError(t, err)
	return out.String(), errOut.String()
}

func TestSandboxKeepsKernelSettingsReadOnly(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	// Writing a setting back with its own value is harmless; that it
	// succeeds would mean kernel.core_pattern (a program the host kernel
	// runs as root on a crash) could be set too.
	out, _ := sandboxed(t, newTestWorkspace(t),
		`v=$(cat /proc/sys/kernel/printk_ratelimit_burst) && echo "$v" > /proc/sys/kernel/printk_ratelimit_burst && echo WROTE sysctl; `+
			`: > /proc/sysrq-trigger && echo WROTE sysrq; true`)
	require.NotContains(t, out, "WROTE")
}

func TestSandboxKeepsTheWorkspacesGitMetadataReadOnly(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	t.Parallel()
	ws := newTestWorkspace(t)
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = ws.Root()
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, string(b))
		return string(b)
	}
	git("init", "-q")
	git("-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "first")
	proof := filepath.Join(t.TempDir(), "ran-on-host")
	// What a model's command would plant for the user's next git status.
	plant := `git config core.fsmonitor "touch ` + proof + `; false"; printf '#!/bin/sh\ntouch ` + proof + `\n' > .git/hooks/pre-commit; ` +
		`git log --format=%s`
	out, _ := sandboxed(t, ws, plant)
	require.Equal(t, "first\n", out, "git still reads the repository")
	git("status")
	require.NoFileExists(t, proof, "host git ran what the sandbox planted")
	require.NotContains(t, git("config", "--list", "--local"), "fsmonitor")

	// A coding CLI that commits is given the writes explicitly.
	out, errOut := sandboxed(t, ws, `git -c user.name=a -c user.email=a@b commit -q --allow-empty -m second && git log -1 --format=%s`,
		WithVCSWrites(true))
	require.Equal(t, "second\n", out, errOut)
}

func TestSandboxDoesNotBindTheTargetOfAGitSymlink(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	secretDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(secretDir, "secret.txt"), []byte("s3cret"), 0o600))
	ws := newTestWorkspace(t)
	require.NoError(t, os.Symlink(secretDir, filepath.Join(ws.Root(), ".git")))
	out, _ := sandboxed(t, ws, `cat .git/secret.txt; true`)
	require.NotContains(t, out, "s3cret")
}

func TestSandboxKeepsTheKernelKeyringsOutOfReach(t *testing.T) {
	requireSandbox(t)
	if seccompFilter() == nil {
		t.Skipf("no seccomp filter for %s", runtime.GOARCH)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH")
	}
	t.Parallel()
	nr := map[string]int{"amd64": syscall.SYS_KEYCTL, "arm64": 219}[runtime.GOARCH]
	// keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0): the errno.
	script := `python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); ` +
		`r = libc.syscall(` + strconv.Itoa(nr) + `, 0, -4, 0); print(r, ctypes.get_errno())'`
	out, errOut := sandboxed(t, newTestWorkspace(t), script)
	require.Equal(t, "-1 "+strconv.Itoa(int(syscall.EPERM))+"\n", out, errOut)
}

func TestSandboxBoundsItsPrivateTmp(t *testing.T) {
	requireSandbox(t)
	if !SandboxStatus().tmpSize {
		t.Skip("this bwrap cannot bound a tmpfs (--size needs bubblewrap 0.8)")
	}
	t.Parallel()
	out, errOut := sandboxed(t, newTestWorkspace(t), `df -k /tmp | tail -1 | awk '{print $2}'`)
	kib, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, out+errOut)
	require.Equal(t, int64(sandboxTmpSize>>10), kib)
}

func TestCommandsGetPasswordsInURLsOnlyWhenNamedExactly(t *testing.T) {
	cfg := newConfig([]Option{WithEnv("KEEP_URL", "DB_*", "MIRROR_URL")})
	env := commandEnv([]string{
		"DB_URL=postgres://app:hunter2@db:5432/x",
		"KEEP_URL=postgres://app:named@db/x",
		"MIRROR_URL=postgres://app@db/x",
		"UNLISTED=plain",
	}, cfg, "/home", true, "/work/ws")
	require.NotContains(t, strings.Join(env, "\n"), "hunter2", "a pattern does not pass a password")
	require.NotContains(t, strings.Join(env, "\n"), "UNLISTED")
	require.Contains(t, env, "KEEP_URL=postgres://app:named@db/x", "named exactly, it passes")
	require.Contains(t, env, "MIRROR_URL=postgres://app@db/x")
}

func TestRunFilesAreReadOnlyAsRegularFilesInTheirDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.json"), []byte(`{"ok":true}`), 0o644))
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero.json")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "passwd.json")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644))

	data, err := readRunFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	require.Equal(t, `{"ok":true}`, string(data))
	for _, name := range []string{"zero.json", "passwd.json", "fifo.json"} {
		_, err := readRunFile(filepath.Join(dir, name))
		require.Error(t, err, name)
	}
}

func TestRunTestsDoesNotShowTheWorkspacesSiblingsThroughARunnerInIt(t *testing.T) {
	requireSandbox(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	// ~/src/project is the workspace; ~/src/other must stay out of sight.
	writeFiles(t, home, map[string]string{"src/other/secret.txt": "s3cret", "src/project/pytest.ini": ""})
	ws, err := NewWorkspace(filepath.Join(home, "src", "project"))
	require.NoError(t, err)
	// An activated virtual environment inside the workspace puts the
	// model's own "pytest" first on PATH.
	bin := filepath.Join(ws.Root(), ".venv", "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "pytest"),
		[]byte("#!/bin/sh\ncat "+filepath.Join(home, "src", "other", "secret.txt")+" 2>&1\nexit 0\n"), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	report, err := RunTests(context.Background(), ws, FrameworkPytest, WithSandbox(SandboxRequired))
	require.NoError(t, err)
	require.NotContains(t, report.Output, "s3cret")
}
