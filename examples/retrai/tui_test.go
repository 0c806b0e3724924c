package main

import (
	"io"
	"iter"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
	"github.com/agentgraph/agentgraph/examples/retrai/samples"
)

// key is the press of the key s: "ctrl+c", "esc" or a character.
func key(s string) tea.KeyPressMsg {
	switch s {
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	}
	r := []rune(s)
	if len(r) != 1 {
		panic("key: not one character: " + s)
	}
	return tea.KeyPressMsg{Code: r[0], Text: s}
}

// screen is the content of the model's view.
func screen(tm *tuiModel) string { return tm.View().Content }

func TestKeyNames(t *testing.T) {
	for _, s := range []string{"ctrl+c", "esc", "q", "a", "x", "y"} {
		require.Equal(t, s, key(s).String())
	}
}

// newTestManager opens a manager of demo runs on a new database.
func newTestManager(t *testing.T) *runs.Manager {
	t.Helper()
	isolate(t)
	m, err := runs.Open(t.Context(), runs.Options{DB: filepath.Join(t.TempDir(), "r.db"), Models: models})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}

// syntheticRun is the record of a run that exists only in the tests below.
var syntheticRun = runs.Run{
	ID:     "run-1",
	Config: runs.Config{Goal: "go-test", Cwd: "/tmp/calc", Model: "demo:go-test", MaxIterations: 50, HITL: true},
	Status: runs.StatusRunning,
}

// event is an event of the synthetic run from node (the run's own when
// node is "").
func event(node string, data events.Payload) tea.Msg {
	return eventMsg{events.Event{RunID: syntheticRun.ID, Node: node, Data: data}}
}

// firstIteration are the events of the go-test demo's first iteration.
var firstIteration = []tea.Msg{
	event("plan", events.NodeStarted{}),
	event("plan", retrai.IterationStarted{Iteration: 1, MaxIterations: 50}),
	event("plan", events.ModelCall{Text: "I'll start by running the tests.", ToolCalls: 1, TotalTokens: 1940}),
	event("plan", events.ToolCall{ID: "c1", Name: "run_tests", Args: `{"framework":"go"}`}),
	event("act", events.ToolResult{ID: "c1", Name: "run_tests", Result: `{"passed": 0, "failed": 1}`}),
	event("evaluate", retrai.GoalCheck{Iteration: 1, MaxIterations: 50, Reason: "go-test: 1 of 1 tests failed", Failed: 1, TotalTokens: 1940}),
	event("evaluate", runs.Progress{Iteration: 1}),
}

var humanCheck = event("human_check", retrai.HumanCheck{Question: "Iteration 1 of 50 done: go-test: 1 of 1 tests failed. Continue (approve) or stop (abort)?", Iteration: 1})

