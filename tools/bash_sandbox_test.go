//go:build linux

package tools

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/internal/process/processtest"
	"github.com/stretchr/testify/require"
)

// bashMode is a way to run bash_exec: unsandboxed, and sandboxed where
// bubblewrap works.
type bashMode struct {
	name string
	opts []Option
}

// bashModes returns the modes to test on this machine. The sandboxed mode
// is left out, with a message, where there is no bubblewrap.
func bashModes(t *testing.T) []bashMode {
	t.Helper()
	modes := []bashMode{{"unsandboxed", []Option{WithSandbox(SandboxOff)}}}
	if info := SandboxStatus(); info.Available {
		modes = append(modes, bashMode{"sandboxed", []Option{WithSandbox(SandboxRequired)}})
	} else {
		t.Logf("sandboxed variant skipped: %s", info.Reason)
	}
	return modes
}

// requireSandbox skips the test where bubblewrap does not work.
func requireSandbox(t *testing.T) {
	t.Helper()
	if info := SandboxStatus(); !info.Available {
		t.Skipf("bubblewrap sandbox not available (install the bubblewrap package): %s", info.Reason)
	}
}

func TestBashKillsEveryProcessItStarted(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not on PATH")
	}
	tests := []struct {
		name     string
		launch   string // prefix that starts the background process
		tail     string // what the command does once it runs
		timeout  time.Duration
		timedOut bool
	}{
		{"background job after normal exit", "", "exit 0", 0, false},
		{"background job holding the output", "", "echo done", 0, false},
		{"setsid after normal exit", "setsid", "exit 0", 0, false},
		{"double-forked setsid after normal exit", "setsid -f", "exit 2", 0, false},
		{"nohup after normal exit", "nohup", "exit 0", 0, false},
		{"background job on timeout", "", "wait", 3 * time.Second, true},
		{"setsid on timeout", "setsid", "sleep 600", 3 * time.Second, true},
	}
	for _, mode := range bashModes(t) {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					ws := newTestWorkspace(t)
					marker := processtest.NewMarker()
					opts := mode.opts
					if tt.timeout > 0 {
						opts = append(opts[:len(opts):len(opts)], WithTimeout(tt.timeout))
					}
					out, err := call(t, BashExec(ws, opts...), BashArgs{Command: processtest.BackgroundScript(tt.launch, marker) + "\n" + tt.tail})
					require.NoError(t, err)
					require.Contains(t, out, "up\n")
					if tt.timedOut {
						require.Contains(t, out, "timed out after")
					} else {
						require.NotContains(t, out, "timed out")
					}
					require.FileExists(t, filepath.Join(ws.Root(), "started"), "the background process never ran")
					processtest.RequireNoneLeft(t, marker)
				})
			}
		})
	}
}

func TestBashContextCancelKillsEveryProcess(t *testing.T) {
	t.Parallel()
	for _, mode := range bashModes(t) {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			ws := newTestWorkspace(t)
			marker := processtest.NewMarker()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := callCtx(ctx, BashExec(ws, mode.opts...), BashArgs{Command: processtest.BackgroundScript("setsid", marker) + "\nsleep 600"})
				done <- err
			}()
			for range 2000 {
				if _, err := os.Stat(filepath.Join(ws.Root(), "started")); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			require.FileExists(t, filepath.Join(ws.Root(), "started"))
			cancel()
			require.ErrorIs(t, <-done, context.Canceled)
			processtest.RequireNoneLeft(t, marker)
		})
	}
}

func TestBashScrubsEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-openai")
	t.Setenv("ANTHROPIC_API_KEY", "sk-test-anthropic")
	t.Setenv("GITHUB_TOKEN", "ghp-test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-test")
	t.Setenv("MYAPP_PASSWORD", "hunter2")
	t.Setenv("MYAPP_MODE", "fast")
	t.Setenv("UNLISTED_VARIABLE", "nope")
	t.Setenv("LC_TESTING", "lc")
	for _, mode := range bashModes(t) {
		t.Run(mode.name, func(t *testing.T) {
			ws := newTestWorkspace(t)
			tests := []struct {
				name    string
				opts    []Option
				present []string
				absent  []string
			}{
				{
					name:    "defaults",
					present: []string{"PATH=", "LC_TESTING=lc", "HOME="},
					absent:  []string{"sk-test", "ghp-test", "aws-test", "hunter2", "MYAPP_MODE", "UNLISTED_VARIABLE"},
				},
				{
					name:    "patterns never pass secrets",
					opts:    []Option{WithEnv("*")},
					present: []string{"MYAPP_MODE=fast", "UNLISTED_VARIABLE=nope"},
					absent:  []string{"sk-test", "ghp-test", "aws-test", "hunter2"},
				},
				{
					name:    "exact names pass secrets",
					opts:    []Option{WithEnv("MYAPP_*", "GITHUB_TOKEN")},
					present: []string{"MYAPP_MODE=fast", "GITHUB_TOKEN=ghp-test"},
					absent:  []string{"sk-test", "aws-test", "hunter2", "UNLISTED_VARIABLE"},
				},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					// Everything the command can see: its environment, and that
					// of every process visible in /proc (in the sandbox, only
					// its own).
					out, err := call(t, BashExec(ws, append(mode.opts, tt.opts...)...),
						BashArgs{Command: `env; for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f" 2>/dev/null; done | grep -E 'sk-test|ghp-test|aws-test|hunter2' | sed 's/^/proc: /'; true`})
					require.NoError(t, err)
					for _, s := range tt.present {
						require.Contains(t, out, s)
					}
					for _, s := range tt.absent {
						if mode.name == "unsandboxed" && strings.Contains(out, "proc: ") {
							// Without the sandbox the command can read this
							// process's environment through /proc: check only
							// its own environment.
							own, _, _ := strings.Cut(out, "proc: ")
							require.NotContains(t, own, s)
							continue
						}
						require.NotContains(t, out, s)
					}
				})
			}
		})
	}
}

