//go:build linux

package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireLimitCgroups skips a test where this process cannot make the
// cgroups that bound processes and memory.
func requireLimitCgroups(t *testing.T) {
	t.Helper()
	pids, memory := cgroupV1Parents()
	if pids == "" || memory == "" {
		t.Skip("no writable cgroup v1 pids and memory hierarchies here")
	}
}

func TestResourceHogsEndWithTheLimitTheyReached(t *testing.T) {
	requireLimitCgroups(t)
	t.Parallel()
	small := Limits{Procs: 32, MemoryBytes: 64 << 20, FileBytes: 1 << 20}
	tests := []struct {
		name    string
		command string
		timeout time.Duration
		hit     string
		message string
	}{
		{"fork bomb", `for i in $(seq 1000); do sleep 600 & done; wait`, 3 * time.Second, LimitProcs, "the limit of 32 processes and threads was reached"},
		{"memory hog", `x=$(head -c 1073741824 /dev/zero | tr '\0' a); echo ${#x}`, 2 * time.Minute, LimitMemory, "the memory limit of 64 MiB was reached"},
		{"disk filler", `head -c 104857600 /dev/zero > big`, 2 * time.Minute, LimitFileSize, "the file size limit of 1 MiB was reached"},
	}
	for _, mode := range bashModes(t) {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					ws := newTestWorkspace(t)
					opts := append(mode.opts[:len(mode.opts):len(mode.opts)], WithLimits(small), WithTimeout(tt.timeout))
					res, err := RunCommand(context.Background(), ws, Command{Args: []string{"bash", "-c", tt.command}}, opts...)
					require.NoError(t, err)
					require.Equal(t, tt.hit, res.LimitHit, "%+v", res)
					require.Contains(t, res.Limit, tt.message)
					out, err := call(t, BashExec(ws, opts...), BashArgs{Command: tt.command})
					require.NoError(t, err)
					require.Contains(t, strings.SplitN(out, "\n", 2)[0], tt.message, "bash_exec says which limit")
					if tt.hit == LimitFileSize {
						fi, err := os.Stat(filepath.Join(ws.Root(), "big"))
						require.NoError(t, err)
						require.Equal(t, int64(1<<20), fi.Size())
					}
				})
			}
		})
	}
}

func TestLimitCgroupsAreRemovedAfterTheCommand(t *testing.T) {
	requireLimitCgroups(t)
	t.Parallel()
	ws := newTestWorkspace(t)
	var out strings.Builder
	res, err := RunCommand(context.Background(), ws, Command{Args: []string{"cat", "/proc/self/cgroup"}, Stdout: &out},
		WithSandbox(SandboxOff), WithLimits(Limits{Procs: 64, MemoryBytes: 256 << 20}))
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	pids, memory := cgroupV1Parents()
	var dirs []string
	for line := range strings.SplitSeq(out.String(), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (parts[1] == "pids" || parts[1] == "memory") {
			require.Contains(t, parts[2], "agentgraph-", "the command ran in a cgroup of its own")
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", parts[1], parts[2]))
		}
	}
	require.Len(t, dirs, 2, out.String())
	for _, d := range dirs {
		require.True(t, strings.HasPrefix(d, pids) || strings.HasPrefix(d, memory), d)
		require.NoDirExists(t, d)
	}
}

func TestRunTestsReportsTheLimitItReached(t *testing.T) {
	requireGo(t)
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"m_test.go": "package m\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestFill(t *testing.T) {\n" +
			"\tf, _ := os.Create(\"big\")\n\tdefer f.Close()\n\tbuf := make([]byte, 1<<20)\n" +
			"\tfor i := 0; i < 100; i++ {\n\t\tif _, err := f.Write(buf); err != nil {\n\t\t\tt.Fatal(err)\n\t\t}\n\t}\n}\n",
	})
	report, err := RunTests(context.Background(), ws, "", WithLimits(Limits{FileBytes: 4 << 20}), WithTestTimeout(5*time.Minute))
	require.NoError(t, err)
	require.Equal(t, 1, report.Failed, report.Output)
	fi, err := os.Stat(filepath.Join(ws.Root(), "big"))
	require.NoError(t, err)
	require.LessOrEqual(t, fi.Size(), int64(4<<20))
}