func concat(parts ...[]tea.Msg) []tea.Msg {
	var out []tea.Msg
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestTUIModelShowsTheRun(t *testing.T) {
	waitingRun := syntheticRun
	waitingRun.Status, waitingRun.Iteration, waitingRun.TotalTokens = runs.StatusWaiting, 1, 1940
	waitingRun.Question = "Iteration 1 of 50 done: resumed. Continue (approve) or stop (abort)?"

	tests := []struct {
		name        string
		run         runs.Run
		msgs        []tea.Msg
		wantView    []string
		notView     []string
		wantStatus  string
		wantWaiting bool
	}{
		{
			name: "a new run",
			run:  syntheticRun,
			wantView: []string{
				"retrai · run run-1 · goal go-test · model demo:go-test (scripted)",
				"run run-1: goal go-test in /tmp/calc",
				"model demo:go-test, up to 50 iterations, human check after every iteration; db DB",
				" running · iteration 0/50 · 0 tokens ",
				"[q] quit",
			},
			notView:    []string{"[a] approve"},
			wantStatus: "running",
		},
		{
			name: "an iteration",
			run:  syntheticRun,
			msgs: firstIteration,
			wantView: []string{
				"── iteration 1/50 ──",
				"  model: I'll start by running the tests.",
				"  ✓ run_tests framework=go → 0 passed, 1 failed",
				"  goal ✗ not yet: go-test: 1 of 1 tests failed",
				"  iteration 1 done · 1940 tokens so far",
				" running · iteration 1/50 · goal ✗ not yet · 1940 tokens ",
			},
			notView:    []string{"[a] approve"},
			wantStatus: "running",
		},
		{
			name: "a human check",
			run:  syntheticRun,
			msgs: concat(firstIteration, []tea.Msg{humanCheck}),
			wantView: []string{
				"  ? Iteration 1 of 50 done: go-test: 1 of 1 tests failed.",
				" waiting · iteration 1/50 · goal ✗ not yet · 1940 tokens ",
				"[a] approve  [x] abort  [q] quit",
			},
			wantStatus:  "waiting",
			wantWaiting: true,
		},
		{
			name: "a waiting run resumed",
			run:  waitingRun,
			wantView: []string{
				"  ? Iteration 1 of 50 done: resumed.",
				" waiting · iteration 1/50 · 1940 tokens ",
				"[a] approve  [x] abort  [q] quit",
			},
			wantStatus:  "waiting",
			wantWaiting: true,
		},
		{
			name: "the answer and the end",
			run:  syntheticRun,
			msgs: concat(firstIteration, []tea.Msg{
				humanCheck,
				event("human_check", retrai.HumanDecision{Decision: "approve", Approved: true, Iteration: 1}),
				event("plan", events.NodeStarted{}),
				event("plan", retrai.IterationStarted{Iteration: 2, MaxIterations: 50}),
				event("plan", events.ModelCall{Text: "Fixed.", TotalTokens: 3010}),
				event("evaluate", retrai.GoalCheck{Iteration: 2, MaxIterations: 50, Achieved: true, Reason: "go-test: all 1 tests passed", Passed: 1, TotalTokens: 4950}),
				event("", runs.Ended{Status: runs.StatusAchieved, Reason: "go-test: all 1 tests passed", Iteration: 2, TotalTokens: 4950}),
			}),
			wantView: []string{
				"  human: approved, going on",
				"── iteration 2/50 ──",
				"  goal ✓ achieved: go-test: all 1 tests passed",
				"■ run ended: achieved — go-test: all 1 tests passed",
				" achieved · iteration 2/50 · goal ✓ achieved · 4950 tokens ",
				"the run has ended · [q] quit",
			},
			notView:    []string{"[a] approve"},
			wantStatus: "achieved",
		},
		{
			name: "an error",
			run:  syntheticRun,
			msgs: []tea.Msg{
				event("", events.Error{Message: "model call: 429 too many requests"}),
				event("", runs.Ended{Status: runs.StatusError, Iteration: 1, Error: "model call: 429 too many requests"}),
			},
			wantView: []string{
				"  ! error: model call: 429 too many requests",
				"■ run ended: error — error: model call: 429 too many requests",
			},
			wantStatus: "error",
		},
		{
			name:       "lost events",
			run:        syntheticRun,
			msgs:       []tea.Msg{lostMsg{7}},
			wantView:   []string{"  (7 events not shown)"},
			wantStatus: "running",
		},
		{
			name:       "the end of the events",
			run:        syntheticRun,
			msgs:       []tea.Msg{streamEndMsg{}},
			wantView:   []string{"[q] quit"},
			wantStatus: "running",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm := newTUIModel(t.Context(), &decider{}, tt.run, "DB", nil)
			require.Nil(t, tm.Init()) // no event source
			for _, msg := range tt.msgs {
				_, cmd := tm.Update(msg)
				require.Nil(t, cmd)
			}
			view := screen(tm)
			for _, want := range tt.wantView {
				require.Contains(t, view, want)
			}
			for _, not := range tt.notView {
				require.NotContains(t, view, not)
			}
			require.Equal(t, tt.wantStatus, tm.status)
			require.Equal(t, tt.wantWaiting, tm.waiting())
		})
	}
}

func TestTUIModelFitsTheWindow(t *testing.T) {
	tm := newTUIModel(t.Context(), &decider{}, syntheticRun, "DB", nil)
	tm.Update(tea.WindowSizeMsg{Width: 40, Height: 8})
	for _, msg := range concat(firstIteration, firstIteration, []tea.Msg{humanCheck}) {
		tm.Update(msg)
	}
	view := screen(tm)
	lines := strings.Split(view, "\n")
	require.Len(t, lines, 8)
	for _, l := range lines {
		require.LessOrEqual(t, lipgloss.Width(l), 40, "%q", l) // in cells, the styles aside
	}
	// The latest lines, and the footer.
	require.Contains(t, view, "  ? Iteration 1 of 50 done")
	require.Contains(t, view, "[a] approve  [x] abort  [q] quit")
	require.NotContains(t, view, "retrai · run run-1 · goal go-test · model demo:go-test (scripted)") // clipped
}

