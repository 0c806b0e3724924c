package codur

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// delegate is the "delegate" node: it settles the agent (the default one
// when none was selected) and reports the hand-over.
func (a *agent) delegate(ctx context.Context, s State) (State, error) {
	ref := s.SelectedAgent.Get()
	if ref == "" {
		ref = a.cfg.defaultAgent
	}
	graph.StreamWriter(ctx)(Decision{Phase: Phase(DelegateNode), Action: ActionDelegate, Agent: ref})
	return State{SelectedAgent: state.Set(ref)}, nil
}

// UnknownAgentError is returned when the selected agent is not registered.
type UnknownAgentError struct{ Ref string }

// Error implements error.
func (e *UnknownAgentError) Error() string {
	return fmt.Sprintf("codur: no agent %q in the registry", e.Ref)
}

// execute is the "execute" node: it runs the agent with the tool loop.
func (a *agent) execute(ctx context.Context, s State) (State, error) {
	ref := s.SelectedAgent.Get()
	ag, ok := a.reg.Get(ref)
	if !ok {
		return State{}, &UnknownAgentError{Ref: ref}
	}
	if _, ok := ag.(Autonomous); ok {
		return a.executeAutonomous(ctx, ref, ag, s)
	}
	sys := fill(a.cfg.prompts.Agent, map[string]string{"workspace": a.cfg.dir, "tools": toolDescriptions(a.tools)})
	res, err := a.toolLoop(ctx, ref, ag, append([]state.Message{state.System(sys)}, s.Messages.List()...))
	if err != nil {
		return State{}, fmt.Errorf("codur: %s: agent %s: %w", ExecuteNode, ref, err)
	}
	out := State{AgentOutput: state.Set(res.Answer), Tokens: state.Delta(res.Tokens)}
	if res.ToolResults != "" {
		out.Messages.Append(state.Human("Tool results of your last attempt:\n" + res.ToolResults))
	}
	out.Messages.Append(state.AI(res.Answer))
	return out, nil
}

// executeAutonomous runs an [Autonomous] agent once, on the task, the
// planner's step and the last verification failure; its output is its
// answer, never searched for tool calls. A CLI that timed out is not an
// error of the run: its partial output is the answer, and the review
// checks what it did to the workspace.
func (a *agent) executeAutonomous(ctx context.Context, ref string, ag Agent, s State) (State, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Task: %s", s.Task.Get())
	if plan := strings.TrimSpace(s.Plan.Get()); plan != "" {
		fmt.Fprintf(&b, "\n\nPlan: %s", plan)
	}
	if a.cfg.dir != "" {
		fmt.Fprintf(&b, "\n\nWork in the current directory (the workspace); make the changes yourself.")
	}
	msgs := s.Messages.List()
	for i := len(msgs) - 1; i > 0; i-- {
		if t := msgs[i].Text(); msgs[i].Role == llms.ChatMessageTypeHuman && strings.HasPrefix(t, VerificationHeader) {
			fmt.Fprintf(&b, "\n\n%s", t)
			break
		}
	}
	graph.StreamWriter(ctx)(ToolRound{Agent: ref, Round: 1})
	reply, err := ag.Run(ctx, Request{Messages: []state.Message{state.Human(b.String())}, Dir: a.cfg.dir})
	var answer string
	var ce *CLIError
	switch {
	case err == nil:
		answer = strings.TrimSpace(reply.Message.Text())
	case errors.As(err, &ce) && ce.TimedOut && ctx.Err() == nil:
		answer = strings.TrimSpace(ce.Output + fmt.Sprintf("\n[the agent was stopped at its time limit of %s; the above is what it wrote until then]", ce.Timeout))
	default:
		return State{}, fmt.Errorf("codur: %s: agent %s: %w", ExecuteNode, ref, err)
	}
	out := State{AgentOutput: state.Set(answer)}
	if reply != nil {
		u := reply.Usage
		out.Tokens = state.Delta(max(u.TotalTokens, u.PromptTokens+u.CompletionTokens))
	}
	out.Messages.Append(state.AI(answer))
	return out, nil
}

