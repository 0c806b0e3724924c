package coder_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

// The three patches of the auto-fix tests: two that leave the bug, and
// the fix, each applying to the file as the previous one left it.
var (
	wrongFirst  = patch("calc.go", "total += xs[i]", "total += xs[i] * 1", "multiply by one")
	wrongSecond = patch("calc.go", "for i := 1; i < len(xs); i++", "for i := 1; i <= len(xs)-1; i++", "rewrite the bound")
	rightThird  = patch("calc.go", "for i := 1; i <= len(xs)-1; i++", "for i := 0; i < len(xs); i++", "start at the first element")
)

// expectPrompt checks that the edit prompt contains each of want.
func expectPrompt(r llm.Reply, want ...string) llm.Reply {
	r.Expect = func(msgs []state.Message) error {
		var all string
		for _, m := range msgs {
			all += m.Text()
		}
		for _, w := range want {
			if !strings.Contains(all, w) {
				return fmt.Errorf("the prompt lacks %q", w)
			}
		}
		return nil
	}
	return r
}

func TestAutoFixSucceedsOnTheThirdAttempt(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(
		wrongFirst,
		expectPrompt(wrongSecond, "Attempt 1 (multiply by one)", "Sum = 5, want 6", "total += xs[i] * 1"),
		expectPrompt(rightThird, "Attempt 1 (multiply by one)", "Attempt 2 (rewrite the bound)",
			"i <= len(xs)-1", "try a different approach"),
	)
	a := newAgent(t, model, dir)
	evs, res := customEvents(t, a, "t1", "fix the bug in calc.go")

	require.Equal(t, coder.OutcomeTestsPass, res.Outcome, res.Answer)
	require.Equal(t, 3, res.Attempts)
	require.True(t, res.Tests.Passed)
	require.Contains(t, res.Answer, "start at the first element")
	require.Contains(t, res.Answer, "attempt 3 of 3")
	require.Contains(t, readFile(t, dir, "calc.go"), "for i := 0; i < len(xs); i++")
	require.Zero(t, model.Remaining())

	var runs []bool
	for _, ev := range evs {
		if tr, ok := ev.(coder.TestRun); ok {
			runs = append(runs, tr.Passed)
			require.Equal(t, 3, tr.MaxAttempts)
			require.Equal(t, "go-test", tr.Goal)
		}
	}
	require.Equal(t, []bool{false, false, true}, runs)
	require.Equal(t, coder.Finished{Intent: coder.IntentEdit, Outcome: coder.OutcomeTestsPass}, evs[len(evs)-1])
}

func TestAutoFixReportsHonestlyAfterThreeFailuresAndStops(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(
		wrongFirst,
		wrongSecond,
		patch("calc.go", "total := 0", "total := 0 // start", "comment"),
		rightThird, // never asked for: the loop stops at 3 attempts
	)
	a := newAgent(t, model, dir)
	res, err := a.Ask(t.Context(), "t1", "fix the bug in calc.go")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeTestsFail, res.Outcome)
	require.Equal(t, 3, res.Attempts)
	require.False(t, res.Tests.Passed)
	require.Contains(t, res.Answer, "I could not make the tests pass: they still fail after 3 attempt(s), and I stop here.")
	require.Contains(t, res.Answer, "Sum = 5, want 6")
	require.Equal(t, 1, model.Remaining())
	require.Equal(t, "go-test: 1 of 1 tests failed: example.com/calc.TestSum", res.Working.LastError)
}

func TestEditWithoutTestsEndsAfterTheEdit(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "notes.md", "# Notes\n")
	model := llm.NewScripted(text(`Here you go: {"edits": [{"path": "notes.md", "old_text": "# Notes", "new_text": "# Project notes"}], "summary": "renamed the title"}`))
	a := newAgent(t, model, dir)
	res, err := a.Ask(t.Context(), "t1", "rename the title of notes.md")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeEdited, res.Outcome)
	require.Nil(t, res.Tests)
	require.Equal(t, []coder.EditResult{{Path: "notes.md", Kind: "patch", Applied: true}}, res.Edits)
	require.Equal(t, "# Project notes\n", readFile(t, dir, "notes.md"))
}