func TestBashHomeIsFreshAndRemoved(t *testing.T) {
	t.Parallel()
	for _, mode := range bashModes(t) {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			ws := newTestWorkspace(t)
			tool := BashExec(ws, mode.opts...)
			out, err := call(t, tool, BashArgs{Command: `ls -A "$HOME"; touch "$HOME/mark"; echo "home=$HOME"`})
			require.NoError(t, err)
			_, home, ok := strings.Cut(out, "home=")
			require.True(t, ok, out)
			home = strings.TrimSpace(home)
			require.NotEqual(t, os.Getenv("HOME"), home)
			require.Equal(t, "exit code: 0\n--- stdout ---\nhome="+home+"\n", out, "HOME starts empty")
			if mode.name == "unsandboxed" {
				require.NoDirExists(t, home, "the temporary HOME is removed")
			}
			out, err = call(t, tool, BashArgs{Command: `ls -A "$HOME"`})
			require.NoError(t, err)
			require.Equal(t, "exit code: 0\n(no output)\n", out, "each command gets a new HOME")
		})
	}
}

func TestBashWithHomeKeepsIt(t *testing.T) {
	t.Parallel()
	for _, mode := range bashModes(t) {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			ws := newTestWorkspace(t)
			home := t.TempDir()
			tool := BashExec(ws, append(mode.opts, WithHome(home))...)
			_, err := call(t, tool, BashArgs{Command: `echo cached > "$HOME/cache"`})
			require.NoError(t, err)
			out, err := call(t, tool, BashArgs{Command: `cat "$HOME/cache"`})
			require.NoError(t, err)
			require.Contains(t, out, "cached")
			require.FileExists(t, filepath.Join(home, "cache"))
		})
	}
}

func TestBashSandboxConfinesWrites(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	ws := newTestWorkspace(t)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.txt": "outside secret"})
	tool := BashExec(ws, WithSandbox(SandboxRequired))

	tests := []struct {
		name    string
		command string
		want    string // in the output
	}{
		{"workspace is writable", "echo x > in.txt && cat in.txt", "x"},
		{"tmp is writable", "echo y > /tmp/t && cat /tmp/t", "y"},
		{"outside directory is absent", fmt.Sprintf("echo z > %s/new.txt || echo refused", outside), "refused"},
		{"outside file is unreadable", fmt.Sprintf("cat %s/secret.txt || echo refused", outside), "refused"},
		{"system directories are read-only", "touch /usr/agentgraph-test || echo refused", "refused"},
		{"etc is read-only", "echo x >> /etc/hosts || echo refused", "refused"},
		{"password hashes are hidden", "cat /etc/shadow >/dev/null 2>&1 || echo refused", "refused"},
		{"no capabilities to remount", "mount -o remount,rw /usr 2>/dev/null || echo refused", "refused"},
		{"own pid namespace", "echo pid=$$", "pid="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := call(t, tool, BashArgs{Command: tt.command})
			require.NoError(t, err)
			require.Contains(t, out, tt.want)
		})
	}
	t.Cleanup(func() {
		require.NoFileExists(t, filepath.Join(outside, "new.txt"))
		require.NoFileExists(t, "/usr/agentgraph-test")
	})
}

func TestBashSandboxBlocksNetworkUnlessAllowed(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	command := fmt.Sprintf(`if exec 3<>/dev/tcp/127.0.0.1/%d; then head -n1 <&3; else echo no-connection; fi`, port)
	tests := []struct {
		name string
		opts []Option
		want string
	}{
		{"sandbox default", []Option{WithSandbox(SandboxRequired)}, "no-connection"},
		{"sandbox with network", []Option{WithSandbox(SandboxRequired), WithNetwork(true)}, "hello from the host"},
		{"unsandboxed", []Option{WithSandbox(SandboxOff)}, "hello from the host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := call(t, BashExec(newTestWorkspace(t), tt.opts...), BashArgs{Command: command})
			require.NoError(t, err)
			require.Contains(t, out, tt.want)
		})
	}
}