// loopResult is the outcome of [agent.toolLoop].
type loopResult struct {
	// Answer is the text of the agent's last answer.
	Answer string
	// Rounds is how many rounds of tool calls ran.
	Rounds int
	// ToolResults are the results of the calls run, as text.
	ToolResults string
	// Tokens is the agents' token usage.
	Tokens int
	// LimitReached reports an answer whose calls were not run because the
	// loop had run its rounds.
	LimitReached bool
}

// toolLoop runs ag on msgs: while its answer has tool calls (native, or
// written in its text when text detection is on) and fewer than the
// configured rounds ran, the calls run and their results are given back.
func (a *agent) toolLoop(ctx context.Context, ref string, ag Agent, msgs []state.Message) (loopResult, error) {
	var res loopResult
	var results []string
	for round := 1; ; round++ {
		reply, err := ag.Run(ctx, Request{Messages: msgs, Tools: a.defs, Dir: a.cfg.dir})
		if err != nil {
			return res, err
		}
		u := reply.Usage
		res.Tokens += max(u.TotalTokens, u.PromptTokens+u.CompletionTokens)
		msg := reply.Message
		res.Answer = strings.TrimSpace(msg.Text())
		var native []llms.ToolCall
		for _, c := range msg.ToolCalls() {
			if c.FunctionCall != nil {
				native = append(native, c)
			}
		}
		var calls []ToolCall
		format := ""
		if len(native) > 0 {
			format = FormatNative
			for _, c := range native {
				calls = append(calls, ToolCall{Tool: c.FunctionCall.Name, Args: c.FunctionCall.Arguments})
			}
		} else if a.cfg.textCalls {
			calls, format = a.detect.Detect(msg.Text())
			if len(calls) == 0 && a.cfg.extractCalls && a.detect.Mentions(msg.Text()) {
				var tokens int
				calls, tokens, err = a.extractCalls(ctx, msg.Text())
				if err != nil {
					return res, err
				}
				res.Tokens += tokens
				if len(calls) > 0 {
					format = FormatExtracted
				}
			}
		}
		ev := ToolRound{Agent: ref, Round: round, Format: format, Tools: callNames(calls)}
		if len(calls) == 0 {
			graph.StreamWriter(ctx)(ev)
			res.ToolResults = strings.Join(results, "\n")
			return res, nil
		}
		if round > a.cfg.maxToolRounds {
			ev.LimitReached = true
			graph.StreamWriter(ctx)(ev)
			res.LimitReached = true
			res.ToolResults = strings.Join(results, "\n")
			return res, nil
		}
		graph.StreamWriter(ctx)(ev)
		res.Rounds = round
		outputs := a.runCalls(ctx, calls)
		msgs = append(msgs, msg)
		if format == FormatNative {
			for i, c := range native {
				msgs = append(msgs, state.Tool(c.ID, c.FunctionCall.Name, outputs[i]))
			}
		} else {
			msgs = append(msgs, state.Human("Tool results:\n"+formatResults(calls, outputs)))
		}
		kept := make([]string, len(outputs))
		for i, o := range outputs {
			kept[i] = clipChars(o, maxKeptToolOutput)
		}
		results = append(results, formatResults(calls, kept))
	}
}

// maxKeptToolOutput bounds each tool output kept in the conversation
// after the execution (the agent saw it whole during its tool loop).
const maxKeptToolOutput = 2000

// clipChars keeps the first n runes of s, saying how many were cut.
func clipChars(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + fmt.Sprintf("\n… [%d more characters]", len(r)-n)
}

// extractCalls asks the planner model for the tool calls an agent's answer
// describes in words ("I'll read main.py with file_read").
func (a *agent) extractCalls(ctx context.Context, answer string) ([]ToolCall, int, error) {
	sys := fill(a.cfg.prompts.Extract, map[string]string{"tools": toolDescriptions(a.tools)})
	text, tokens, err := a.callPlanner(ctx, []state.Message{state.System(sys), state.Human(answer)})
	if err != nil {
		return nil, 0, fmt.Errorf("tool call extraction: %w", err)
	}
	return a.detect.fromJSON(text), tokens, nil
}