func TestEditsThatCannotApplyAreRetriedWithTheErrorThenReported(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "notes.md", "# Notes\n")
	model := llm.NewScripted(
		patch("notes.md", "# Nothing", "x", "first"),
		expectPrompt(patch("notes.md", "# Nada", "x", "second"), "old_text not found in notes.md"),
	)
	a := newAgent(t, model, dir, coder.WithMaxAttempts(2))
	res, err := a.Ask(t.Context(), "t1", "change notes.md")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeNoEdit, res.Outcome)
	require.Equal(t, 2, res.Attempts)
	require.Contains(t, res.Answer, "I could not make this change: after 2 attempt(s), no edit could be applied")
	require.Equal(t, "# Notes\n", readFile(t, dir, "notes.md"))
}

func TestMalformedEditCallsAreReportedNotApplied(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "notes.md", "# Notes\n")
	bad := patch("notes.md", "# Notes", "# N", "x")
	bad.ToolCalls[0].FunctionCall.Arguments = `{"path": "notes.md", "old_text": 7}`
	a := newAgent(t, llm.NewScripted(bad), dir, coder.WithMaxAttempts(1))
	res, err := a.Ask(t.Context(), "t1", "change notes.md")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeNoEdit, res.Outcome)
	require.Len(t, res.Edits, 1)
	require.False(t, res.Edits[0].Applied)
	require.Contains(t, res.Edits[0].Error, "file_patch: bad arguments")
	require.Equal(t, "# Notes\n", readFile(t, dir, "notes.md"))
}

// sampleTests is calc_test.go of goSample with a second test, which
// passes.
const sampleTests = `package calc

import "testing"

func TestSum(t *testing.T) {
	if got := Sum([]int{1, 2, 3}); got != 6 {
		t.Fatalf("Sum = %d, want 6", got)
	}
}

func TestSumOfNothing(t *testing.T) {
	if got := Sum(nil); got != 0 {
		t.Fatalf("Sum(nil) = %d, want 0", got)
	}
}
`

// withoutTestSum is sampleTests without the failing TestSum.
const withoutTestSum = `package calc

import "testing"

func TestSumOfNothing(t *testing.T) {
	if got := Sum(nil); got != 0 {
		t.Fatalf("Sum(nil) = %d, want 0", got)
	}
}
`

// pickBoth is the model's choice of the files to edit, for a request
// that names none.
var pickBoth = text(`["calc.go", "calc_test.go"]`)

// An edit request that names no file the agent can find gets the files
// the model picks from the listing in its prompt, before the edit.
func TestAnEditThatNamesNoFileSeesTheFilesTheModelPicks(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(
		expectPrompt(text(`["calc.go", "../outside.go", "nope.go"]`), "calc_test.go", "README.md"),
		expectPrompt(rightFix, "--- calc.go", "func Sum(xs []int) int"),
	)
	a := newAgent(t, model, dir)
	res, err := a.Ask(t.Context(), "t1", "fix the bug that makes the total too low")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeTestsPass, res.Outcome, res.Answer)
	require.Equal(t, []string{"calc.go"}, res.Files)
	require.Zero(t, model.Remaining())
}

// rightFix fixes goSample's bug in one patch.
var rightFix = patch("calc.go", "for i := 1; i < len(xs); i++", "for i := 0; i < len(xs); i++", "start at the first element")

// An edit that deletes the failing test instead of fixing the code does
// not pass: the tests were recorded before the first edit, and the test
// run after it counts the vanished test as failing; the next attempt is
// told so.
func TestAnEditThatDeletesTheFailingTestDoesNotPass(t *testing.T) {
	dir := goSample(t)
	writeFile(t, dir, "calc_test.go", sampleTests)
	model := llm.NewScripted(
		pickBoth,
		write("calc_test.go", withoutTestSum),
		expectPrompt(llm.Reply{Text: "restore the test and fix Sum", ToolCalls: append(
			write("calc_test.go", sampleTests).ToolCalls,
			patch("calc.go", "for i := 1;", "for i := 0;", "").ToolCalls...)},
			"TestSum", "deleted or renamed"),
	)
	a := newAgent(t, model, dir)
	evs, res := customEvents(t, a, "t1", "fix the failing test")

	var runs []string
	for _, ev := range evs {
		if tr, ok := ev.(coder.TestRun); ok {
			runs = append(runs, fmt.Sprint(tr.Passed, " ", tr.Reason))
		}
	}
	require.Len(t, runs, 2)
	require.Contains(t, runs[0], "false")
	require.Contains(t, runs[0], "TestSum")
	require.Contains(t, runs[1], "true")
	require.Equal(t, coder.OutcomeTestsPass, res.Outcome, res.Answer)
	require.Equal(t, 2, res.Attempts)
	require.Zero(t, model.Remaining())
}