// TestTUIModelAltScreen: the view takes the whole terminal only when told
// to (tuiCommand does on a terminal).
func TestTUIModelAltScreen(t *testing.T) {
	tm := newTUIModel(t.Context(), &decider{}, syntheticRun, "DB", nil)
	require.False(t, tm.View().AltScreen)
	tm.altScreen = true
	require.True(t, tm.View().AltScreen)
}

func TestTUIModelKeys(t *testing.T) {
	m := newTestManager(t)
	tests := []struct {
		name      string
		msgs      []tea.Msg // before the key
		key       string
		wantQuit  bool
		wantCmd   bool   // a decision is sent
		wantError string // the decision's outcome, shown
	}{
		{"q quits", nil, "q", true, false, ""},
		{"ctrl+c quits", nil, "ctrl+c", true, false, ""},
		{"esc quits", nil, "esc", true, false, ""},
		{"q quits while waiting", []tea.Msg{humanCheck}, "q", true, false, ""},
		{"a without a human check does nothing", firstIteration, "a", false, false, ""},
		{"x without a human check does nothing", firstIteration, "x", false, false, ""},
		{"other keys do nothing", []tea.Msg{humanCheck}, "y", false, false, ""},
		// The run exists only here: the manager refuses the decision.
		{"a approves", []tea.Msg{humanCheck}, "a", false, true, "approve: runs: resume: run run-1: run not found"},
		{"x aborts", []tea.Msg{humanCheck}, "x", false, true, "abort: runs: resume: run run-1: run not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm := newTUIModel(t.Context(), &decider{m: m}, syntheticRun, "DB", nil)
			for _, msg := range tt.msgs {
				tm.Update(msg)
			}
			_, cmd := tm.Update(key(tt.key))
			switch {
			case tt.wantQuit:
				require.NotNil(t, cmd)
				require.IsType(t, tea.QuitMsg{}, cmd())
			case tt.wantCmd:
				require.NotNil(t, cmd)
				require.True(t, tm.deciding)
				require.False(t, tm.waiting())
				require.Contains(t, screen(tm), "sending the decision…")
				_, again := tm.Update(key(tt.key)) // one decision at a time
				require.Nil(t, again)
				msg := cmd()
				require.IsType(t, decidedMsg{}, msg)
				tm.Update(msg)
				// Refused: the run still waits, and the error shows.
				require.False(t, tm.deciding)
				require.True(t, tm.waiting())
				require.Contains(t, screen(tm), "! "+tt.wantError)
			default:
				require.Nil(t, cmd)
			}
		})
	}
}

// TestTUIModelDecisions answers the human check of a real demo run with
// the keys: the manager resumes the run, which goes on or ends.
func TestTUIModelDecisions(t *testing.T) {
	tests := []struct {
		key        string
		wantStatus runs.Status
		wantLine   string
	}{
		{"a", runs.StatusAchieved, "■ run ended: achieved — shell: grep -qx 'Hello, World!' greeting.txt exited 0"},
		{"x", runs.StatusAborted, "■ run ended: aborted — aborted by a human at iteration 1"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			m := newTestManager(t)
			run, err := createRun(t.Context(), m, runs.Config{Goal: samples.Shell, Model: demoPrefix + samples.Shell, HITL: true}, samples.Shell)
			require.NoError(t, err)
			sub := m.Bus().Subscribe(t.Context(), events.FilterRunIDs(run.ID), events.QueueSize(1<<14))
			next, stop := iter.Pull2(sub.Events())
			defer stop()
			tm := newTUIModel(t.Context(), &decider{m: m}, run, m.DB(), nil)
			// feed gives the model the run's events up to one of kind.
			feed := func(kind events.Kind) {
				t.Helper()
				for {
					ev, err, ok := next()
					require.True(t, ok, "the events ended before %s", kind)
					require.NoError(t, err)
					_, cmd := tm.Update(eventMsg{ev})
					require.Nil(t, cmd)
					if ev.Kind() == kind {
						return
					}
				}
			}

			require.NoError(t, m.Start(t.Context(), run.ID))
			feed(retrai.KindHumanCheck)
			require.True(t, tm.waiting())
			require.Contains(t, screen(tm), "[a] approve  [x] abort  [q] quit")
			waiting, err := m.Get(t.Context(), run.ID)
			require.NoError(t, err)
			require.Equal(t, runs.StatusWaiting, waiting.Status)

			_, cmd := tm.Update(key(tt.key))
			require.NotNil(t, cmd)
			msg := cmd() // the manager resumes the run
			require.Equal(t, decidedMsg{decision: map[string]string{"a": runs.DecisionApprove, "x": runs.DecisionAbort}[tt.key], seq: 1}, msg)
			tm.Update(msg)
			require.False(t, tm.waiting())
			require.Empty(t, tm.errText)

			feed(runs.KindEnded)
			require.Equal(t, string(tt.wantStatus), tm.status)
			require.True(t, tm.ended)
			require.Contains(t, screen(tm), tt.wantLine)
			final, err := m.Wait(t.Context(), run.ID)
			require.NoError(t, err)
			require.Equal(t, tt.wantStatus, final.Status)
		})
	}
}