// runCalls runs calls one after the other (they may depend on each other:
// write, then read) and returns their outputs; a failure is an output
// too, for the agent to read.
func (a *agent) runCalls(ctx context.Context, calls []ToolCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		id := fmt.Sprintf("codur_%d", i+1)
		graph.StreamWriter(ctx)(events.ToolCall{ID: id, Name: c.Tool, Args: c.Args})
		name := c.Tool
		if canon, ok := a.detect.Resolve(name); ok {
			name = canon
		}
		text, err := a.set.Call(ctx, name, json.RawMessage(c.Args))
		if err != nil {
			text = "error: " + err.Error()
		}
		out[i] = text
		graph.StreamWriter(ctx)(events.ToolResult{ID: id, Name: c.Tool, Result: text})
	}
	return out
}

func formatResults(calls []ToolCall, outputs []string) string {
	var b strings.Builder
	for i, c := range calls {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[%s %s]\n%s", c.Tool, c.Args, outputs[i])
	}
	return b.String()
}

// runTools is the "tool" node: it runs the calls a planning phase asked
// for.
func (a *agent) runTools(ctx context.Context, s State) (State, error) {
	calls := s.ToolCalls.Get()
	text := formatResults(calls, a.runCalls(ctx, calls))
	var out State
	out.AgentOutput = state.Set(text)
	out.Messages.Append(state.AI(text))
	return out, nil
}

// review is the "review" node. It first puts back the protected files
// (the expected outputs) an agent changed, and says so in the
// conversation; then it verifies, repairs, and loops or ends.
func (a *agent) review(ctx context.Context, s State) (State, error) {
	it := s.Iterations.Get() + 1
	out := State{Iterations: state.Set(it)}
	v := a.cfg.verifier
	var restored []string
	if v != nil {
		var err error
		if restored, err = v.Restore(); err != nil {
			return State{}, fmt.Errorf("codur: %s: %w", ReviewNode, err)
		}
		for _, p := range restored {
			out.Restored.Append(p)
		}
	}
	if v == nil || !shouldVerify(s) {
		if s.FinalResponse.Get() == "" {
			out.FinalResponse = state.Set(s.AgentOutput.Get())
		}
		return decide(ctx, Decision{Phase: PhaseReview, Action: ActionEnd, Reason: "nothing to verify"}, out), nil
	}
	res, err := v.Run(ctx)
	if err != nil {
		return State{}, fmt.Errorf("codur: %s: %w", ReviewNode, err)
	}
	ev := Verification{Iteration: it, Passed: res.Passed, Case: res.Case, Hidden: res.Hidden, Actual: res.Actual, ExitCode: res.ExitCode,
		Runs: res.Runs, Restored: restored}
	if res.TimedOut {
		ev.TimedOut = res.Timeout
	}
	if !res.Hidden {
		ev.Expected = res.Expected
	}
	graph.StreamWriter(ctx)(ev)
	if res.Passed {
		out.Verified = state.Set(true)
		out.Solved = state.Set(a.solution(s, it))
		out.FinalResponse = state.Set(s.AgentOutput.Get())
		return decide(ctx, Decision{Phase: PhaseReview, Action: ActionEnd, Reason: "verification passed"}, out), nil
	}
	name, tried, searched, err := a.repair(ctx, v, res, s.AgentOutput.Get(), s.RepairSearched.Get())
	if err != nil {
		return State{}, fmt.Errorf("codur: %s: %w", ReviewNode, err)
	}
	out.RepairSearched = state.Set(searched)
	if name != "" {
		out.Verified = state.Set(true)
		out.Repairs.Append(name)
		out.Solved = state.Set(Solution{By: SolvedByRepair, Iteration: it, Phase: s.DecidedBy.Get(), Repair: name})
		out.FinalResponse = state.Set("Fixed by the local repair " + name + ".")
		return decide(ctx, Decision{Phase: PhaseReview, Action: ActionEnd, Reason: fmt.Sprintf("local repair %s fixed it (%d candidates tried)", name, tried)}, out), nil
	}
	msg := a.verificationMessage(v, res, s.Failures.Get(), it, restored)
	out.Failures.Append(firstLine(res))
	out.Verified = state.Set(false)
	out.Messages.Overwrite(a.cfg.pruning.Prune(append(s.Messages.List(), state.Human(msg))))
	if it >= a.cfg.maxIterations {
		out.FinalResponse = state.Set(fmt.Sprintf("Gave up after %d iterations: %s.", it, failureSummary(res)))
		return decide(ctx, Decision{Phase: PhaseReview, Action: ActionEnd, Reason: fmt.Sprintf("iteration limit of %d reached", a.cfg.maxIterations)}, out), nil
	}
	return decide(ctx, Decision{Phase: PhaseReview, Action: ActionContinue, Reason: "verification failed: " + failureSummary(res)}, out), nil
}

