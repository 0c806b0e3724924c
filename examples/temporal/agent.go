package main

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/planexec"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// notesFS holds the bundled notes the agent's tools search and read.
//
//go:embed testdata/notes/*.md
var notesFS embed.FS

// notesDir is the folder of the notes in notesFS.
const notesDir = "testdata/notes"

// workflowName is the Temporal workflow type the agent is registered under.
const workflowName = "research"

// demoQuestion is the question of the README's walk-through.
const demoQuestion = "How long are application logs kept?"

// Node names of the agent's graph.
const (
	planNode     = "plan"
	approveNode  = "approve"
	researchNode = "research"
)

// State is the state of the agent on Temporal: a question, the plan a
// human reviews, the reviewer's answer and the final answer.
type State struct {
	// Question is the user's question.
	Question state.Value[string]
	// Plan is the plan the reviewer is asked to approve.
	Plan state.Value[[]string]
	// Review is the reviewer's answer to the plan.
	Review state.Value[string]
	// Approved reports whether the reviewer approved the plan.
	Approved state.Value[bool]
	// Answer is the agent's answer, in markdown.
	Answer state.Value[string]
}

// PlanReview is the value of the approve node's interrupt: what the
// reviewer is asked to approve.
type PlanReview struct {
	Question string   `json:"question"`
	Plan     []string `json:"plan"`
}

// planPrompt is the system prompt of the plan node.
const planPrompt = `You plan research for a human reviewer who approves the plan before it runs.
Break the question into at most 4 short research steps over a collection of team notes.

Question: %s

Answer with a JSON array of strings and nothing else.`

// newAgent returns the agent's graph: plan (the model proposes a plan) →
// approve (graph.Interrupt asks a human to approve it) → research (the
// plan-and-execute agent of package planexec, as a subgraph, with tools
// over the bundled notes) → END; a rejected plan ends the run at approve.
func newAgent(model llm.Model, saver checkpoint.Saver) (*graph.Graph[State], error) {
	research, err := planexec.New(model, noteTools(), planexec.WithMaxIterations(3))
	if err != nil {
		return nil, err
	}
	b := graph.New[State]()
	b.AddNode(planNode, func(ctx context.Context, s State) (State, error) {
		resp, err := model.Generate(ctx, []state.Message{
			state.System(fmt.Sprintf(planPrompt, s.Question.Get())),
			state.Human(s.Question.Get()),
		})
		if err != nil {
			return State{}, fmt.Errorf("plan: %w", err)
		}
		return State{Plan: state.Set(parsePlan(resp.Message.Text(), s.Question.Get()))}, nil
	})
	b.AddNode(approveNode, func(ctx context.Context, s State) (State, error) {
		answer, err := graph.InterruptAs[string](ctx, PlanReview{Question: s.Question.Get(), Plan: s.Plan.Get()})
		if err != nil {
			return State{}, err
		}
		out := State{Review: state.Set(answer), Approved: state.Set(approves(answer))}
		if !approves(answer) {
			out.Answer = state.Set("The reviewer rejected the plan: " + answer)
		}
		return out, nil
	})
	b.AddCommandNode(researchNode, graph.Subgraph(research,
		func(s State) planexec.State {
			return planexec.Input(researchInput(s.Question.Get(), s.Plan.Get(), s.Review.Get()))
		},
		func(r planexec.State) State { return State{Answer: state.Set(r.Response.Get())} },
	))
	b.AddEdge(graph.Start, planNode)
	b.AddEdge(planNode, approveNode)
	b.AddConditionalEdges(approveNode, func(_ context.Context, s State) (string, error) {
		if s.Approved.Get() {
			return researchNode, nil
		}
		return graph.End, nil
	}, graph.WithDestinations(researchNode, graph.End))
	b.AddEdge(researchNode, graph.End)
	return b.Compile(graph.WithCheckpointer(saver), graph.WithName("research-on-temporal"))
}

// input returns the input state of a run answering question.
func input(question string) State {
	return State{
		Question: state.Set(question),
		Plan:     state.Set[[]string](nil),
		Review:   state.Set(""),
		Approved: state.Set(false),
		Answer:   state.Set(""),
	}
}

