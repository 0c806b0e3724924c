package tools

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// recordProject writes files into a new workspace.
func recordProject(t *testing.T, files map[string]string) *Workspace {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	ws, err := NewWorkspace(root)
	require.NoError(t, err)
	return ws
}

func requireTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed", name)
	}
}

func TestRunTestsRecordedGo(t *testing.T) {
	t.Parallel()
	requireTool(t, "go")
	ws := recordProject(t, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.21\n",
		"m_test.go": `package m

import "testing"

func TestOK(t *testing.T)   {}
func TestBad(t *testing.T)  { t.Error("boom") }
func TestSkip(t *testing.T) { t.Skip("later") }
func TestSub(t *testing.T) {
	t.Run("a", func(t *testing.T) {})
}
`,
		"broken/b_test.go": "package broken\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { undefined() }\n",
	})
	report, rec, err := RunTestsRecorded(context.Background(), ws, FrameworkGo, RecordOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, report.ExitCode)
	require.ElementsMatch(t, []RecordedTest{
		{ID: "example.com/m.TestOK", Unit: "example.com/m", Outcome: RecordPassed},
		{ID: "example.com/m.TestBad", Unit: "example.com/m", Outcome: RecordFailed},
		{ID: "example.com/m.TestSkip", Unit: "example.com/m", Outcome: RecordSkipped},
		{ID: "example.com/m.TestSub", Unit: "example.com/m", Outcome: RecordPassed},
		{ID: "example.com/m.TestSub/a", Unit: "example.com/m", Outcome: RecordPassed},
	}, rec.Tests)
	require.ElementsMatch(t, []string{"example.com/m", "example.com/m/broken"}, rec.Broken)
}

func TestRunTestsRecordedPytest(t *testing.T) {
	t.Parallel()
	requireTool(t, "pytest")
	ws := recordProject(t, map[string]string{
		"pytest.ini": "[pytest]\n",
		"tests/test_a.py": `import pytest

def test_ok():
    pass

def test_bad():
    assert 1 == 2

@pytest.mark.skip
def test_skip():
    pass

@pytest.mark.xfail
def test_xfail():
    assert 0

@pytest.mark.parametrize("x", [1, 2])
def test_p(x):
    pass

class TestC:
    def test_m(self):
        pass
`,
		"tests/test_broken.py": "import nope\n",
	})
	report, rec, err := RunTestsRecorded(context.Background(), ws, FrameworkPytest, RecordOptions{KeepGoing: true})
	require.NoError(t, err)
	require.Equal(t, 1, report.ExitCode, report.Output)
	unit := "tests/test_a.py"
	require.Equal(t, []RecordedTest{
		{ID: unit + "::test_ok", Unit: unit, Outcome: RecordPassed},
		{ID: unit + "::test_bad", Unit: unit, Outcome: RecordFailed},
		{ID: unit + "::test_skip", Unit: unit, Outcome: RecordSkipped},
		{ID: unit + "::test_xfail", Unit: unit, Outcome: RecordSkipped},
		{ID: unit + "::test_p[1]", Unit: unit, Outcome: RecordPassed},
		{ID: unit + "::test_p[2]", Unit: unit, Outcome: RecordPassed},
		{ID: unit + "::TestC::test_m", Unit: unit, Outcome: RecordPassed},
	}, rec.Tests)
	require.Equal(t, []string{"tests/test_broken.py"}, rec.Broken)

	// Without KeepGoing the collection error interrupts the session.
	_, rec, err = RunTestsRecorded(context.Background(), ws, FrameworkPytest, RecordOptions{})
	require.NoError(t, err)
	require.Empty(t, rec.Tests)
	require.Equal(t, []string{"tests/test_broken.py", ""}, rec.Broken)
}

func TestCargoRecordNamesDocTestsWithoutLineNumbers(t *testing.T) {
	t.Parallel()
	rec := &TestRecord{}
	for _, line := range []string{
		"running 2 tests",
		"test tests::ok ... ok",
		"test tests::slow ... ignored, needs a network",
		"test tests::bad ... FAILED",
		"test src/lib.rs - add (line 5) ... ok",
		"test src/lib.rs - Foo::bar (line 12) - compile fail ... ok",
		"test result: FAILED. 3 passed; 1 failed; 1 ignored; 0 measured",
	} {
		rec.cargoLine(line)
	}
	require.Equal(t, []RecordedTest{
		{ID: "tests::ok", Outcome: RecordPassed},
		{ID: "tests::slow", Outcome: RecordSkipped},
		{ID: "tests::bad", Outcome: RecordFailed},
		{ID: "src/lib.rs - add", Outcome: RecordPassed},
		{ID: "src/lib.rs - Foo::bar - compile fail", Outcome: RecordPassed},
	}, rec.Tests)
}

func TestRunTestsRecordedHasNoRecordForNpm(t *testing.T) {
	t.Parallel()
	requireTool(t, "npm")
	ws := recordProject(t, map[string]string{"package.json": `{"scripts": {"test": "echo '# pass 1'"}}`})
	report, rec, err := RunTestsRecorded(context.Background(), ws, FrameworkNpm, RecordOptions{})
	require.NoError(t, err)
	require.Nil(t, rec)
	require.Equal(t, 1, report.Passed)
}