// failureSummary says in a few words why a verification failed: a
// timeout with its limit, or an output mismatch (of which case).
func failureSummary(res Outcome) string {
	what := "the output does not match"
	if res.TimedOut {
		what = fmt.Sprintf("the program timed out (time limit %s)", res.Timeout)
	} else if res.ExitCode != 0 {
		what = fmt.Sprintf("the program failed with exit status %d", res.ExitCode)
	}
	switch {
	case res.Hidden:
		what += " on hidden case " + res.Case
	case res.Case != "":
		what += " on case " + res.Case
	}
	return what
}

// solution attributes the passing verification of iteration it to what
// routed it: the agent delegated to, a model planning phase's tool calls,
// or the textual pre-plan's.
func (a *agent) solution(s State, it int) Solution {
	phase := s.DecidedBy.Get()
	sol := Solution{Iteration: it, Phase: phase}
	switch {
	case s.NextAction.Get() == ActionTool && phase == PhaseTextual:
		sol.By = SolvedByPrePlan
	case s.NextAction.Get() == ActionTool:
		sol.By = SolvedByPlanner
	default:
		sol.By, sol.Agent = SolvedByAgent, s.SelectedAgent.Get()
	}
	return sol
}

// shouldVerify reports whether the review checks the program (the review
// has a verifier, so the workspace has an expected output): always, but
// for an explicit file operation resolved by a pre-plan phase ("move A to
// B") on a run not asked to verify (State.Verify) — that one is not
// checked (nor repaired), even if a failing program lies in the
// workspace. Whatever the task's wording, a run that went through the
// planner or an agent is verified.
func shouldVerify(s State) bool {
	if s.Verify.Get() {
		return true
	}
	switch s.DecidedBy.Get() {
	case PhaseTextual, PhasePrePlan:
		return s.NextAction.Get() != ActionTool
	}
	return true
}

// repair runs the local repair search, the patterns hint (the agent's
// answer) points at first; it returns the name of the repair that made
// the output match, which is then written to the program, or "" with the
// program unchanged, and the digest of the program searched. A program
// whose digest is skip — the one an earlier review searched in vain — is
// not searched again. The candidates only ever run in a scratch copy (see
// newScratch): the user's program is written once, atomically, with the
// candidate that passed — an interrupted search leaves it as it was. A
// workspace too large to copy, even the program's own directory, is not
// searched (the event says so). The program is read and written through
// an os.Root on the directory, and only when it is a regular file with
// one link: an agent that replaced it with a symlink or a hard link to a
// file elsewhere does not get that file rewritten.
func (a *agent) repair(ctx context.Context, v *Verifier, failed Outcome, hint, skip string) (name string, tried int, digest string, err error) {
	if a.cfg.repairBudget == 0 || len(a.cfg.repairs) == 0 || v.Program == "" {
		return "", 0, "", nil
	}
	orig, mode, root, ok := readProgram(v)
	if !ok {
		return "", 0, "", nil // nothing safe to repair
	}
	defer root.Close()
	sum := sha256.Sum256(orig)
	digest = hex.EncodeToString(sum[:])
	if digest == skip {
		graph.StreamWriter(ctx)(RepairAttempted{Skipped: "the program is unchanged since the last search, which found no repair"})
		return "", 0, digest, nil
	}
	name, tried, err = a.searchRepairs(ctx, v, failed, orig, mode, root, hint)
	return name, tried, digest, err
}

