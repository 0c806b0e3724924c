package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
)

// runMainEnv makes the test binary run main instead of the tests, so that
// each worker is a process of its own.
const runMainEnv = "WORKER_GUIDE_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// workers start processes of the program on one database and schema.
type workers struct {
	t      *testing.T
	url    string
	schema string
}

func newWorkers(t *testing.T) workers {
	return workers{t: t, url: pgdbtest.URL(t), schema: pgdbtest.FreshSchema(t, "guide_workers")}
}

// command returns the command of a worker with args (flags, then the
// command), not started.
func (w workers) command(args ...string) *exec.Cmd {
	cmd := exec.CommandContext(w.t.Context(), os.Args[0], append([]string{"-db", w.url, "-schema", w.schema}, args...)...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	return cmd
}

// run runs a worker to its end and returns its output and exit code.
func (w workers) run(args ...string) (string, int) {
	w.t.Helper()
	out, err := w.command(args...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	require.NoError(w.t, err)
	return string(out), 0
}

var itemLine = regexp.MustCompile(`^item (\d+) of (\d+) \(task ([0-9a-f-]+)\)$`)

// Several processes share one database, each on its own thread.
func TestProcessesOnTheirOwnThreads(t *testing.T) {
	w := newWorkers(t)
	var wg sync.WaitGroup
	outs := make([]string, 3)
	codes := make([]int, 3)
	for i := range outs {
		wg.Go(func() { outs[i], codes[i] = w.run("-delay", "10ms", "-thread", fmt.Sprintf("job-%d", i), "start", "3") })
	}
	wg.Wait()
	for i := range outs {
		require.Equal(t, 0, codes[i], outs[i])
		require.True(t, strings.HasSuffix(outs[i], "done: [1 2 3]\n"), outs[i])
	}
}

// A second process on a thread another one runs fails at once, naming
// the holder.
func TestSecondProcessOnABusyThreadFails(t *testing.T) {
	w := newWorkers(t)
	first := w.command("-delay", "300ms", "-thread", "job-1", "start", "4")
	stdout, err := first.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, first.Start())
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan())
	require.Regexp(t, itemLine, lines.Text())

	out, code := w.run("-thread", "job-1", "resume")
	require.Equal(t, exitBusy, code, out)
	require.Equal(t, fmt.Sprintf("thread job-1 is busy: in use by pid %d on %s\n", first.Process.Pid, hostname(t)), out)

	for lines.Scan() {
	}
	require.NoError(t, first.Wait())
	out, code = w.run("-thread", "job-1", "status")
	require.Equal(t, 0, code, out)
	require.Equal(t, "4 of 4 items done, next []\n", out)
}

// A process killed in the middle of an item is seen dead by the next
// process on this machine, which takes the thread over at once (on another
// machine, after the lease expires) and resumes from the last checkpoint,
// running the killed task again with the same task ID.
func TestResumeAfterKill(t *testing.T) {
	w := newWorkers(t)
	out, code := w.run("-lease", "2s", "-delay", "10ms", "-crash-at", "3", "-thread", "job-1", "start", "5")
	require.Equal(t, -1, code, "killed by a signal:\n%s", out)
	before := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, before, 3, out)
	crashed := itemLine.FindStringSubmatch(before[2])
	require.Equal(t, "3", crashed[1], out)

	out, code = w.run("-thread", "job-1", "status")
	require.Equal(t, 0, code, out)
	require.Equal(t, "2 of 5 items done, next [process]\n", out)

	out, code = w.run("-lease", "2s", "-thread", "job-1", "resume")
	require.Equal(t, 0, code, "the dead process's lease is taken over at once on its own machine:\n%s", out)
	after := strings.Split(strings.TrimSpace(out), "\n")
	require.Equal(t, before[2], after[0], "the killed task runs again, with the same task ID")
	require.Equal(t, "done: [1 2 3 4 5]", after[len(after)-1], "every item is done once in the state")
}

func hostname(t *testing.T) string {
	h, err := os.Hostname()
	require.NoError(t, err)
	return h
}
