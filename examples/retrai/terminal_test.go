package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// asMainEnv, set to 1, makes the test binary run as retrai: main instead of
// the tests. Tests use it to run retrai in a process of its own, where
// every package's init runs as it does in the real binary.
const asMainEnv = "RETRAI_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main() // exits
	}
	code := m.Run()
	removeBuiltRetrai()
	os.Exit(code)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// TestNoTerminalQueriesOutsideTheTUI runs `retrai goals` on a pseudo
// terminal that answers nothing (script(1)'s): only `retrai tui` may talk
// to the terminal, so the output has no background-colour query (OSC 11)
// and no cursor-position request (DSR 6) — which a terminal UI library
// sends at init (bubbletea v1 did, then waited 5 s for an answer), and
// which a terminal that does not answer shows as garbage.
func TestNoTerminalQueriesOutsideTheTUI(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skipf("skipping: script(1) is not installed (%v); it is in Debian's bsdutils", err)
	}
	// util-linux's script: -q quiet, -e the command's exit code, -c the command.
	if out, err := exec.Command(script, "-qec", "true", "/dev/null").CombinedOutput(); err != nil {
		t.Skipf("skipping: this script(1) is not util-linux's (`script -qec true /dev/null`: %v: %s)", err, out)
	}
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()

	cmd := exec.CommandContext(t.Context(), script, "-qec", shellQuote(self)+" goals --cwd "+shellQuote(dir), "/dev/null")
	// A terminal that a terminal library would query (neither dumb nor a
	// multiplexer, which termenv leaves alone).
	cmd.Env = append(os.Environ(), asMainEnv+"=1", "TERM=xterm-256color")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "output: %q", out)
	require.Contains(t, string(out), "Goals (pick one with --goal")
	require.Contains(t, string(out), "No goal detected for "+dir)
	require.NotContains(t, string(out), "\x1b]11;?", "OSC 11: the background colour was queried")
	require.NotContains(t, string(out), "\x1b[6n", "DSR 6: the cursor position was requested")
}