// approves reports whether a reviewer's answer approves the plan: any
// answer but a refusal ("reject", "no"…) does; an answer other than a
// plain yes is passed to the research agent as the reviewer's note.
func approves(answer string) bool {
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "reject", "rejected", "no", "n", "deny", "denied", "abort", "stop":
		return false
	}
	return true
}

// plainYes reports whether answer approves the plan without a note.
func plainYes(answer string) bool {
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "", "approve", "approved", "yes", "y", "ok":
		return true
	}
	return false
}

// researchInput is the question given to the research agent: the user's
// question first (on a line of its own), then the approved plan and the
// reviewer's note.
func researchInput(question string, plan []string, review string) string {
	var b strings.Builder
	b.WriteString(question)
	if len(plan) > 0 {
		b.WriteString("\n\nA reviewer approved this plan:")
		for i, step := range plan {
			fmt.Fprintf(&b, "\n%d. %s", i+1, step)
		}
	}
	if !plainYes(review) {
		fmt.Fprintf(&b, "\n\nThe reviewer's note: %s", review)
	}
	return b.String()
}

// parsePlan reads the model's JSON array of steps; an answer without a
// usable array gives the one step of researching the question.
func parsePlan(text, question string) []string {
	start, end := strings.IndexByte(text, '['), strings.LastIndexByte(text, ']')
	var steps []string
	if start >= 0 && end > start && json.Unmarshal([]byte(text[start:end+1]), &steps) == nil {
		steps = slices.DeleteFunc(steps, func(s string) bool { return strings.TrimSpace(s) == "" })
		if len(steps) > 0 {
			return steps
		}
	}
	return []string{"Research: " + question}
}

// SearchArgs are the arguments of the search_notes tool.
type SearchArgs struct {
	Query string `json:"query" jsonschema:"required,description=Words to look for in the notes"`
}

// ReadArgs are the arguments of the read_note tool.
type ReadArgs struct {
	Name string `json:"name" jsonschema:"required,description=The note's file name as search_notes prints it"`
}

// noteTools returns the research agent's tools over the bundled notes.
func noteTools() []tools.Tool {
	return []tools.Tool{
		tools.New("search_notes", "Search the team's notes; prints the matching notes, best first, with their title.", searchNotes),
		tools.New("read_note", "Read one of the team's notes.", readNote),
	}
}

// searchNotes ranks the notes by how many of the query's words (of four
// letters or more) they contain, and prints those that contain any, one
// per line as "name: title".
func searchNotes(_ context.Context, args SearchArgs) (string, error) {
	words := queryWords(args.Query)
	if len(words) == 0 {
		return "", errors.New("the query has no word of four letters or more")
	}
	entries, err := fs.ReadDir(notesFS, notesDir)
	if err != nil {
		return "", err
	}
	type hit struct {
		name, title string
		score       int
	}
	var hits []hit
	for _, e := range entries {
		data, err := fs.ReadFile(notesFS, path.Join(notesDir, e.Name()))
		if err != nil {
			return "", err
		}
		text := strings.ToLower(string(data))
		score := 0
		for _, w := range words {
			if strings.Contains(text, w) {
				score++
			}
		}
		if score > 0 {
			title, _, _ := strings.Cut(string(data), "\n")
			hits = append(hits, hit{e.Name(), strings.TrimPrefix(title, "# "), score})
		}
	}
	if len(hits) == 0 {
		return "no note matches", nil
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	var b strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&b, "%s: %s\n", h.name, h.title)
	}
	return b.String(), nil
}

// queryWords returns the lower-cased words of q of four letters or more.
func queryWords(q string) []string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	}) {
		if len(w) >= 4 && !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	return words
}

