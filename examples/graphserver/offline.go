package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/agent/planexec"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// The offline models. A served graph gets runs in any order, on any
// thread, from any client, so these models are not llm.Scripted (which
// answers its i-th call with its i-th reply): like examples/temporal's,
// each answer is a function of the messages alone. They recognise the
// prompt they answer by its system message (the agents' default prompts),
// call the real tools, and word their answers from what the tools
// returned; the wording around it is canned. Each answer goes through an
// llm.Scripted holding that one reply, so token streaming and usage
// behave as with the examples' scripted models.

// answer returns r as a model's response to msgs.
func answer(ctx context.Context, msgs []state.Message, opts []llm.CallOption, r llm.Reply) (*llm.Response, error) {
	return llm.NewScripted(r).Generate(ctx, msgs, opts...)
}

// call is a tool call with arguments marshalled from args.
func call(id, name string, args any) llms.ToolCall {
	b, _ := json.Marshal(args)
	return state.ToolCall(id, name, string(b))
}

// systemIs reports whether msgs start with the system prompt template
// (compared on its first line, before any placeholder).
func systemIs(msgs []state.Message, template string) bool {
	if len(msgs) == 0 || msgs[0].Role != llms.ChatMessageTypeSystem {
		return false
	}
	first, _, _ := strings.Cut(template, "\n")
	first, _, _ = strings.Cut(first, "{")
	return strings.HasPrefix(msgs[0].Text(), first)
}

// toolResults returns the results of the tools in msgs by tool name, the
// last one of each name.
func toolResults(msgs []state.Message) map[string]string {
	out := map[string]string{}
	for _, m := range msgs {
		for _, r := range m.ToolResults() {
			out[r.Name] = r.Content
		}
	}
	return out
}

// AddArgs are the arguments of the ReAct agent's add tool.
type AddArgs struct {
	A int `json:"a" jsonschema:"required,description=The first number"`
	B int `json:"b" jsonschema:"required,description=The second number"`
}

// addTool is the ReAct agent's tool: a real one, offline or not.
func addTool() tools.Tool {
	return tools.New("add", "Add two integers and return their sum.",
		func(_ context.Context, a AddArgs) (string, error) { return strconv.Itoa(a.A + a.B), nil })
}

var integer = regexp.MustCompile(`-?\d+`)

// reactModel is the ReAct agent's offline model: asked about two
// numbers, it calls add with them, then answers with the tool's result.
type reactModel struct{}

// Generate implements llm.Model.
func (reactModel) Generate(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
	if len(msgs) == 0 {
		return nil, errors.New("offline react model: no messages")
	}
	last := msgs[len(msgs)-1]
	if rs := last.ToolResults(); len(rs) > 0 {
		return answer(ctx, msgs, opts, llm.Reply{Text: "The add tool says the sum is " + rs[0].Content + "."})
	}
	nums := integer.FindAllString(last.Text(), 2)
	if len(nums) < 2 {
		return answer(ctx, msgs, opts, llm.Reply{Text: "I am the offline model of this demo: ask me to add two numbers, for example \"what is 19 plus 23?\"."})
	}
	a, _ := strconv.Atoi(nums[0])
	b, _ := strconv.Atoi(nums[1])
	return answer(ctx, msgs, opts, llm.Reply{ToolCalls: []llms.ToolCall{call("call_add", "add", AddArgs{A: a, B: b})}})
}

// identifier finds the word a research question is about: the first
// word with an inner capital or an underscore (SumRange, max_depth), else
// the longest word.
var identifier = regexp.MustCompile(`\b[A-Za-z]+[A-Z_][A-Za-z0-9_]*\b`)

// subject returns the word the question is about.
func subject(question string) string {
	if w := identifier.FindString(question); w != "" {
		return w
	}
	best := ""
	for _, w := range strings.FieldsFunc(question, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_')
	}) {
		if len(w) > len(best) {
			best = w
		}
	}
	return best
}

// researchModel is the research agent's offline model (planexec's default
// prompts, with the grep and file_read tools): the plan is one step, to
// find the question's subject; the executor greps for it and reads the
// first file that has it; the refinery finishes; the synthesizer quotes
// the finding.
type researchModel struct {
	prompts planexec.Prompts
}

func newResearchModel() *researchModel { return &researchModel{prompts: planexec.DefaultPrompts()} }

// Generate implements llm.Model.
func (m *researchModel) Generate(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
	switch {
	case systemIs(msgs, m.prompts.Planner):
		q := between(msgs[0].Text(), "Question: ", "\n\nFindings so far:")
		step, _ := json.Marshal([]string{"Find where " + subject(q) + " is defined and read it"})
		return answer(ctx, msgs, opts, llm.Reply{Text: string(step)})
	case systemIs(msgs, m.prompts.Executor):
		return answer(ctx, msgs, opts, m.execute(msgs))
	case systemIs(msgs, m.prompts.Refine):
		return answer(ctx, msgs, opts, llm.Reply{Text: `{"decision": "FINISH", "reason": "the file that defines the subject was read"}`})
	case systemIs(msgs, m.prompts.Synthesize):
		findings := strings.TrimSpace(between(msgs[0].Text(), "Findings:\n", "\n\nWrite a complete"))
		return answer(ctx, msgs, opts, llm.Reply{Text: "## Answer (offline model: it quotes what its tools found)\n\n" + findings})
	}
	return nil, fmt.Errorf("offline research model: no answer to a prompt starting %q", firstLine(firstText(msgs)))
}

