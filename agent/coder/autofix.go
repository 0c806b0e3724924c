package coder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentgraph/agentgraph/agent/internal/modeljson"
	"github.com/agentgraph/agentgraph/agent/internal/prompt"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// maxFailureChars bounds a test failure in a prompt or an answer.
const maxFailureChars = 3000

// EditPlan is the JSON answer the edit prompt accepts from a model that
// does not call tools.
type EditPlan struct {
	// Edits are the edits, in order.
	Edits []PlannedEdit `json:"edits"`
	// Summary says what they change.
	Summary string `json:"summary"`
}

// PlannedEdit is one edit of an [EditPlan]: a patch (OldText → NewText)
// or, with Content set, a whole-file write.
type PlannedEdit struct {
	Path    string  `json:"path"`
	OldText string  `json:"old_text,omitempty"`
	NewText string  `json:"new_text,omitempty"`
	Content *string `json:"content,omitempty"`

	bad string // why a tool call's arguments could not be read
}

// edit is the "edit" node: one attempt of the auto-fix loop.
func (a *Agent) edit(ctx context.Context, s State) (State, error) {
	var out State
	attempt := s.Attempt.Get() + 1
	out.Attempt.Set(attempt)
	out.Activity.Set(fmt.Sprintf("edit attempt %d of %d", attempt, a.cfg.maxAttempts))
	req := s.Request.Get()

	targets := s.Files.Get()
	if attempt == 1 {
		m := a.mentions(req)
		if len(m.outside) > 0 {
			a.refuse(ctx, &out, s, EditNode, IntentEdit, m.outside)
			return out, nil
		}
		// A file the request names but that does not exist yet is one to
		// create.
		var err error
		if targets, err = a.chooseFiles(ctx, &out, s, unique(m.existing, m.missing)); err != nil {
			return State{}, err
		}
	}
	// Re-read the files from disk at every attempt (not from the cache).
	var existing []string
	for _, f := range targets {
		if _, err := a.fileStat(f); err == nil {
			existing = append(existing, f)
		}
	}
	contents, _ := a.readFiles(ctx, s, &out, EditNode, existing, false)
	if err := ctx.Err(); err != nil {
		return State{}, err
	}

	prefs, _ := a.preferencesSection(ctx, &out, EditNode, req)
	attemptsText, hint := "", ""
	if prev := s.Attempts.Get(); len(prev) > 0 {
		var b strings.Builder
		b.WriteString("\nPrevious attempts failed:\n")
		for _, p := range prev {
			fmt.Fprintf(&b, "\nAttempt %d", p.Attempt)
			if p.Summary != "" {
				fmt.Fprintf(&b, " (%s)", prompt.TruncateHead(p.Summary, 300))
			}
			b.WriteString(":\n")
			for _, e := range p.Edits {
				status := "applied"
				if !e.Applied {
					status = "not applied: " + e.Error
				}
				fmt.Fprintf(&b, "- %s %s: %s\n", e.Kind, e.Path, prompt.TruncateHead(status, 300))
			}
			fmt.Fprintf(&b, "Failure:\n%s\n", truncateMiddle(p.Failure, maxFailureChars))
		}
		attemptsText = b.String()
		if len(prev) >= differentApproachAfter {
			hint = "\n" + prompt.Render(a.cfg.prompts.DifferentApproach, "failed", fmt.Sprint(len(prev)))
		}
	}
	var missingNote string
	for _, f := range targets {
		if _, ok := contents[f]; !ok {
			missingNote += "--- " + f + "\n(does not exist yet)\n"
		}
	}
	question := prompt.TruncateHead(req, a.cfg.maxPromptChars/4)
	base := prompt.Render(a.cfg.prompts.Edit, "preferences", prefs, "listing", "", "files", "", "attempts", attemptsText, "hint", hint)
	listing := prompt.TruncateHead(strings.Join(a.listing(), "\n"), a.cfg.maxPromptChars/10)
	budget := a.cfg.maxPromptChars - len([]rune(base)) - len([]rune(listing)) - len([]rune(question)) - len(missingNote)
	system := prompt.Render(a.cfg.prompts.Edit, "preferences", prefs, "listing", listing,
		"files", filesSection(existing, contents, max(budget, 0))+"\n"+missingNote, "attempts", attemptsText, "hint", hint)
	system = prompt.TruncateHead(system, a.cfg.maxPromptChars-len([]rune(question)))

	out.Activity.Set(fmt.Sprintf("edit attempt %d: ask the model", attempt))
	resp, err := a.generate(ctx, []state.Message{state.System(system), state.Human(question)},
		llm.WithTools(tools.Definitions(a.filePatch, a.fileWrite)))
	if err != nil {
		return State{}, err
	}
	planned, summary := plannedEdits(resp.Message)

	if len(planned) > 0 && !appliedAny(s.Attempts.Get()) {
		// The workspace is as the request found it: record its tests.
		if err := a.takeBaseline(ctx, &out, req); err != nil {
			return State{}, err
		}
	}

	out.Activity.Set(fmt.Sprintf("edit attempt %d: apply", attempt))
	var results []EditResult
	var changed []string
	for _, e := range planned {
		r := a.applyEdit(ctx, &out, e)
		results = append(results, r)
		if r.Applied {
			if rel, ok := a.relPath(e.Path); ok {
				changed = append(changed, rel)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return State{}, err
	}
	out.Edits.Set(results)
	changed = unique(changed)
	out.Files.Set(unique(targets, changed))
	for _, f := range changed {
		out.FileCache.Delete(f)
	}
	if len(changed) > 0 {
		n, err := a.mem.InvalidateFiles(ctx, changed)
		if err != nil {
			note(ctx, &out, "memory", err.Error())
		} else if n > 0 {
			note(ctx, &out, "memory", fmt.Sprintf("invalidated %d cached answer(s) that read %s", n, strings.Join(changed, ", ")))
		}
	}
	if summary == "" {
		summary = describeEdits(results)
	}
	out.Answer.Set(summary)

	hasTests := false
	if a.cfg.autoFix {
		_, hasTests = a.testGoal()
	}
	switch {
	case len(changed) > 0 && hasTests:
		return out, nil // → test
	case len(changed) > 0:
		a.finishFiles(ctx, &out, s, unique(targets, changed), IntentEdit, summary+"\n\n"+describeEdits(results), OutcomeEdited)
		return out, nil
	}
	failure := "no edit could be applied"
	if len(planned) == 0 {
		failure = "the model proposed no edit: " + prompt.TruncateHead(strings.TrimSpace(resp.Message.Text()), 500)
	} else {
		failure += ":\n" + describeEdits(results)
	}
	rec := AttemptRecord{Attempt: attempt, Summary: summary, Edits: results, Failure: failure}
	out.Attempts.Set(append(s.Attempts.Get(), rec))
	setLastError(&out, failure)
	if attempt < a.cfg.maxAttempts {
		return out, nil // → edit again
	}
	outcome := OutcomeNoEdit
	if hasTests {
		outcome = OutcomeTestsFail
	}
	a.finishFiles(ctx, &out, s, targets, IntentEdit, fmt.Sprintf("I could not make this change: after %d attempt(s), %s.", attempt, failure), outcome)
	return out, nil
}

// plannedEdits reads the edits of the model's answer: its file_patch and
// file_write calls, or else the JSON of an EditPlan in its text.
func plannedEdits(m state.Message) ([]PlannedEdit, string) {
	var edits []PlannedEdit
	for _, c := range m.ToolCalls() {
		if c.FunctionCall == nil {
			continue
		}
		switch c.FunctionCall.Name {
		case "file_patch":
			var args tools.FilePatchArgs
			if err := json.Unmarshal([]byte(c.FunctionCall.Arguments), &args); err != nil {
				edits = append(edits, PlannedEdit{Path: args.Path, bad: "file_patch: bad arguments: " + err.Error()})
				continue
			}
			edits = append(edits, PlannedEdit{Path: args.Path, OldText: args.OldText, NewText: args.NewText})
		case "file_write":
			var args tools.FileWriteArgs
			if err := json.Unmarshal([]byte(c.FunctionCall.Arguments), &args); err != nil {
				edits = append(edits, PlannedEdit{Path: args.Path, Content: new(string), bad: "file_write: bad arguments: " + err.Error()})
				continue
			}
			content := args.Content
			edits = append(edits, PlannedEdit{Path: args.Path, Content: &content})
		}
	}
	text := strings.TrimSpace(m.Text())
	if len(edits) > 0 {
		return edits, text
	}
	if plan, err := modeljson.Parse[EditPlan](text); err == nil && len(plan.Edits) > 0 {
		return plan.Edits, strings.TrimSpace(plan.Summary)
	}
	return nil, ""
}

// applyEdit makes one edit with the confined file tools.
func (a *Agent) applyEdit(ctx context.Context, out *State, e PlannedEdit) EditResult {
	r := EditResult{Path: e.Path, Kind: "patch"}
	setCurrentFile(out, e.Path)
	if e.Content != nil {
		r.Kind = "write"
	}
	var err error
	switch {
	case e.bad != "":
		err = errors.New(e.bad)
	case e.Content != nil:
		_, err = a.callTool(ctx, a.fileWrite, e.Path, tools.FileWriteArgs{Path: e.Path, Content: *e.Content})
	default:
		_, err = a.callTool(ctx, a.filePatch, e.Path, tools.FilePatchArgs{Path: e.Path, OldText: e.OldText, NewText: e.NewText})
	}
	if err != nil {
		r.Error = err.Error()
		setLastError(out, err.Error())
		note(ctx, out, "edit", r.Kind+" "+e.Path+": not applied: "+err.Error())
	} else {
		r.Applied = true
		note(ctx, out, "edit", r.Kind+" "+e.Path+": applied")
	}
	return r
}

// relPath returns the workspace-relative path of p, if inside.
func (a *Agent) relPath(p string) (string, bool) {
	abs, err := a.ws.Resolve(p)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(a.ws.Root(), abs)
	if err != nil {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// describeEdits lists edits, one a line.
func describeEdits(rs []EditResult) string {
	if len(rs) == 0 {
		return "No edits."
	}
	var b strings.Builder
	for _, r := range rs {
		if r.Applied {
			fmt.Fprintf(&b, "- %s %s: applied\n", r.Kind, r.Path)
		} else {
			fmt.Fprintf(&b, "- %s %s: not applied (%s)\n", r.Kind, r.Path, prompt.TruncateHead(r.Error, 300))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// testGoal returns the workspace's test goal, detected by goals.Detect
// (go-test, pytest, …); ok is false when the workspace has no tests.
// Goals are kept by name, so that a goal's baseline of a request lasts.
func (a *Agent) testGoal() (goals.Goal, bool) { return a.testGoalOf(false) }

// testGoalOf is testGoal, with goals.Config.AllowTestEdits set to
// allowTestEdits: a baseline it takes then protects the test files, or
// not.
func (a *Agent) testGoalOf(allowTestEdits bool) (goals.Goal, bool) {
	name, _, err := goals.Detect(a.ws.Root())
	if err != nil {
		return nil, false
	}
	key := name
	if allowTestEdits {
		key += "\x00tests editable"
	}
	a.goalMu.Lock()
	defer a.goalMu.Unlock()
	if g, ok := a.goals[key]; ok {
		return g, g != nil
	}
	g, err := goals.New(name, goals.Config{Timeout: a.cfg.testTimeout, TestOptions: a.cfg.toolOpts, AllowTestEdits: allowTestEdits})
	if err != nil {
		a.goals[key] = nil
		return nil, false
	}
	if _, ok := g.(goals.Baseliner); !ok { // not a test goal
		a.goals[key] = nil
		return nil, false
	}
	a.goals[key] = g
	return g, true
}

// appliedAny reports whether an attempt applied an edit.
func appliedAny(attempts []AttemptRecord) bool {
	for _, at := range attempts {
		for _, e := range at.Edits {
			if e.Applied {
				return true
			}
		}
	}
	return false
}

// removesTests matches the requests that ask to delete, rename or skip
// tests: their edits take no baseline, so that the tests they remove do
// not count as failing.
var removesTests = regexp.MustCompile(`(?i)\b(delete|remove|drop|rename|skip|disable)\s+(the\s+|a\s+|an\s+|this\s+|that\s+|these\s+|those\s+|all\s+(the\s+)?)?([\w.-]+\s+){0,2}?(tests?\b|(?-i:Test[A-Z_0-9]))`)

// changesTests matches the requests that ask to write or change tests:
// their baseline leaves the test files unprotected, so that the edits
// asked for do not count as failing. Any other request's baseline
// protects them (see goals.Config.AllowTestEdits): an edit that changes a
// test file — an expected value, an assertion, a test body — fails the
// tests, and the model is told to restore it.
//
// The test must be the verb's object — at most two words after it and
// its determiner, as removesTests reads them — not merely named later in
// the request: "change Sum so that the tests pass" protects them.
var changesTests = regexp.MustCompile(`(?i)\b(add|write|update|change|edit|extend|modify|improve|adjust|rewrite|cover)\s+` +
	`(the\s+|a\s+|an\s+|new\s+|more\s+|some\s+|this\s+|that\s+|these\s+|those\s+|all\s+(the\s+)?)?([\w.-]+\s+){0,2}?` +
	`(tests?\b|testing\b|\S*_test\.\w+|test_\w+|(?-i:Test[A-Z_0-9]))`)

// takeBaseline records the workspace's tests in out.Baseline before a
// request's first edit is applied, when the auto-fix loop will run them
// (replacing the baseline of an earlier request, if any): a later
// test run then fails when a test of the baseline is gone (deleted,
// renamed or skipped) rather than passing without it. A request that
// asks to remove tests takes none (see removesTests); one that asks to
// change tests leaves the test files unprotected (see changesTests). A
// baseline that
// cannot be taken is noted and the loop goes on without one; an error is
// returned only when ctx is done.
func (a *Agent) takeBaseline(ctx context.Context, out *State, req string) error {
	out.Baseline.Set(nil)
	if !a.cfg.autoFix || removesTests.MatchString(req) {
		return nil
	}
	g, ok := a.testGoalOf(changesTests.MatchString(req))
	if !ok {
		return nil
	}
	out.Activity.Set("record the tests before the edit")
	b, err := g.(goals.Baseliner).Baseline(ctx, a.ws.Root())
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		note(ctx, out, "test", "no baseline of the tests before the edit: "+err.Error())
		graph.StreamWriter(ctx)(ToolAction{Tool: "test_baseline", Target: g.Name(), OK: false,
			Result: truncateMiddle(err.Error(), maxToolResultChars)})
		return nil
	}
	out.Baseline.Set(b)
	graph.StreamWriter(ctx)(ToolAction{Tool: "test_baseline", Target: g.Name(), OK: true, Result: b.Summary})
	return nil
}

// runTests runs the workspace's tests, held to baseline when not nil (see
// takeBaseline); ok is false when it has none. An error is returned only
// when ctx is done; a run that cannot start is a failed outcome.
func (a *Agent) runTests(ctx context.Context, s State, attempt int, baseline *goals.Baseline) (TestOutcome, bool, error) {
	g, ok := a.testGoal()
	if !ok {
		return TestOutcome{}, false, nil
	}
	graph.StreamWriter(ctx)(ToolAction{Tool: "run_tests", Target: g.Name(), OK: true, Result: "running"})
	res, err := g.Check(ctx, goals.State{
		RunID:         fmt.Sprintf("%s#%d", s.Thread.Get(), s.Turn.Get()),
		Iteration:     max(attempt, 1),
		MaxIterations: a.cfg.maxAttempts,
		Baseline:      baseline,
	}, a.ws.Root())
	if err != nil {
		if ctx.Err() != nil {
			return TestOutcome{}, true, ctx.Err()
		}
		return TestOutcome{Goal: g.Name(), Reason: "the tests could not run: " + err.Error(),
			Failure: err.Error(), NumFailed: 1}, true, nil
	}
	o := TestOutcome{Goal: g.Name(), Passed: res.Achieved, Reason: res.Reason, TimedOut: res.Details.TimedOut,
		NumPassed: res.Details.Passed, NumFailed: res.Details.Failed}
	if !res.Achieved {
		var b strings.Builder
		for _, f := range res.Details.Failures {
			fmt.Fprintf(&b, "--- %s\n%s\n", f.Name, strings.TrimSpace(f.Output))
		}
		if b.Len() == 0 {
			b.WriteString(strings.TrimSpace(res.Details.Output))
		}
		o.Failure = truncateMiddle(b.String(), maxFailureChars)
	}
	graph.StreamWriter(ctx)(TestRun{Attempt: attempt, MaxAttempts: a.cfg.maxAttempts, TestOutcome: o})
	return o, true, nil
}

// testSummary describes a test run for the user.
func testSummary(o TestOutcome) string {
	if o.Passed {
		return fmt.Sprintf("Tests pass (%s): %s", o.Goal, o.Reason)
	}
	s := fmt.Sprintf("Tests fail (%s): %s", o.Goal, o.Reason)
	if o.Failure != "" {
		s += "\n" + o.Failure
	}
	return s
}

// test is the "test" node: it runs the tests after an edit attempt and
// decides whether to try again.
func (a *Agent) test(ctx context.Context, s State) (State, error) {
	var out State
	attempt := s.Attempt.Get()
	out.Activity.Set(fmt.Sprintf("test attempt %d of %d", attempt, a.cfg.maxAttempts))
	o, ok, err := a.runTests(ctx, s, attempt, s.Baseline.Get())
	if err != nil {
		return State{}, err
	}
	summary := s.Answer.Get()
	if !ok {
		a.finish(ctx, &out, s, IntentEdit, summary+"\n\n"+describeEdits(s.Edits.Get()), OutcomeEdited)
		return out, nil
	}
	out.Tests.Set(&o)
	note(ctx, &out, "test", o.Reason)
	if o.Passed {
		a.finish(ctx, &out, s, IntentEdit, fmt.Sprintf("%s\n\n%s\n\n%s (attempt %d of %d).", summary,
			describeEdits(s.Edits.Get()), testSummary(o), attempt, a.cfg.maxAttempts), OutcomeTestsPass)
		return out, nil
	}
	setLastError(&out, o.Reason)
	rec := AttemptRecord{Attempt: attempt, Summary: summary, Edits: s.Edits.Get(), Failure: o.Reason + "\n" + o.Failure}
	out.Attempts.Set(append(s.Attempts.Get(), rec))
	if attempt < a.cfg.maxAttempts {
		return out, nil // → edit again
	}
	a.finish(ctx, &out, s, IntentEdit, fmt.Sprintf(
		"I could not make the tests pass: they still fail after %d attempt(s), and I stop here. "+
			"The edits of the last attempt are still in place; review them before going on.\n\nLast attempt: %s\n%s\n\n%s",
		attempt, summary, describeEdits(s.Edits.Get()), testSummary(o)), OutcomeTestsFail)
	return out, nil
}