func TestBashSandboxRequiredRefusesWithoutSandbox(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	none := withSandboxInfo(SandboxInfo{Reason: "test: no bwrap"})
	marker := filepath.Join(ws.Root(), "ran")

	_, err := call(t, BashExec(ws, none, WithSandbox(SandboxRequired)), BashArgs{Command: "touch " + marker})
	require.ErrorIs(t, err, ErrSandboxUnavailable)
	require.ErrorContains(t, err, "test: no bwrap")
	require.NoFileExists(t, marker)

	out, err := call(t, BashExec(ws, none), BashArgs{Command: "touch " + marker + "; echo ran"})
	require.NoError(t, err, "SandboxAuto runs unconfined without a sandbox")
	require.Contains(t, out, "ran")
}

func TestBashDescriptionTellsTheModelAboutTheSandbox(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	sandboxed := withSandboxInfo(SandboxInfo{Available: true, Path: "/usr/bin/bwrap"})
	none := withSandboxInfo(SandboxInfo{Reason: "none"})
	tests := []struct {
		name     string
		opts     []Option
		contains string
		excludes string
	}{
		{"sandboxed", []Option{sandboxed}, "no network access", ""},
		{"sandboxed with network", []Option{sandboxed, WithNetwork(true)}, "run in a sandbox", "no network"},
		{"no sandbox", []Option{none}, "WARNING: commands are NOT sandboxed", "run in a sandbox"},
		{"sandbox off", []Option{sandboxed, WithSandbox(SandboxOff)}, "WARNING: commands are NOT sandboxed", "run in a sandbox"},
		{"sandbox required where there is none", []Option{none, WithSandbox(SandboxRequired)}, "every command is refused", "run in a sandbox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			desc := BashExec(ws, tt.opts...).Description()
			require.Contains(t, desc, tt.contains)
			if tt.excludes != "" {
				require.NotContains(t, desc, tt.excludes)
			}
		})
	}
}

func TestSandboxStatusSaysWhatItIs(t *testing.T) {
	t.Parallel()
	info := SandboxStatus()
	require.NotEmpty(t, info.ProcessTree)
	if info.Available {
		require.Contains(t, info.String(), "bubblewrap")
		require.NotEmpty(t, info.Path)
	} else {
		require.Contains(t, info.String(), "NONE")
		require.NotEmpty(t, info.Reason)
	}
	t.Log(info.String())
}

func TestBashCommandPolicy(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	deny := WithCommandDeny(regexp.MustCompile(`(^|[;&|]\s*)curl\b`), regexp.MustCompile(`\brm\s+-rf\b`))
	allow := WithCommandAllow(regexp.MustCompile(`^(go|echo) `))
	tests := []struct {
		name        string
		opts        []Option
		command     string
		wantPattern string
		refused     bool
	}{
		{"denied first word", []Option{deny}, "curl https://example.com", `(^|[;&|]\s*)curl\b`, true},
		{"denied later in a pipeline", []Option{deny}, "echo a; curl x", `(^|[;&|]\s*)curl\b`, true},
		{"denied anywhere", []Option{deny}, "cd /; rm -rf x", `\brm\s+-rf\b`, true},
		{"not denied", []Option{deny}, "echo curling", "", false},
		{"allowed", []Option{allow}, "echo ok", "", false},
		{"not allowed", []Option{allow}, "ls", "", true},
		{"deny wins over allow", []Option{allow, deny}, "echo x; curl y", `(^|[;&|]\s*)curl\b`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := call(t, BashExec(ws, append(tt.opts, WithSandbox(SandboxOff))...), BashArgs{Command: tt.command})
			if !tt.refused {
				require.NoError(t, err)
				return
			}
			var refused *CommandRefusedError
			require.ErrorAs(t, err, &refused)
			require.Equal(t, tt.command, refused.Command)
			require.Equal(t, tt.wantPattern, refused.Pattern)
		})
	}
}

func TestSecretEnvName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		secret bool
	}{
		{"OPENAI_API_KEY", true},
		{"ANTHROPIC_API_KEY", true},
		{"openai_api_key", true},
		{"GITHUB_TOKEN", true},
		{"TOKEN", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"AWS_ACCESS_KEY_ID", true},
		{"DB_PASSWORD", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", true},
		{"NPM_CONFIG__AUTH", true},
		{"SIGNING_KEY", true},
		{"PATH", false},
		{"HOME", false},
		{"GIT_AUTHOR_NAME", false},
		{"TOKENIZERS_PARALLELISM", false},
		{"KEYBOARD", false},
		{"LANG", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.secret, SecretEnvName(tt.name), tt.name)
	}
}
