package codur

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

type agent struct {
	planner llm.Model
	reg     *Registry
	set     *tools.Set
	tools   []tools.Tool
	defs    []llms.Tool
	cfg     config
	detect  *Detector
}

// decide writes the decision event and returns the state update.
func decide(ctx context.Context, d Decision, out State) State {
	graph.StreamWriter(ctx)(d)
	out.NextAction = state.Set(d.Action)
	if d.Action != ActionContinue && d.Phase != PhaseReview {
		out.DecidedBy = state.Set(d.Phase)
	}
	return out
}

// A textual pattern of the pre-plan: a regular expression on the whole
// task and what a match means.
type textPattern struct {
	re    *regexp.Regexp
	build func(m []string) (tool string, args map[string]any)
}

const pathPat = "[`'\"]?([^\\s`'\"]+)[`'\"]?"

var (
	greetingRe = regexp.MustCompile(`(?i)^\s*(hi|hello|hey|howdy|thanks|thank you|thx|good (morning|afternoon|evening))[\s!.,]*(there|codur)?[\s!.]*$`)
	agentRefRe = regexp.MustCompile(`^\s*@?((?:llm|agent):[A-Za-z0-9_.-]+)[:,]?\s+(.+)$`)
	// codeWordsRe marks tasks that change code: the pre-plan never acts on
	// them. It matches word stems ("fixes", "implementing", "changed"), and
	// the wordings of an expected behaviour ("should print 15, not 10"):
	// a false positive only costs a full planning.
	codeWordsRe = regexp.MustCompile(`(?i)\b(fix|bug|debug|implement|refactor|creat|add|chang|updat|modif|mak(e|es|ing)|writ|rewrit|correct|repair|optimi[sz]|fail|broke|error|wrong|incorrect|should|shouldn|must|instead|expect|crash|exception|traceback|not work|doesn|does not|patch|edit|improv|handl|support)`)

	textPatterns = []textPattern{
		{regexp.MustCompile(`(?i)^\s*(?:read|show|cat|open|display|print)\s+(?:the\s+)?(?:file\s+)?` + pathPat + `\s*$`),
			func(m []string) (string, map[string]any) { return "file_read", map[string]any{"path": m[1]} }},
		{regexp.MustCompile(`(?i)^\s*(?:move|rename|mv)\s+(?:the\s+)?(?:file\s+)?` + pathPat + `\s+(?:to|into|as)\s+` + pathPat + `\s*$`),
			func(m []string) (string, map[string]any) {
				return "file_move", map[string]any{"source": m[1], "destination": m[2]}
			}},
		{regexp.MustCompile(`(?i)^\s*(?:copy|cp|duplicate)\s+(?:the\s+)?(?:file\s+)?` + pathPat + `\s+(?:to|into|as)\s+` + pathPat + `\s*$`),
			func(m []string) (string, map[string]any) {
				return "file_copy", map[string]any{"source": m[1], "destination": m[2]}
			}},
		{regexp.MustCompile(`(?i)^\s*(?:delete|remove|rm)\s+(?:the\s+)?(?:file\s+)?` + pathPat + `\s*$`),
			func(m []string) (string, map[string]any) { return "file_delete", map[string]any{"path": m[1]} }},
		{regexp.MustCompile(`(?is)^\s*replace\s+(?:"([^"]*)"|'([^']*)'|` + "`([^`]*)`" + `|(\S+))\s+with\s+(?:"([^"]*)"|'([^']*)'|` + "`([^`]*)`" + `|(\S+))\s+in\s+` + pathPat + `\s*$`),
			func(m []string) (string, map[string]any) {
				return "file_replace", map[string]any{"old": m[1] + m[2] + m[3] + m[4], "new": m[5] + m[6] + m[7] + m[8], "path": m[9]}
			}},
		{regexp.MustCompile(`(?is)^\s*(?:write|save)\s+(?:"([^"]*)"|'([^']*)')\s+(?:to|into|in)\s+` + pathPat + `\s*$`),
			func(m []string) (string, map[string]any) {
				return "file_write", map[string]any{"content": m[1] + m[2], "path": m[3]}
			}},
		{regexp.MustCompile(`(?i)^\s*(?:list|ls)(?:\s+(?:the\s+)?files)?(?:\s+in\s+` + pathPat + `)?\s*$`),
			func(m []string) (string, map[string]any) {
				if m[1] == "" {
					return "file_list", map[string]any{}
				}
				return "file_list", map[string]any{"path": m[1]}
			}},
	}
)

// IsCodeTask reports whether task reads as one that changes code: a word
// starting with a stem such as fix, implement, refactor, chang, writ
// ("fixes", "implementing"), or the wording of an expected behaviour
// ("should print 15", "instead of", "expected"). The quick
// classification never acts on those.
func IsCodeTask(task string) bool { return codeWordsRe.MatchString(task) }

