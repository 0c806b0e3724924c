package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
	"github.com/agentgraph/agentgraph/llm"
)

// renderer prints a run's events as progress lines.
type renderer struct {
	w         io.Writer
	max       int
	iteration int
	calls     map[string]string // call ID → rendered arguments
}

func newRenderer(w io.Writer, maxIterations int) *renderer {
	return &renderer{w: w, max: maxIterations, calls: map[string]string{}}
}

func (r *renderer) render(ev events.Event) {
	switch p := ev.Data.(type) {
	case retrai.IterationStarted:
		if p.MaxIterations > 0 {
			r.max = p.MaxIterations
		}
		if p.Iteration != r.iteration {
			r.iteration = p.Iteration
			fmt.Fprintf(r.w, "── iteration %d/%d ──\n", p.Iteration, r.max)
		}
	case retrai.BaselineRecorded:
		fmt.Fprintf(r.w, "  baseline: %s\n", clip(oneLine(p.Summary), 200))
	case events.ModelCall:
		if p.Text != "" {
			fmt.Fprintf(r.w, "  model: %s\n", clip(oneLine(p.Text), 200))
		}
	case events.ToolCall:
		r.calls[p.ID] = renderArgs(p.Args)
	case events.ToolResult:
		mark := "✓"
		if toolFailed(p.Result) {
			mark = "✗"
		}
		args := r.calls[p.ID]
		delete(r.calls, p.ID)
		fmt.Fprintf(r.w, "  %s %s %s → %s\n", mark, p.Name, args, summarize(p.Name, p.Result))
	case retrai.GoalCheck:
		mark := "✗ not yet"
		if p.Achieved {
			mark = "✓ achieved"
		}
		fmt.Fprintf(r.w, "  goal %s: %s\n", mark, clip(oneLine(p.Reason), 200))
		fmt.Fprintf(r.w, "  iteration %d done · %d tokens so far\n", p.Iteration, p.TotalTokens)
	case runs.Progress:
		if hint := stuckHint(p); hint != "" {
			fmt.Fprintf(r.w, "  %s\n", hint)
		}
	case retrai.HumanCheck:
		fmt.Fprintf(r.w, "  ? %s\n", p.Question)
	case retrai.HumanDecision:
		if p.Approved {
			fmt.Fprintln(r.w, "  human: approved, going on")
		} else {
			fmt.Fprintln(r.w, "  human: aborted")
		}
	case events.Error:
		fmt.Fprintf(r.w, "  ! error: %s\n", clip(oneLine(p.Message), 300))
	case events.SandboxWarning:
		fmt.Fprintf(r.w, "  ! WARNING: commands are NOT sandboxed (sandbox %s: %s)\n", p.Mode, p.Reason)
	case runs.ModelProgress:
		if line := modelLine(p); line != "" {
			fmt.Fprintf(r.w, "  %s\n", line)
		}
	}
}

// toolFailed reports a tool result that explains a failure: tools.ToolNode
// writes them "Error: …" or "Error invoking tool …".
func toolFailed(result string) bool { return strings.HasPrefix(result, "Error") }

// renderArgs shows a tool call's JSON arguments as key=value pairs.
func renderArgs(args string) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		return clip(oneLine(args), 80)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { // path first, then by name
		if (a == "path") != (b == "path") {
			if a == "path" {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := fmt.Sprint(m[k])
		if s, ok := m[k].(string); ok {
			v = clip(s, 48)
			if v == "" || strings.ContainsAny(v, " \t\n\"=") {
				v = strconv.Quote(v)
			}
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

var (
	passedRe = regexp.MustCompile(`"passed":\s*(\d+)`)
	failedRe = regexp.MustCompile(`"failed":\s*(\d+)`)
	exitRe   = regexp.MustCompile(`^exit code: (-?\d+)`)
)

// summarize describes a tool's output in a few words.
func summarize(tool, output string) string {
	if toolFailed(output) {
		return clip(oneLine(output), 120)
	}
	lines := strings.Count(strings.TrimRight(output, "\n"), "\n") + 1
	switch tool {
	case "file_read":
		return plural(lines, "line")
	case "file_list":
		return plural(max(lines-1, 0), "entry")
	case "run_tests":
		p, f := passedRe.FindStringSubmatch(output), failedRe.FindStringSubmatch(output)
		if p != nil && f != nil {
			return fmt.Sprintf("%s passed, %s failed", p[1], f[1])
		}
	case "bash_exec":
		if m := exitRe.FindStringSubmatch(output); m != nil {
			rest := strings.TrimSpace(output[len(m[0]):])
			rest = strings.TrimSpace(strings.TrimPrefix(rest, "--- stdout ---"))
			if rest != "" {
				return "exit " + m[1] + ": " + clip(oneLine(rest), 100)
			}
			return "exit " + m[1]
		}
	}
	return clip(oneLine(output), 120)
}

// oneLine joins the non-empty lines of s with " ⏎ ".
func oneLine(s string) string {
	var parts []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ⏎ ")
}

// clip shortens s to n runes with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// plural returns "1 line", "2 lines", "1 entry", "2 entries".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if s, ok := strings.CutSuffix(noun, "y"); ok {
		return fmt.Sprintf("%d %sies", n, s)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// stuckHint is what a Progress says about a run that makes no progress:
// nothing when it does.
func stuckHint(p runs.Progress) string {
	if p.NoProgress < retrai.DefaultStuckAfter {
		return ""
	}
	return fmt.Sprintf("! no progress for %d iterations: no file changed and the check result stayed the same", p.NoProgress)
}

// failureReasons describe the llm.FailureReason of a failed model call.
var failureReasons = map[string]string{
	string(llm.ReasonRateLimited): "rate limited",
	string(llm.ReasonTimeout):     "timed out",
	string(llm.ReasonServerError): "server error",
	string(llm.ReasonNetwork):     "network error",
}

// modelFailure describes the failure of a model call, e.g. "rate limited
// (HTTP 429)".
func modelFailure(p runs.ModelProgress) string {
	what := failureReasons[p.Reason]
	if what == "" {
		what = "failed"
	}
	if p.StatusCode != 0 {
		what += fmt.Sprintf(" (HTTP %d)", p.StatusCode)
	}
	return what
}

// modelLine renders the progress of a model call as a progress line; ""
// for the states not worth a line.
func modelLine(p runs.ModelProgress) string {
	switch p.State {
	case llm.ProgressAttempt.String():
		if p.Attempt > 1 {
			return fmt.Sprintf("… waiting for the model (attempt %d of %d)", p.Attempt, p.MaxAttempts)
		}
		return "… waiting for the model"
	case llm.ProgressRetryWait.String():
		return fmt.Sprintf("! model %s: retrying in %v (attempt %d of %d failed)", modelFailure(p), time.Duration(p.DelayMS)*time.Millisecond, p.Attempt, p.MaxAttempts)
	case llm.ProgressGaveUp.String():
		return fmt.Sprintf("! model %s: gave up after attempt %d of %d: %s", modelFailure(p), p.Attempt, p.MaxAttempts, clip(oneLine(p.Error), 300))
	}
	return ""
}

// modelStatus renders the progress of a model call for a status line.
func modelStatus(p runs.ModelProgress) string {
	switch p.State {
	case llm.ProgressAttempt.String():
		return "waiting for the model…"
	case llm.ProgressFirstByte.String():
		return "the model is answering…"
	case llm.ProgressRetryWait.String():
		return fmt.Sprintf("model %s, retrying in %v…", modelFailure(p), time.Duration(p.DelayMS)*time.Millisecond)
	}
	return ""
}