// TestTUICommand runs `retrai tui` as a program whose keyboard and screen
// are pipes and buffers.
func TestTUICommand(t *testing.T) {
	isolate(t)
	allowTUIWithoutTerminal(t)
	db := filepath.Join(t.TempDir(), "r.db")
	keys, typing := io.Pipe()
	defer typing.Close()
	var out lockedBuffer
	var errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli(t.Context(), []string{"tui", "--hitl", "--goal", samples.Shell, "--db", db}, keys, &out, &errOut)
	}()

	out.waitFor(t, regexp.MustCompile(`\[a\] approve  \[x\] abort  \[q\] quit`))
	require.Contains(t, out.String(), "The model is SCRIPTED")
	_, err := io.WriteString(typing, "a")
	require.NoError(t, err)
	out.waitFor(t, regexp.MustCompile(`■ run ended: achieved`))
	_, err = io.WriteString(typing, "q")
	require.NoError(t, err)
	require.Equal(t, exitAchieved, <-done, "stderr: %s", errOut.String())
	text := out.String()
	require.Contains(t, text, "human: approved, going on")
	require.Contains(t, text, "✓ GOAL ACHIEVED after 2 iteration(s)")
	id := runIDRe.FindStringSubmatch(text)[1]

	// Resuming the achieved run only summarises it.
	code, summary, _ := runCLI(t, "", "tui", "--resume", id, "--db", db)
	require.Equal(t, exitAchieved, code)
	require.Contains(t, summary, "has already ended (achieved)")
}

// TestTUICommandResumesAWaitingRun answers, with `retrai tui --resume`,
// the human check of a run that `retrai run` left waiting.
func TestTUICommandResumesAWaitingRun(t *testing.T) {
	isolate(t)
	allowTUIWithoutTerminal(t)
	db := filepath.Join(t.TempDir(), "r.db")
	code, out, _ := runCLI(t, "", "run", "--hitl", "--goal", samples.Shell, "--db", db)
	require.Equal(t, exitNotDone, code)
	id := runIDRe.FindStringSubmatch(out)[1]

	keys, typing := io.Pipe()
	defer typing.Close()
	var screen, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli(t.Context(), []string{"tui", "--resume", id, "--db", db}, keys, &screen, &errOut)
	}()
	screen.waitFor(t, regexp.MustCompile(`\[a\] approve  \[x\] abort  \[q\] quit`))
	_, err := io.WriteString(typing, "x")
	require.NoError(t, err)
	screen.waitFor(t, regexp.MustCompile(`■ run ended: aborted`))
	_, err = io.WriteString(typing, "q")
	require.NoError(t, err)
	require.Equal(t, exitNotDone, <-done, "stderr: %s", errOut.String())
	require.Contains(t, screen.String(), "■ ABORTED by a human after 1 iteration(s)")
}

func TestTUIUsage(t *testing.T) {
	tests := []struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		{[]string{"tui", "-h"}, exitAchieved, "Usage: retrai tui [flags]"},
		{[]string{"tui", "now"}, exitUsage, "retrai tui: unexpected arguments"},
		{[]string{"tui", "--goal", "cargo-test"}, exitUsage, `no "cargo-test" sample`},
		{[]string{"tui", "--resume", "nope", "--db", "DB"}, exitNotDone, "run not found"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			isolate(t)
			allowTUIWithoutTerminal(t)
			for i, a := range tt.args {
				if a == "DB" {
					tt.args[i] = filepath.Join(t.TempDir(), "r.db")
				}
			}
			code, _, errOut := runCLI(t, "", tt.args...)
			require.Equal(t, tt.wantCode, code, errOut)
			require.Contains(t, errOut, tt.wantErr)
		})
	}
}