// searchRepairs runs the candidates of orig in a scratch copy, up to the
// first that passes, which it writes to the program in root. A candidate
// has repairRunTimeout, or three times the failed verification's run when
// that took longer (a compiled program on a loaded machine), within the
// verifier's own limit. When the program itself ran over its time limit,
// the search stops after maxTimedOutCandidates candidates did too.
func (a *agent) searchRepairs(ctx context.Context, v *Verifier, failed Outcome, orig []byte, mode os.FileMode, root *os.Root, hint string) (string, int, error) {
	sc, err := newScratch(v)
	if errors.Is(err, ErrWorkspaceTooLarge) {
		graph.StreamWriter(ctx)(RepairAttempted{Skipped: "the workspace is too large for a scratch copy, and the user's files are never mutated in place"})
		return "", 0, nil
	} else if err != nil {
		return "", 0, err
	}
	defer sc.Close()
	scratchRoot, err := os.OpenRoot(sc.Dir)
	if err != nil {
		return "", 0, err
	}
	defer scratchRoot.Close()
	cands := Candidates(string(orig), HintedRepairs(a.cfg.repairs, hint), a.cfg.repairBudget)
	limit := v.Timeout
	if limit <= 0 {
		limit = DefaultVerifyTimeout
	}
	timeout := min(max(repairRunTimeout, 3*failed.Duration), limit)
	deadline := time.Now().Add(a.cfg.repairTime)
	timedOut := 0
	for i, c := range cands {
		if left := time.Until(deadline); left <= 0 {
			graph.StreamWriter(ctx)(RepairAttempted{Tried: i, Partial: sc.Partial, OutOfTime: a.cfg.repairTime})
			return "", i, nil
		} else if left < timeout {
			timeout = left
		}
		if err := scratchRoot.WriteFile(v.Program, []byte(c.Source), mode); err != nil {
			return "", i, err
		}
		res, err := v.runIn(ctx, sc.Dir, timeout)
		if err != nil {
			return "", i + 1, err
		}
		if res.TimedOut && failed.TimedOut {
			if timedOut++; timedOut == maxTimedOutCandidates {
				graph.StreamWriter(ctx)(RepairAttempted{Tried: i + 1, Partial: sc.Partial, Skipped: fmt.Sprintf("%d candidates ran over their time limit of %s: the search stopped", timedOut, timeout)})
				return "", i + 1, nil
			}
		}
		if res.Passed {
			if err := writeAtomic(root, v.Program, []byte(c.Source), mode); err != nil {
				return "", i + 1, err
			}
			graph.StreamWriter(ctx)(RepairAttempted{Tried: i + 1, Fixed: c.Name, Partial: sc.Partial})
			return c.Name, i + 1, nil
		}
	}
	graph.StreamWriter(ctx)(RepairAttempted{Tried: len(cands), Partial: sc.Partial})
	return "", len(cands), nil
}

// writeAtomic replaces name in root with data: written to a temporary
// file beside it, then renamed over it, so that it is never seen half
// written.
func writeAtomic(root *os.Root, name string, data []byte, mode os.FileMode) error {
	tmp := filepath.Join(filepath.Dir(name), fmt.Sprintf(".%s.codur-%d", filepath.Base(name), time.Now().UnixNano()))
	if err := root.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		return errors.Join(err, root.Remove(tmp))
	}
	return nil
}

// maxProgramBytes bounds the program the review reads.
const maxProgramBytes = 1 << 20

// readProgram reads the verifier's program through an os.Root on its
// directory; ok is false when it is missing, not a regular file, has
// several links, or is too large. The caller closes root.
func readProgram(v *Verifier) (data []byte, mode os.FileMode, root *os.Root, ok bool) {
	root, err := os.OpenRoot(v.Dir)
	if err != nil {
		return nil, 0, nil, false
	}
	fi, err := root.Lstat(v.Program)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxProgramBytes || linkCount(fi) > 1 {
		root.Close()
		return nil, 0, nil, false
	}
	data, err = root.ReadFile(v.Program)
	if err != nil {
		root.Close()
		return nil, 0, nil, false
	}
	return data, fi.Mode().Perm(), root, true
}

// repairRunTimeout bounds one run of a repair candidate: a mutation can
// make a loop endless.
const repairRunTimeout = 5 * time.Second

// maxTimedOutCandidates stops the repair search of a program that ran
// over its time limit once that many candidates did too: its loop is most
// likely endless whatever the mutation.
const maxTimedOutCandidates = 3