// codeTaskType reports whether the quick classification's task type
// names a code change, whatever its case and separators ("code_change",
// "Code-Change", "bug fix").
func codeTaskType(t string) bool {
	t = strings.ToLower(t)
	for _, w := range []string{"code", "fix", "bug", "implement", "refactor", "change", "edit"} {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

// readOnlyTools are the tools that change nothing: the quick
// classification may run them whatever the task.
var readOnlyTools = map[string]struct{}{
	"file_read": {}, "file_list": {}, "file_find": {}, "grep": {}, "json_read": {}, "yaml_read": {},
	"ini_read": {}, "git_status": {}, "git_diff": {}, "git_log": {}, "web_search": {}, "web_fetch": {},
	"list_mcp_tools": {},
}

// sourceExts are the extensions of the files the pre-plan treats as code.
var sourceExts = map[string]struct{}{
	".py": {}, ".go": {}, ".js": {}, ".mjs": {}, ".cjs": {}, ".ts": {}, ".tsx": {}, ".jsx": {}, ".rb": {},
	".rs": {}, ".java": {}, ".kt": {}, ".c": {}, ".h": {}, ".cc": {}, ".cpp": {}, ".hpp": {}, ".cs": {},
	".php": {}, ".sh": {}, ".bash": {}, ".swift": {}, ".scala": {}, ".lua": {}, ".pl": {}, ".r": {},
	".sql": {}, ".mod": {}, ".toml": {},
}

// changesCode returns the first call of calls that the quick
// classification must not run: a call of a tool that is not read-only
// and that touches a source file, or any such call when the run is
// verified (verify, or a workspace with an expected output), or whose
// paths cannot be told (bash_exec, git_commit, an MCP tool …).
func (a *agent) changesCode(calls []ToolCall, verify bool) (ToolCall, bool) {
	for _, c := range calls {
		name := c.Tool
		if canon, ok := a.detect.Resolve(name); ok {
			name = canon
		}
		if _, ro := readOnlyTools[name]; ro {
			continue
		}
		if verify || a.cfg.verifier != nil {
			return c, true
		}
		var args map[string]any
		if json.Unmarshal([]byte(c.Args), &args) != nil {
			return c, true
		}
		paths := 0
		for _, k := range []string{"path", "source", "destination", "file", "dst", "src"} {
			p, ok := args[k].(string)
			if !ok {
				continue
			}
			paths++
			if _, src := sourceExts[strings.ToLower(filepath.Ext(p))]; src || filepath.Base(p) == "Makefile" {
				return c, true
			}
		}
		if paths == 0 {
			return c, true
		}
	}
	return ToolCall{}, false
}

// textualDecision is what the textual pre-plan makes of a task.
type textualDecision struct {
	// Action is ActionContinue when no pattern is sure.
	Action Action
	// Response answers a greeting.
	Response string
	// Agent is an agent named by the task ("agent:claude fix …").
	Agent string
	// Calls are the tool calls of an explicit file operation.
	Calls []ToolCall
	// Reason names the pattern.
	Reason string
}

// classifyText is the textual pre-plan: greetings end the run with an
// answer; a task that starts with a registered agent's reference is
// delegated to it; explicit file operations ("read a.py", "move A to B",
// "replace X with Y in F", "delete F", "copy A to B", "write 'x' to F",
// "list files") become tool calls when the tool exists. Anything else
// continues to the next phase.
func (a *agent) classifyText(task string) textualDecision {
	if greetingRe.MatchString(task) {
		return textualDecision{Action: ActionEnd, Response: "Hello! Give me a coding task — a bug to fix, a file to change — and I will take care of it.", Reason: "greeting"}
	}
	if m := agentRefRe.FindStringSubmatch(task); m != nil {
		if _, ok := a.reg.Get(m[1]); ok {
			return textualDecision{Action: ActionDelegate, Agent: m[1], Reason: "the task names the agent"}
		}
	}
	for _, p := range textPatterns {
		m := p.re.FindStringSubmatch(task)
		if m == nil {
			continue
		}
		tool, args := p.build(m)
		if _, ok := a.set.Get(tool); !ok || !a.plausiblePaths(tool, args) {
			continue
		}
		b, _ := json.Marshal(args)
		return textualDecision{Action: ActionTool, Calls: []ToolCall{{Tool: tool, Args: string(b)}}, Reason: "explicit file operation: " + tool}
	}
	return textualDecision{Action: ActionContinue, Reason: "no pattern matched"}
}

// plausiblePaths reports whether the paths of a textual match name files:
// a source ("path" of reads, deletes and replacements, "source" of moves
// and copies) must exist in the workspace when it is known, or else look
// like a path (hold a "." or a "/"); a destination must look like a path.
// "remove the bug" is not a file operation on a file named "bug".
func (a *agent) plausiblePaths(tool string, args map[string]any) bool {
	looksLikePath := func(p string) bool {
		return strings.ContainsAny(p, "./") && !strings.HasSuffix(p, ".") && !strings.Contains(p, "..")
	}
	for key, v := range args {
		p, ok := v.(string)
		if !ok || (key != "path" && key != "source" && key != "destination") {
			continue
		}
		source := key == "source" || (key == "path" && tool != "file_write" && tool != "file_list")
		if !source || a.cfg.dir == "" {
			if !looksLikePath(p) && !(tool == "file_list" && p == "") {
				return false
			}
			continue
		}
		if strings.Contains(p, "..") || filepath.IsAbs(p) {
			return false
		}
		if _, err := os.Lstat(filepath.Join(a.cfg.dir, filepath.FromSlash(p))); err != nil {
			return false
		}
	}
	return true
}

// textualPrePlan is the "textual_pre_plan" node. A retry (after a failed
// verification) always continues: it is a code change.
func (a *agent) textualPrePlan(ctx context.Context, s State) (State, error) {
	d := Decision{Phase: PhaseTextual, Action: ActionContinue, Reason: "retry after a failed verification"}
	var out State
	if s.Iterations.Get() == 0 {
		td := a.classifyText(s.Task.Get())
		d = Decision{Phase: PhaseTextual, Action: td.Action, Agent: td.Agent, Reason: td.Reason}
		switch td.Action {
		case ActionEnd:
			out.FinalResponse = state.Set(td.Response)
			out.Messages.Append(state.AI(td.Response))
		case ActionDelegate:
			out.SelectedAgent = state.Set(td.Agent)
		case ActionTool:
			out.ToolCalls = state.Set(td.Calls)
			d.Tools = callNames(td.Calls)
		}
	}
	return decide(ctx, d, out), nil
}

// prePlanAnswer is the quick classification's answer.
type prePlanAnswer struct {
	TaskType   string          `json:"task_type"`
	Confidence float64         `json:"confidence"`
	Action     string          `json:"action"`
	Response   string          `json:"response"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
}

// llmPrePlan is the "llm_pre_plan" node: one model call on the first
// iteration, acted on only when the model is sure (at least the
// configured confidence), the task is not a code change (by the model's
// type and by its wording), and the action is usable.
func (a *agent) llmPrePlan(ctx context.Context, s State) (State, error) {
	if s.Iterations.Get() > 0 {
		return decide(ctx, Decision{Phase: PhasePrePlan, Action: ActionContinue, Reason: "retry: full planning"}, State{}), nil
	}
	task := s.Task.Get()
	sys := fill(a.cfg.prompts.PrePlan, map[string]string{"task": task, "tools": toolDescriptions(a.tools)})
	resp, tokens, err := a.callPlanner(ctx, []state.Message{state.System(sys), state.Human(task)})
	if err != nil {
		return State{}, fmt.Errorf("codur: %s: %w", LLMPrePlanNode, err)
	}
	out := State{Tokens: state.Delta(tokens)}
	ans, ok := jsonObjectWith[prePlanAnswer](resp, "action")
	d := Decision{Phase: PhasePrePlan, Action: ActionContinue, Confidence: ans.Confidence}
	switch {
	case !ok:
		d.Fallback, d.Reason = true, "the classification was not a usable JSON object"
	case ans.Confidence < a.cfg.confidence:
		d.Reason = fmt.Sprintf("confidence %.2f is below %.2f", ans.Confidence, a.cfg.confidence)
	case codeTaskType(ans.TaskType) || IsCodeTask(task):
		d.Reason = "code changes always go to full planning"
	case ans.Action == "respond" && strings.TrimSpace(ans.Response) != "":
		d.Action, d.Reason = ActionEnd, "answered by the classification ("+ans.TaskType+")"
		out.FinalResponse = state.Set(ans.Response)
		out.Messages.Append(state.AI(ans.Response))
	case ans.Action == "tool":
		calls := a.detect.fromValue(map[string]any{"tool_calls": rawToAny(ans.ToolCalls)})
		if len(calls) == 0 {
			d.Reason = "no usable tool call"
			break
		}
		if c, ok := a.changesCode(calls, s.Verify.Get()); ok {
			d.Reason = "the planned " + c.Tool + " changes code: full planning"
			break
		}
		d.Action, d.Tools, d.Reason = ActionTool, callNames(calls), "file operation ("+ans.TaskType+")"
		out.ToolCalls = state.Set(calls)
	default:
		d.Reason = "the classification leaves it to planning"
	}
	return decide(ctx, d, out), nil
}

// planAnswer is the full planning's answer.
type planAnswer struct {
	Action    string          `json:"action"`
	Agent     string          `json:"agent"`
	Reasoning string          `json:"reasoning"`
	Response  string          `json:"response"`
	ToolCalls json.RawMessage `json:"tool_calls"`
}

// llmPlan is the "llm_plan" node. A bad answer (no JSON, an unknown
// action, an unknown agent, tool calls of unknown tools) falls back to
// delegating to the default agent.
func (a *agent) llmPlan(ctx context.Context, s State) (State, error) {
	task := s.Task.Get()
	sys := fill(a.cfg.prompts.Plan, map[string]string{
		"task": task, "agents": agentDescriptions(a.reg), "tools": toolDescriptions(a.tools),
		"context": contextText(s.Messages.List()),
	})
	resp, tokens, err := a.callPlanner(ctx, []state.Message{state.System(sys), state.Human(task)})
	if err != nil {
		return State{}, fmt.Errorf("codur: %s: %w", LLMPlanNode, err)
	}
	out := State{Tokens: state.Delta(tokens)}
	ans, ok := jsonObjectWith[planAnswer](resp, "action")
	d := Decision{Phase: PhasePlan, Reason: strings.TrimSpace(ans.Reasoning)}
	fallback := func(why string) {
		d.Action, d.Agent, d.Fallback, d.Reason = ActionDelegate, a.cfg.defaultAgent, true, why
		out.SelectedAgent = state.Set(a.cfg.defaultAgent)
	}
	switch act := strings.ToLower(strings.TrimSpace(ans.Action)); {
	case !ok:
		fallback("the plan was not a usable JSON object; delegating to the default agent")
	case act == "delegate":
		ref := strings.TrimSpace(ans.Agent)
		if _, known := a.reg.Get(ref); !known {
			fallback(fmt.Sprintf("unknown agent %q; delegating to the default agent", ref))
			break
		}
		d.Action, d.Agent = ActionDelegate, ref
		out.SelectedAgent = state.Set(ref)
		out.Plan = state.Set(strings.TrimSpace(ans.Reasoning))
	case act == "tool":
		calls := a.detect.fromValue(map[string]any{"tool_calls": rawToAny(ans.ToolCalls)})
		if len(calls) == 0 {
			fallback("no usable tool call; delegating to the default agent")
			break
		}
		d.Action, d.Tools = ActionTool, callNames(calls)
		out.ToolCalls = state.Set(calls)
	case act == "respond" || act == "done":
		d.Action = ActionEnd
		out.FinalResponse = state.Set(ans.Response)
		if ans.Response != "" {
			out.Messages.Append(state.AI(ans.Response))
		}
	default:
		fallback(fmt.Sprintf("unknown action %q; delegating to the default agent", ans.Action))
	}
	return decide(ctx, d, out), nil
}

// callPlanner calls the planner model and reports the call.
func (a *agent) callPlanner(ctx context.Context, msgs []state.Message) (string, int, error) {
	resp, err := llm.GenerateToGraph(ctx, a.planner, msgs, a.cfg.callOpts...)
	if err != nil {
		return "", 0, err
	}
	total := modelCallEvent(ctx, resp)
	return resp.Message.Text(), total, nil
}

// modelCallEvent writes the events.ModelCall of resp and returns its
// total tokens.
func modelCallEvent(ctx context.Context, resp *llm.Response) int {
	u := resp.Usage
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	graph.StreamWriter(ctx)(events.ModelCall{
		Text: strings.TrimSpace(resp.Message.Text()), ToolCalls: len(resp.Message.ToolCalls()),
		StopReason: resp.StopReason, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: total,
	})
	return total
}

func rawToAny(raw json.RawMessage) any {
	var v any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &v)
	}
	return v
}

func callNames(calls []ToolCall) []string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Tool
	}
	return names
}

func agentDescriptions(r *Registry) string {
	list := r.List()
	if len(list) == 0 {
		return "(none)"
	}
	var b strings.Builder
	for i, info := range list {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "- %s", info.Ref)
		if info.Description != "" {
			fmt.Fprintf(&b, ": %s", info.Description)
		}
	}
	return b.String()
}

// contextText renders the messages after the task for the planner.
func contextText(msgs []state.Message) string {
	var b strings.Builder
	for _, m := range msgs[min(1, len(msgs)):] {
		t := strings.TrimSpace(m.Text())
		if t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n---\n")
		}
		b.WriteString(t)
	}
	if b.Len() == 0 {
		return "(none)"
	}
	return b.String()
}