// execute is the executor's part: grep, then read the first file found,
// then report it.
func (m *researchModel) execute(msgs []state.Message) llm.Reply {
	results := toolResults(msgs)
	found, grepped := results["grep"]
	content, read := results["file_read"]
	word := subject(strings.TrimPrefix(between(msgs[0].Text(), "Current step: ", "\n"), "Find where "))
	switch {
	case !grepped:
		return llm.Reply{Text: "I'll search the project for " + word + ".",
			ToolCalls: []llms.ToolCall{call("call_grep", "grep", tools.GrepArgs{Pattern: `\b` + regexp.QuoteMeta(word) + `\b`})}}
	case !read:
		file, _, ok := strings.Cut(definition(found, word), ":")
		if !ok || strings.TrimSpace(file) == "" {
			return llm.Reply{Text: "Nothing in the project mentions " + word + ": " + firstLine(found)}
		}
		return llm.Reply{Text: "I'll read " + file + ".",
			ToolCalls: []llms.ToolCall{call("call_read", "file_read", tools.FileReadArgs{Path: file})}}
	}
	file, _, _ := strings.Cut(definition(found, word), ":")
	return llm.Reply{Text: fmt.Sprintf("grep found %s in %s, which reads:\n\n%s", word, file, strings.TrimSpace(content))}
}

// definition returns the line of grep's output that declares word (a
// func, type, var or const of Go), else its first line.
func definition(grepped, word string) string {
	for _, line := range strings.Split(grepped, "\n") {
		for _, kw := range []string{"func ", "type ", "var ", "const "} {
			if strings.Contains(line, kw+word) {
				return line
			}
		}
	}
	return firstLine(grepped)
}

// coderModel is the coder's offline model (coder's default prompts): it
// classifies any request as a question, picks the project's Go files,
// answers a question by quoting the declarations of the files it is shown,
// and knows one edit: the fix of the bundled sample's off-by-one bug.
type coderModel struct {
	prompts coder.Prompts
}

func newCoderModel() *coderModel { return &coderModel{prompts: coder.DefaultPrompts()} }

// The bundled go-test sample's buggy loop (retrai's sample, see package
// examples/retrai/samples) and its fix.
const (
	sampleBug = "for i := a; i < b; i++ {"
	sampleFix = "for i := a; i <= b; i++ {"
)

var goFile = regexp.MustCompile(`[\w./-]+\.go\b`)

// Generate implements llm.Model.
func (m *coderModel) Generate(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
	system := firstText(msgs)
	switch {
	case systemIs(msgs, m.prompts.Classify):
		return answer(ctx, msgs, opts, llm.Reply{Text: `{"intent": "read"}`})
	case systemIs(msgs, m.prompts.PickFiles):
		var files []string
		for _, f := range goFile.FindAllString(system, -1) {
			if !strings.HasSuffix(f, "_test.go") && len(files) < 5 {
				files = append(files, f)
			}
		}
		b, _ := json.Marshal(files)
		return answer(ctx, msgs, opts, llm.Reply{Text: string(b)})
	case systemIs(msgs, m.prompts.Read):
		var decls []string
		for _, line := range strings.Split(between(system, "Files:\n", "\x00"), "\n") {
			if i := strings.Index(line, "func "); i >= 0 {
				decls = append(decls, strings.TrimSpace(line[i:]))
			}
		}
		text := "I am the offline model: I quote the declarations of the files I was shown, I do not explain them."
		if len(decls) > 0 {
			text += "\n\n" + strings.Join(decls, "\n")
		}
		return answer(ctx, msgs, opts, llm.Reply{Text: text})
	case systemIs(msgs, m.prompts.Edit):
		if !strings.Contains(system, sampleBug) {
			return answer(ctx, msgs, opts, llm.Reply{Text: `{"edits": [], "summary": "the offline model knows no edit for these files"}`})
		}
		plan, _ := json.Marshal(coder.EditPlan{
			Edits:   []coder.PlannedEdit{{Path: "calc.go", OldText: sampleBug, NewText: sampleFix}},
			Summary: "SumRange now includes its upper bound (i <= b).",
		})
		return answer(ctx, msgs, opts, llm.Reply{Text: string(plan)})
	case systemIs(msgs, m.prompts.Command):
		return answer(ctx, msgs, opts, llm.Reply{Text: `{"command": ""}`})
	}
	return nil, fmt.Errorf("offline coder model: no answer to a prompt starting %q", firstLine(system))
}

// between returns the text of s between the first before and the last
// after that follows it (the rest of s when after does not follow), or ""
// when before is not in s.
func between(s, before, after string) string {
	_, rest, ok := strings.Cut(s, before)
	if !ok {
		return ""
	}
	if i := strings.LastIndex(rest, after); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

func firstText(msgs []state.Message) string {
	if len(msgs) == 0 {
		return ""
	}
	return msgs[0].Text()
}
