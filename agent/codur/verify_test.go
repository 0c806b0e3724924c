package codur_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/llm"
)

func TestVerifierRunsEveryCase(t *testing.T) {
	dir, _ := workspace(t, map[string]string{
		"main.py":                  "import sys\nprint(sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read().strip() or 'plain')\n",
		"expected.txt":             "plain\n",
		"cases/arg/args":           "hello\n",
		"cases/arg/expected.txt":   "hello\n",
		"cases/input/stdin":        "typed\n",
		"cases/input/expected.txt": "typed\n",
	})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	require.Equal(t, []codur.Case{{Name: "arg", Args: []string{"hello"}, Expected: "hello\n"}, {Name: "input", Stdin: "typed\n", Expected: "typed\n"}}, v.Cases)
	res, err := v.Run(t.Context())
	require.NoError(t, err)
	require.True(t, res.Passed, "%+v", res)
	require.Equal(t, 3, res.Runs)

	v.Cases = append(v.Cases, codur.Case{Name: "secret", Args: []string{"x"}, Expected: "y\n", Hidden: true})
	res, err = v.Run(t.Context())
	require.NoError(t, err)
	require.False(t, res.Passed)
	require.Equal(t, "secret", res.Case)
	require.True(t, res.Hidden)
	require.Equal(t, 4, res.Runs)
}

func TestRestorePutsBackTheProtectedFiles(t *testing.T) {
	dir, _ := workspace(t, map[string]string{"main.py": "print(1)\n", "expected.txt": "2\n", "cases/a/expected.txt": "3\n"})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	restored, err := v.Restore()
	require.NoError(t, err)
	require.Empty(t, restored, "nothing changed")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "expected.txt"), []byte("1\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "cases/a/expected.txt")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "cases/a/expected.txt")))
	restored, err = v.Restore()
	require.NoError(t, err)
	require.Equal(t, []string{"cases/a/expected.txt", "expected.txt"}, restored)
	require.Equal(t, "2\n", readFile(t, dir, "expected.txt"))
	fi, err := os.Lstat(filepath.Join(dir, "cases/a/expected.txt"))
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular(), "the link was replaced by the file")
	require.Equal(t, "3\n", readFile(t, dir, "cases/a/expected.txt"))
}

func TestProgramOverItsTimeLimitIsReportedAsATimeout(t *testing.T) {
	dir, _ := workspace(t, map[string]string{"main.py": "while True:\n    pass\n", "expected.txt": "1\n"})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	v.Timeout = 300 * time.Millisecond
	model := llm.NewScripted(preCode, text(`{"action": "delegate", "agent": "llm:default"}`), text("I changed nothing."))
	r := run(t, build(t, model, dir, codur.WithVerifier(v), codur.WithRepairBudget(0), codur.WithMaxIterations(1)), codur.Input("fix main.py", false))
	require.NoError(t, r.err)
	require.Equal(t, "Gave up after 1 iterations: the program timed out (time limit 300ms).", r.out.FinalResponse.Get())
	require.Equal(t, []string{"the program timed out (time limit 300ms)"}, r.out.Failures.Get())
}
