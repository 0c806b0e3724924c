package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// runMainEnv makes the test binary run main instead of the tests: each
// command of the guide runs in a process of its own.
const runMainEnv = "APPROVAL_GUIDE_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// command returns the program with args as a process of its own, not
// started.
func command(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	return cmd
}

// approval runs the program with args in a new process and returns its
// output; a failing process fails the test.
func approval(t *testing.T, args ...string) string {
	t.Helper()
	out, err := command(t, args...).CombinedOutput()
	require.NoError(t, err, "approval %q:\n%s", args, out)
	return string(out)
}

// The guide's session: one process pauses, another reads the status, a
// third answers, each opening the same file.
func TestPauseInOneProcessResumeInAnother(t *testing.T) {
	db := filepath.Join(t.TempDir(), "refunds.db")
	on := []string{"-db", db, "-thread", "r-1"}
	require.Equal(t, "paused: 120 EUR for \"the parcel never came\" needs approval\n",
		approval(t, append(on, "request", "120", "the parcel never came")...))
	require.Equal(t, "waiting in approval since step 1: 120 EUR for \"the parcel never came\"\n",
		approval(t, append(on, "status")...))
	require.Equal(t, `request: 120 EUR, "the parcel never came"
decision: approve=true known carrier problem
paid 120 EUR
`, approval(t, append(on, "answer", "yes", "known carrier problem")...))
	require.Equal(t, "not waiting (next: [])\n", approval(t, append(on, "status")...))
}

func TestSmallRefundIsPaidWithoutAsking(t *testing.T) {
	db := filepath.Join(t.TempDir(), "refunds.db")
	require.Equal(t, "request: 20 EUR, \"scratched\"\npaid 20 EUR\n",
		approval(t, "-db", db, "-thread", "r-2", "request", "20", "scratched"))
}

func TestRefusal(t *testing.T) {
	db := filepath.Join(t.TempDir(), "refunds.db")
	on := []string{"-db", db, "-thread", "r-3"}
	approval(t, append(on, "request", "500", "changed my mind")...)
	require.Equal(t, `request: 500 EUR, "changed my mind"
decision: approve=false
refused
`, approval(t, append(on, "answer", "no")...))
}

// Threads are independent: two requests wait in one file at once.
func TestTwoThreadsInOneFile(t *testing.T) {
	db := filepath.Join(t.TempDir(), "refunds.db")
	approval(t, "-db", db, "-thread", "a", "request", "100", "broken")
	approval(t, "-db", db, "-thread", "b", "request", "200", "lost")
	require.Contains(t, approval(t, "-db", db, "-thread", "b", "answer", "yes"), "paid 200 EUR")
	require.Contains(t, approval(t, "-db", db, "-thread", "a", "status"), "100 EUR for \"broken\"")
}

func TestAnswerWithoutQuestionFails(t *testing.T) {
	db := filepath.Join(t.TempDir(), "refunds.db")
	on := []string{"-db", db, "-thread", "r-4"}
	approval(t, append(on, "request", "100", "late")...)
	approval(t, append(on, "answer", "yes")...)
	out, err := command(t, append(on, "answer", "no")...).CombinedOutput()
	require.Error(t, err, "a second answer must not be dropped silently")
	require.Equal(t, "approval: this refund waits for no answer\n", string(out))
}