// When the attempts that edit delete the failing test, the run ends after
// three attempts saying the tests still fail; it never reports them
// passing — also when the first attempt proposed no edit, and the tests
// are recorded before the second.
func TestDeletingTheFailingTestAtEveryAttemptIsReportedAsFailing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replies []llm.Reply
	}{
		{"every attempt deletes it", []llm.Reply{
			pickBoth,
			write("calc_test.go", withoutTestSum),
			write("calc_test.go", withoutTestSum+"\n"),
			write("calc_test.go", withoutTestSum),
		}},
		{"the first attempt proposes nothing", []llm.Reply{
			pickBoth,
			text("I am not sure what to change."),
			write("calc_test.go", withoutTestSum),
			write("calc_test.go", withoutTestSum+"\n"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := goSample(t)
			writeFile(t, dir, "calc_test.go", sampleTests)
			model := llm.NewScripted(tc.replies...)
			a := newAgent(t, model, dir)
			res, err := a.Ask(t.Context(), "t1", "make the tests pass")
			require.NoError(t, err)
			require.Equal(t, coder.OutcomeTestsFail, res.Outcome, res.Answer)
			require.Equal(t, 3, res.Attempts)
			require.False(t, res.Tests.Passed)
			require.Contains(t, res.Tests.Reason, "TestSum")
			require.Zero(t, model.Remaining())
		})
	}
}

// A request that asks to delete a test takes no baseline: the edit that
// deletes it passes when the remaining tests do.
func TestARequestToDeleteATestMayDeleteIt(t *testing.T) {
	dir := goSample(t)
	writeFile(t, dir, "calc_test.go", sampleTests)
	model := llm.NewScripted(write("calc_test.go", withoutTestSum))
	a := newAgent(t, model, dir)
	res, err := a.Ask(t.Context(), "t1", "delete the test TestSum in calc_test.go")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeTestsPass, res.Outcome, res.Answer)
	require.Equal(t, 1, res.Attempts)
}

// An edit that weakens the failing test's assertion instead of fixing the
// code does not pass: the test files are protected by default, and the
// model is told to restore the file.
func TestAnEditThatWeakensTheFailingTestDoesNotPass(t *testing.T) {
	dir := goSample(t)
	writeFile(t, dir, "calc_test.go", sampleTests)
	weakened := strings.Replace(sampleTests, `t.Fatalf("Sum = %d, want 6", got)`, `t.Logf("Sum = %d", got)`, 1)
	model := llm.NewScripted(
		pickBoth,
		write("calc_test.go", weakened),
		expectPrompt(write("calc_test.go", weakened+"\n"), "protected test file calc_test.go was changed", "restore"),
		write("calc_test.go", weakened),
	)
	a := newAgent(t, model, dir)
	res, err := a.Ask(t.Context(), "t1", "make the tests pass")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeTestsFail, res.Outcome, res.Answer)
	require.Equal(t, 3, res.Attempts)
	require.Contains(t, res.Tests.Reason, "protected test file calc_test.go was changed")
	require.Zero(t, model.Remaining())
}

// A request that asks for a test may change the test files.
func TestARequestToAddATestMayEditTheTestFile(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(write("calc_test.go", sampleTests), rightFix)
	a := newAgent(t, model, dir)
	res, err := a.Ask(t.Context(), "t1", "add a test of Sum(nil) to calc_test.go")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeTestsPass, res.Outcome, res.Answer)
}