// maxMessageLines bounds each section of the verification message.
const maxMessageLines = 30

// verificationMessage builds the message that starts the next iteration.
// A hidden case's input and expected output are not in it.
func (a *agent) verificationMessage(v *Verifier, res Outcome, earlier []string, it int, restored []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (attempt %d of %d): %s.\n\n", VerificationHeader, it, a.cfg.maxIterations, failureSummary(res))
	if len(restored) > 0 {
		fmt.Fprintf(&b, "=== Protected Files ===\nYou changed %s; the original was put back. The expected output is fixed: change the program, never the expected output.\n\n", strings.Join(restored, ", "))
	}
	switch {
	case res.Hidden:
		fmt.Fprintf(&b, "=== Hidden Case %s ===\nThe program passed the visible run but not this case, whose input and expected output are not shown: make the program correct for every input, not for the one shown.\n\n", res.Case)
	default:
		if res.Case != "" {
			fmt.Fprintf(&b, "=== Case %s ===\nArguments: %q\n\n", res.Case, v.caseArgs(res.Case))
		}
		fmt.Fprintf(&b, "=== Expected Output ===\n%s\n\n", clipLines(res.Expected))
		fmt.Fprintf(&b, "=== Actual Output ===\n%s\n\n", clipLines(res.Actual))
	}
	if res.TimedOut {
		fmt.Fprintf(&b, "=== Timeout ===\nThe program was killed after its time limit of %s: look for a loop that never ends or a read that waits for input.\n\n", res.Timeout)
	} else if strings.TrimSpace(res.Stderr) != "" || res.ExitCode != 0 {
		fmt.Fprintf(&b, "=== Error/Exception (exit status %d) ===\n%s\n\n", res.ExitCode, clipLines(res.Stderr))
	}
	if code, _, root, ok := readProgram(v); ok {
		root.Close()
		lang := strings.TrimPrefix(filepath.Ext(v.Program), ".")
		if lang == "py" {
			lang = "python"
		}
		if len(code) <= 8000 {
			fmt.Fprintf(&b, "=== Current Implementation (%s) ===\n```%s\n%s\n```\n\n", v.Program, lang, strings.TrimRight(string(code), "\n"))
		}
	}
	if len(earlier) > 0 {
		b.WriteString("=== Earlier Failed Attempts ===\n")
		for _, f := range earlier[max(0, len(earlier)-5):] {
			fmt.Fprintf(&b, "- %s\n", strings.TrimSpace(f))
		}
		b.WriteString("\n")
	}
	b.WriteString("=== Action ===\nAnalyze the failure and fix the implementation. Do not repeat an earlier attempt.")
	return b.String()
}

// caseArgs returns the arguments of the case name.
func (v *Verifier) caseArgs(name string) []string {
	for _, c := range v.Cases {
		if c.Name == name {
			return c.Args
		}
	}
	return nil
}

// firstLine summarises a failure for the list of attempts.
func firstLine(res Outcome) string {
	if res.TimedOut || res.Hidden {
		return failureSummary(res)
	}
	prefix := ""
	if res.Case != "" {
		prefix = "case " + res.Case + ": "
	}
	exp, act := strings.Split(normalizeOutput(res.Expected), "\n"), strings.Split(normalizeOutput(res.Actual), "\n")
	for i := 0; i < max(len(exp), len(act)); i++ {
		var e, g string
		if i < len(exp) {
			e = exp[i]
		}
		if i < len(act) {
			g = act[i]
		}
		if e != g {
			return fmt.Sprintf("%sline %d: expected %q, got %q (exit status %d)", prefix, i+1, e, g, res.ExitCode)
		}
	}
	return fmt.Sprintf("%sexit status %d", prefix, res.ExitCode)
}

// clipLines keeps the first maxMessageLines lines of s.
func clipLines(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "(empty)"
	}
	lines := strings.Split(s, "\n")
	if len(lines) <= maxMessageLines {
		return s
	}
	return strings.Join(lines[:maxMessageLines], "\n") + fmt.Sprintf("\n… (%d more lines)", len(lines)-maxMessageLines)
}
