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
	str := func(key string) string { s, _ := ev.PayloadString(key); return s }
	switch ev.Kind {
	case events.KindStepStart:
		if ev.Iteration != r.iteration {
			r.iteration = ev.Iteration
			fmt.Fprintf(r.w, "── iteration %d/%d ──\n", ev.Iteration, r.max)
		}
	case events.KindLog:
		switch msg := str("message"); {
		case msg == "":
		case str("node") == retrai.BaselineNode: // "baseline: …"
			fmt.Fprintf(r.w, "  %s\n", clip(oneLine(msg), 200))
		default:
			fmt.Fprintf(r.w, "  model: %s\n", clip(oneLine(msg), 200))
		}
	case events.KindToolCall:
		r.calls[str("call_id")] = renderArgs(str("args"))
	case events.KindToolResult:
		mark := "✓"
		if str("error") != "" {
			mark = "✗"
		}
		tool := str("tool")
		args := r.calls[str("call_id")]
		delete(r.calls, str("call_id"))
		lines, _ := ev.PayloadInt("output_lines")
		fmt.Fprintf(r.w, "  %s %s %s → %s\n", mark, tool, args, summarize(tool, str("output"), lines))
	case events.KindGoalCheck:
		achieved, _ := ev.Payload["achieved"].(bool)
		mark := "✗ not yet"
		if achieved {
			mark = "✓ achieved"
		}
		fmt.Fprintf(r.w, "  goal %s: %s%s\n", mark, clip(oneLine(str("reason")), 200), stuckHint(ev))
	case events.KindIterationComplete:
		tokens, _ := ev.PayloadInt("total_tokens")
		fmt.Fprintf(r.w, "  iteration %d done · %d tokens so far\n", ev.Iteration, tokens)
	case events.KindHumanCheckRequired:
		fmt.Fprintf(r.w, "  ? %s\n", str("question"))
	case events.KindHumanCheckResponse:
		if ok, _ := ev.Payload["approved"].(bool); ok {
			fmt.Fprintln(r.w, "  human: approved, going on")
		} else {
			fmt.Fprintln(r.w, "  human: aborted")
		}
	case events.KindError:
		fmt.Fprintf(r.w, "  ! error: %s\n", clip(oneLine(str("error")), 300))
	case runs.KindModelProgress:
		if line := modelLine(ev); line != "" {
			fmt.Fprintf(r.w, "  %s\n", line)
		}
	}
}

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
func summarize(tool, output string, lines int) string {
	if strings.HasPrefix(output, "Error") {
		return clip(oneLine(output), 120)
	}
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

// stuckHint is what a goal_check event adds about a run that makes no
// progress: nothing when it does.
func stuckHint(ev events.Event) string {
	n, _ := ev.PayloadInt(runs.PayloadNoProgress)
	if n < retrai.DefaultStuckAfter {
		return ""
	}
	return fmt.Sprintf(" (no progress for %d iterations: no file changed and the check result stayed the same)", n)
}

// failureReasons describe the llm.FailureReason of a failed model call.
var failureReasons = map[string]string{
	string(llm.ReasonRateLimited): "rate limited",
	string(llm.ReasonTimeout):     "timed out",
	string(llm.ReasonServerError): "server error",
	string(llm.ReasonNetwork):     "network error",
}

// modelFailure describes the failure of a model_progress event, e.g.
// "rate limited (HTTP 429)".
func modelFailure(ev events.Event) string {
	reason, _ := ev.PayloadString("reason")
	what := failureReasons[reason]
	if what == "" {
		what = "failed"
	}
	if code, ok := ev.PayloadInt("status_code"); ok && code != 0 {
		what += fmt.Sprintf(" (HTTP %d)", code)
	}
	return what
}

// modelLine renders a model_progress event as a progress line; "" for the
// events not worth a line.
func modelLine(ev events.Event) string {
	state, _ := ev.PayloadString("state")
	attempt, _ := ev.PayloadInt("attempt")
	maxAttempts, _ := ev.PayloadInt("max_attempts")
	switch state {
	case llm.ProgressAttempt.String():
		if attempt > 1 {
			return fmt.Sprintf("… waiting for the model (attempt %d of %d)", attempt, maxAttempts)
		}
		return "… waiting for the model"
	case llm.ProgressRetryWait.String():
		delay, _ := ev.PayloadInt("delay_ms")
		return fmt.Sprintf("! model %s: retrying in %v (attempt %d of %d failed)", modelFailure(ev), time.Duration(delay)*time.Millisecond, attempt, maxAttempts)
	case llm.ProgressGaveUp.String():
		msg, _ := ev.PayloadString("error")
		return fmt.Sprintf("! model %s: gave up after attempt %d of %d: %s", modelFailure(ev), attempt, maxAttempts, clip(oneLine(msg), 300))
	}
	return ""
}

// modelStatus renders a model_progress event for a status line.
func modelStatus(ev events.Event) string {
	state, _ := ev.PayloadString("state")
	switch state {
	case llm.ProgressAttempt.String():
		return "waiting for the model…"
	case llm.ProgressFirstByte.String():
		return "the model is answering…"
	case llm.ProgressRetryWait.String():
		delay, _ := ev.PayloadInt("delay_ms")
		return fmt.Sprintf("model %s, retrying in %v…", modelFailure(ev), time.Duration(delay)*time.Millisecond)
	}
	return ""
}
