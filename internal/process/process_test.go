//go:build linux

package process

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/internal/process/processtest"
	"github.com/stretchr/testify/require"
)

// containments are the ways Run can hold a process tree on this machine.
func containments(t *testing.T) []struct {
	name      string
	useCgroup bool
} {
	t.Helper()
	modes := []struct {
		name      string
		useCgroup bool
	}{{"marker", false}}
	if strings.Contains(Containment(), "cgroup v2 (") {
		modes = append(modes, struct {
			name      string
			useCgroup bool
		}{"cgroup", true})
	} else {
		t.Logf("no cgroup v2 here, testing only the marker: %s", Containment())
	}
	return modes
}

func TestRunKillsWholeTree(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not on PATH")
	}
	tests := []struct {
		name    string
		launch  string // prefix starting the background process
		tail    string // what the command does after it started
		timeout time.Duration
		cancel  bool
	}{
		{"background child after normal exit", "", "exit 0", 0, false},
		{"setsid child after normal exit", "setsid", "exit 3", 0, false},
		{"double-forked setsid child after normal exit", "setsid -f", "exit 0", 0, false},
		{"nohup child after normal exit", "nohup", "exit 0", 0, false},
		{"setsid child on timeout", "setsid", "sleep 600", 3 * time.Second, false},
		{"background child on timeout", "", "wait", 3 * time.Second, false},
		{"setsid child on cancel", "setsid", "sleep 600", 0, true},
	}
	for _, mode := range containments(t) {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					marker := processtest.NewMarker()
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					var out bytes.Buffer
					type outcome struct {
						res Result
						err error
					}
					done := make(chan outcome, 1)
					go func() {
						res, err := run(ctx, Command{
							Name:    "bash",
							Args:    []string{"-c", processtest.BackgroundScript(tt.launch, marker) + "\n" + tt.tail},
							Dir:     dir,
							Timeout: tt.timeout,
							Stdout:  &out,
						}, mode.useCgroup)
						done <- outcome{res, err}
					}()
					if tt.cancel {
						for range 2000 {
							if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
								break
							}
							time.Sleep(10 * time.Millisecond)
						}
						cancel()
					}
					o := <-done
					switch {
					case tt.cancel:
						require.ErrorIs(t, o.err, context.Canceled)
					case tt.timeout > 0:
						require.NoError(t, o.err)
						require.True(t, o.res.TimedOut)
						require.Equal(t, "up\n", out.String())
					default:
						require.NoError(t, o.err)
						require.False(t, o.res.TimedOut)
						require.Equal(t, "up\n", out.String())
					}
					require.FileExists(t, filepath.Join(dir, "started"), "the background process never ran")
					processtest.RequireNoneLeft(t, marker)
				})
			}
		})
	}
}

func TestRunReportsExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		script   string
		wantCode int
	}{
		{"success", "true", 0},
		{"failure", "exit 7", 7},
		{"killed by a signal", "kill -9 $$", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Run(context.Background(), Command{Name: "bash", Args: []string{"-c", tt.script}})
			require.NoError(t, err)
			require.Equal(t, tt.wantCode, res.ExitCode)
			require.False(t, res.TimedOut)
		})
	}
}

func TestRunOutputStreams(t *testing.T) {
	t.Parallel()
	t.Run("separate writers", func(t *testing.T) {
		t.Parallel()
		var stdout, stderr bytes.Buffer
		_, err := Run(context.Background(), Command{Name: "bash", Args: []string{"-c", "echo out; echo err >&2"},
			Stdout: &stdout, Stderr: &stderr})
		require.NoError(t, err)
		require.Equal(t, "out\n", stdout.String())
		require.Equal(t, "err\n", stderr.String())
	})
	t.Run("one writer for both keeps the order", func(t *testing.T) {
		t.Parallel()
		var both bytes.Buffer
		_, err := Run(context.Background(), Command{Name: "bash", Args: []string{"-c", "echo 1; echo 2 >&2; echo 3"},
			Stdout: &both, Stderr: &both})
		require.NoError(t, err)
		require.Equal(t, "1\n2\n3\n", both.String())
	})
	t.Run("no writers", func(t *testing.T) {
		t.Parallel()
		res, err := Run(context.Background(), Command{Name: "bash", Args: []string{"-c", "echo ignored; exit 2"}})
		require.NoError(t, err)
		require.Equal(t, 2, res.ExitCode)
	})
}

func TestRunEnvironment(t *testing.T) {
	t.Setenv("AGENTGRAPH_PROCESS_TEST", "parent")
	tests := []struct {
		name  string
		clear bool
		env   []string
		want  []string
	}{
		{"added to the current environment", false, []string{"EXTRA=1"}, []string{"AGENTGRAPH_PROCESS_TEST=parent", "EXTRA=1"}},
		{"whole environment", true, []string{"EXTRA=2"}, []string{"EXTRA=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Run(context.Background(), Command{Name: "env", Env: tt.env, ClearEnv: tt.clear, Stdout: &out})
			require.NoError(t, err)
			var got []string
			for _, kv := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if strings.HasPrefix(kv, markerVar+"=") {
					continue
				}
				if tt.clear || strings.HasPrefix(kv, "AGENTGRAPH_PROCESS_TEST=") || strings.HasPrefix(kv, "EXTRA=") {
					got = append(got, kv)
				}
			}
			require.ElementsMatch(t, tt.want, got)
		})
	}
}

func TestRunMissingProgram(t *testing.T) {
	t.Parallel()
	_, err := Run(context.Background(), Command{Name: "agentgraph-no-such-program"})
	require.ErrorIs(t, err, exec.ErrNotFound)
}

func TestRunRemovesItsCgroup(t *testing.T) {
	t.Parallel()
	if !strings.Contains(Containment(), "cgroup v2 (") {
		t.Skipf("no cgroup v2 here: %s", Containment())
	}
	var out bytes.Buffer
	res, err := Run(context.Background(), Command{Name: "bash", Args: []string{"-c", "sleep 600 & grep '^0::' /proc/self/cgroup"}, Stdout: &out})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	name := filepath.Base(strings.TrimSpace(out.String()))
	require.True(t, strings.HasPrefix(name, "agentgraph-"), "the command ran in %q", out.String())
	require.NoDirExists(t, filepath.Join(cgroupParent(), name))
}

func TestContainmentIsDescribed(t *testing.T) {
	t.Parallel()
	require.NotEmpty(t, Containment())
}
