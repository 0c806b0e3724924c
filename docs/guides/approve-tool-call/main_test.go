package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// runMainEnv makes the test binary run main instead of the tests: each
// command of the guide runs in a process of its own, as after a restart.
const runMainEnv = "SUPPORT_GUIDE_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// support runs the program with args in a new process and returns its
// standard output and standard error together, and whether it succeeded.
func support(t *testing.T, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		_, exited := err.(*exec.ExitError)
		require.True(t, exited, "support %q: %v", args, err)
	}
	return string(out), err == nil
}

func mustSupport(t *testing.T, args ...string) string {
	t.Helper()
	out, ok := support(t, args...)
	require.True(t, ok, "support %q failed:\n%s", args, out)
	return out
}

const question = "Order A17 never arrived, I want my money back."

const asked = `agent: calls lookup_order {"order":"A17"}
tools: lookup_order → order A17: 120 EUR, shipped 12 days ago, not delivered
agent: calls refund {"order":"A17","amount":120}
waiting for approval: refund {"order":"A17","amount":120} (Refund an order, in full or in part. Moves money: a human approves each call.)
span execute_tool lookup_order: ok
`

// payments returns the payments file of the directory of db.
func payments(t *testing.T, db string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(db), "payments.log"))
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(t, err)
	return string(b)
}

// The guide's session: one process asks and pauses before the refund, a
// second one's new message is refused while the approval is pending, a
// third approves, and the refund is paid once.
func TestApproveInAnotherProcess(t *testing.T) {
	db := filepath.Join(t.TempDir(), "support.db")
	on := []string{"-db", db, "-thread", "t-1"}
	require.Equal(t, asked, mustSupport(t, append(on, "ask", question)...))
	require.Empty(t, payments(t, db), "nothing paid before the approval")

	out, ok := support(t, append(on, "ask", "Hello?")...)
	require.False(t, ok)
	require.Contains(t, out, `waits for answers to interrupt`)

	require.Equal(t, `approval: calls refund {"order":"A17","amount":120}
tools: refund → refunded 120 EUR on order A17
agent: I have dealt with order A17; the refund's outcome is above.
span execute_tool refund: ok
`, mustSupport(t, append(on, "answer", "approve")...))
	require.Equal(t, "A17 120\n", payments(t, db))

	out, ok = support(t, append(on, "answer", "approve")...)
	require.False(t, ok, "a second answer finds nothing to answer:\n%s", out)
	require.Equal(t, "A17 120\n", payments(t, db), "paid once")
}

func TestEditTheArguments(t *testing.T) {
	db := filepath.Join(t.TempDir(), "support.db")
	on := []string{"-db", db, "-thread", "t-2"}
	mustSupport(t, append(on, "ask", question)...)
	out := mustSupport(t, append(on, "answer", "edit", `{"order":"A17","amount":60}`)...)
	require.Contains(t, out, `approval: calls refund {"order":"A17","amount":60}`)
	require.Contains(t, out, "tools: refund → refunded 60 EUR on order A17")
	require.Equal(t, "A17 60\n", payments(t, db))
}

func TestReject(t *testing.T) {
	db := filepath.Join(t.TempDir(), "support.db")
	on := []string{"-db", db, "-thread", "t-3"}
	mustSupport(t, append(on, "ask", question)...)
	out := mustSupport(t, append(on, "answer", "reject", "Refunds need the parcel back first.")...)
	require.Equal(t, `approval: calls refund {"order":"A17","amount":120}
approval: refund → Refunds need the parcel back first.
agent: I have dealt with order A17; the refund's outcome is above.
`, out)
	require.Empty(t, payments(t, db))
}

// An answer that does not fit the request is not used: the thread asks
// again and says why.
func TestAnAnswerThatDoesNotFitIsAskedAgain(t *testing.T) {
	db := filepath.Join(t.TempDir(), "support.db")
	on := []string{"-db", db, "-thread", "t-4"}
	mustSupport(t, append(on, "ask", question)...)
	out := mustSupport(t, append(on, "answer", "edit", `not json`)...)
	require.Contains(t, out, "the answer was not used: decision 1 (call call_refund of refund): the edited arguments are not a JSON object")
	require.Contains(t, out, "waiting for approval: refund")
	require.Empty(t, payments(t, db))
	mustSupport(t, append(on, "answer", "approve")...)
	require.Equal(t, "A17 120\n", payments(t, db))
}