// readNote returns the content of the note name; names with a path are
// refused.
func readNote(_ context.Context, args ReadArgs) (string, error) {
	if args.Name == "" || strings.ContainsAny(args.Name, `/\`) || args.Name == "." || args.Name == ".." {
		return "", fmt.Errorf("no note %q: give a name as search_notes prints it", args.Name)
	}
	data, err := fs.ReadFile(notesFS, path.Join(notesDir, args.Name))
	if err != nil {
		return "", fmt.Errorf("no note %q: give a name as search_notes prints it", args.Name)
	}
	return string(data), nil
}

// offlineModel is the model of the offline demo. Unlike llm.Scripted,
// whose replies are consumed in order by one process, its reply is a
// function of the messages alone, so that two worker processes, each with
// its own copy, carry on each other's runs. It recognises the prompt it
// answers by its system message: the plan node's, and planexec's default
// planner, executor, refinery and synthesizer prompts. The executor part
// calls the real tools (search_notes, then read_note on the best hit) and
// its step summary quotes the note the tool returned; the plans, the
// refinery's decision and the wording around the quotes are canned.
type offlineModel struct {
	prompts planexec.Prompts
}

func newOfflineModel() *offlineModel { return &offlineModel{prompts: planexec.DefaultPrompts()} }

// Generate answers msgs as the part of the agent whose prompt they carry.
func (m *offlineModel) Generate(ctx context.Context, msgs []state.Message, _ ...llm.CallOption) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(msgs) == 0 || msgs[0].Role != llms.ChatMessageTypeSystem {
		return nil, errors.New("offline model: the conversation starts with no system message")
	}
	system := msgs[0].Text()
	is := func(template string) bool {
		first, _, _ := strings.Cut(template, "\n")
		return strings.HasPrefix(system, first)
	}
	var text string
	var calls []llms.ToolCall
	switch {
	case is(planPrompt):
		text = `["Search the notes for the question's subject", "Read the best matching note", "Answer from what it says"]`
	case is(m.prompts.Planner):
		text = `["Search the notes for the question and read the best matching note"]`
	case is(m.prompts.Executor):
		text, calls = m.execute(msgs)
	case is(m.prompts.Refine):
		text = `{"decision": "FINISH", "reason": "the note that answers the question was read"}`
	case is(m.prompts.Synthesize):
		findings := between(system, "Findings:\n", "\n\nWrite a complete")
		if i := strings.LastIndex(findings, "\n---\n"); i >= 0 {
			findings = findings[i+len("\n---\n"):]
		}
		text = "## Answer (offline demo: a scripted model quoting the note its tools read)\n\n" + strings.TrimSpace(findings)
	default:
		return nil, fmt.Errorf("offline model: no scripted answer to a prompt starting %q", firstLine(system))
	}
	stop := llm.StopEnd
	if len(calls) > 0 {
		stop = llm.StopToolCalls
	}
	return &llm.Response{Message: state.AI(text, calls...), StopReason: stop}, nil
}

// execute is the executor's part: search, then read the best hit, then
// report the note.
func (m *offlineModel) execute(msgs []state.Message) (string, []llms.ToolCall) {
	results := map[string]string{}
	for _, msg := range msgs {
		for _, r := range msg.ToolResults() {
			results[r.Name] = r.Content
		}
	}
	search, searched := results["search_notes"]
	note, read := results["read_note"]
	switch {
	case !searched:
		task := msgs[len(msgs)-1].Text()
		q := firstLine(between(task, "(It serves the question: ", ")"))
		if q == "" {
			q = task
		}
		args, _ := json.Marshal(SearchArgs{Query: q})
		return "I'll search the notes.", []llms.ToolCall{state.ToolCall("call_search", "search_notes", string(args))}
	case !read:
		name, _, ok := strings.Cut(firstLine(search), ": ")
		if !ok {
			return "No note answers this step: " + firstLine(search), nil
		}
		args, _ := json.Marshal(ReadArgs{Name: name})
		return "I'll read " + name + ".", []llms.ToolCall{state.ToolCall("call_read", "read_note", string(args))}
	}
	name, _, _ := strings.Cut(firstLine(search), ": ")
	return fmt.Sprintf("The note %s says:\n\n%s", name, strings.TrimSpace(note)), nil
}

// between returns the text of s between the first before and the last
// after that follows it, or "".
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