// allowTUIWithoutTerminal lets `retrai tui` run on the pipes and buffers
// of the test.
func allowTUIWithoutTerminal(t *testing.T) {
	t.Helper()
	tuiNeedsTerminal = false
	t.Cleanup(func() { tuiNeedsTerminal = true })
}

// TestTUIWithoutATerminal: without a terminal `retrai tui` says so, and
// records no run.
func TestTUIWithoutATerminal(t *testing.T) {
	home := isolate(t)
	code, out, errOut := runCLI(t, "", "tui", "--goal", samples.Shell)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "retrai tui: needs a terminal")
	require.Contains(t, errOut, "Use retrai run")
	require.Empty(t, out)
	require.NoFileExists(t, filepath.Join(home, ".retrai", "retrai.db"), "no database, so no run record")
}

// TestRenderShowsProgress: the stuck hint counts the iterations without
// progress, and the model's waits and back-offs are shown.
func TestRenderShowsProgress(t *testing.T) {
	ev := func(data events.Payload) events.Event { return events.Event{RunID: "r", Data: data} }
	check := retrai.GoalCheck{Iteration: 1, Reason: "1 failing", Stuck: 9, TotalTokens: 120}
	tests := []struct {
		name string
		ev   events.Event
		want string
	}{
		{"a goal check", ev(check), "  goal ✗ not yet: 1 failing\n  iteration 1 done · 120 tokens so far\n"},
		{"progress", ev(runs.Progress{Iteration: 1}), ""},
		{"two iterations without progress", ev(runs.Progress{Iteration: 1, NoProgress: 2}), ""},
		{"three iterations without progress", ev(runs.Progress{Iteration: 1, NoProgress: 3}),
			"  ! no progress for 3 iterations: no file changed and the check result stayed the same\n"},
		{"a first attempt", ev(runs.ModelProgress{State: "attempt", Attempt: 1, MaxAttempts: 4}), "  … waiting for the model\n"},
		{"the first byte", ev(runs.ModelProgress{State: "first_byte", Attempt: 1, MaxAttempts: 4}), ""},
		{"a retry", ev(runs.ModelProgress{State: "retry_wait", Attempt: 1, MaxAttempts: 4, Reason: "server_error", StatusCode: 503, DelayMS: 1500}),
			"  ! model server error (HTTP 503): retrying in 1.5s (attempt 1 of 4 failed)\n"},
		{"giving up", ev(runs.ModelProgress{State: "gave_up", Attempt: 2, MaxAttempts: 4, Reason: "other", StatusCode: 400, Error: "bad request"}),
			"  ! model failed (HTTP 400): gave up after attempt 2 of 4: bad request\n"},
		{"the baseline", ev(retrai.BaselineRecorded{Summary: "go-test: 1 of 3 tests failed"}), "  baseline: go-test: 1 of 3 tests failed\n"},
		{"a failed tool call", ev(events.ToolResult{ID: "c1", Name: "bash_exec", Result: "Error: bash_exec is not a valid tool"}),
			"  ✗ bash_exec  → Error: bash_exec is not a valid tool\n"},
		{"a model answer without text", ev(events.ModelCall{ToolCalls: 2, TotalTokens: 10}), ""},
		{"a fallback to no sandbox", ev(events.SandboxWarning{Mode: "auto", Reason: "bwrap (package bubblewrap) is not installed"}),
			"  ! WARNING: commands are NOT sandboxed (sandbox auto: bwrap (package bubblewrap) is not installed)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			newRenderer(&b, 10).render(tt.ev)
			require.Equal(t, tt.want, b.String())
		})
	}
	require.Equal(t, "model rate limited (HTTP 429), retrying in 2s…", modelStatus(runs.ModelProgress{
		State: "retry_wait", Reason: "rate_limited", StatusCode: 429, DelayMS: 2000}))
	require.Equal(t, "waiting for the model…", modelStatus(runs.ModelProgress{State: "attempt"}))
}
