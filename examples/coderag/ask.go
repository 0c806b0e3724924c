package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strings"

	"github.com/agentgraph/agentgraph/agent/planexec"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/tools"
)

// askCommand is `coderag ask "question"`.
func askCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("ask", `ask "question" [--model SPEC] [--verbose] [--dir DIR]`,
		"Answers a question about the code of DIR with the plan-and-execute agent, updating\n"+
			"DIR's index first. With no model configured (no --model, no $"+modelEnv+"), runs offline:\n"+
			"a scripted model over a real index of a bundled sample project.", stderr)
	spec := fs.String("model", "", "model, e.g. openai:gpt-4o, anthropic:claude-sonnet-4-5, openai-compatible:<model>@<base URL> (default: $"+modelEnv+"; none: the offline demo)")
	verbose := fs.Bool("verbose", false, "also print the model calls and the agent's state after every superstep")
	dir := fs.String("dir", "", "the directory to ask about (default: the current directory; with no model: the bundled sample)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageErrorf(fs, "want one question (quote it), got %d arguments", len(pos))
	}
	if *spec == "" {
		*spec = strings.TrimSpace(os.Getenv(modelEnv))
	}
	question := ""
	if len(pos) == 1 {
		question = pos[0]
	}

	var model llm.Model
	root := *dir
	if *spec == "" {
		if root != "" {
			return usageErrorf(fs, "no model configured for %s: pass --model (e.g. --model openai:gpt-4o) or set $%s; without --dir, ask runs the offline demo on a bundled sample", root, modelEnv)
		}
		tmp, err := os.MkdirTemp("", "coderag-sample-")
		if err != nil {
			return fail(stderr, err)
		}
		defer os.RemoveAll(tmp)
		if err := copySample(tmp); err != nil {
			return fail(stderr, fmt.Errorf("copy the sample project: %w", err))
		}
		// The sample is a module of its own: a go.work of the environment
		// must not apply when get_callers loads it.
		os.Setenv("GOWORK", "off")
		printDemoNotice(stdout, tmp, question)
		root, question, model = tmp, demoQuestion, demoModel()
	} else {
		if question == "" {
			return usageErrorf(fs, "want a question")
		}
		if root == "" {
			root = "."
		}
		m, err := llm.New(ctx, *spec)
		if err != nil {
			return fail(stderr, err)
		}
		model = m
		fmt.Fprintf(stdout, "model %s\n", *spec)
	}

	ix, err := index(ctx, root, false, nil, stdout, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	defer ix.Close()
	cb, err := newCodebase(ix)
	if err != nil {
		return fail(stderr, err)
	}
	g, err := planexec.New(model, cb.agentTools(), planexec.WithMaxFindingLength(maxFindingLength),
		planexec.WithToolNodeOptions(tools.WithMaxCalls(maxCallsPerTurn)))
	if err != nil {
		return fail(stderr, err)
	}

	fmt.Fprintf(stdout, "\nquestion: %s\n", question)
	p := &printer{w: stdout, verbose: *verbose}
	stream := g.Stream(ctx, planexec.Input(question), graph.WithStreamModes(events.StreamModes|graph.ModeValues))
	final, watched := p.watch(stream)
	if err := events.Bridge(ctx, p, "ask", watched); err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "\nanswer:\n%s\n", final().Response.Get())
	return exitOK
}

// maxFindingLength bounds each finding of the agent, in characters: a
// step may read several files, each up to maxToolOutput, and its finding
// goes into every later prompt.
const maxFindingLength = 60_000

// maxCallsPerTurn bounds the tool calls of one model turn that run; the
// others are answered "not run" (tools.WithMaxCalls).
const maxCallsPerTurn = 8

// printDemoNotice says that the run is the offline demo, with a scripted
// model, and how to use a real one.
func printDemoNotice(w io.Writer, dir, asked string) {
	fmt.Fprintf(w, `coderag: OFFLINE DEMO — no model is configured (no --model flag, no $%s).
  The model is SCRIPTED: its replies are canned and no LLM is called. Its tool calls
  (search_codebase, read_file, get_callers) run for real, on a real index of a bundled
  sample Go project copied to %s (removed at exit), and their results are printed;
  the text of its answers was written in advance for the question below.
`, modelEnv, dir)
	if asked != "" && asked != demoQuestion {
		fmt.Fprintf(w, "  Your question %q is not the one the script answers; it asks %q instead.\n", asked, demoQuestion)
	}
	fmt.Fprintf(w, `  To use a real model on your code:
    coderag ask --dir DIR --model openai:gpt-4o "question"                 (needs OPENAI_API_KEY)
    coderag ask --dir DIR --model anthropic:claude-sonnet-4-5 "question"   (needs ANTHROPIC_API_KEY)
    coderag ask --dir DIR --model openai-compatible:<model>@<base URL> "question"
  or set $%s instead of --model.

`, modelEnv)
}

// printer prints the events of the agent's run as they come: it is the
// events.Publisher of events.Bridge, called on the run's goroutine.
type printer struct {
	w       io.Writer
	verbose bool
	// calls are the tool calls of the model's last turn whose results are
	// not printed yet, in call order; results holds those that arrived
	// before an earlier call's. Results are printed in call order, each
	// under its call, however the calls finish.
	calls   []events.ToolCall
	results map[string]events.ToolResult
}

// What is shown of a plan, a tool result and a finding when not verbose:
// the steps of a plan, the runes of a step, the lines of a result and of
// a finding.
const (
	planPreviewSteps    = 10
	stepPreviewRunes    = 200
	resultPreviewLines  = 8
	findingPreviewLines = 12
)

// Publish implements events.Publisher.
func (p *printer) Publish(ev events.Event) {
	switch d := ev.Data.(type) {
	case planexec.PlanMade:
		p.flushCalls()
		note := ""
		if d.Fallback {
			note = " (the model's plan was not usable JSON: one generic step)"
		}
		// Only the plan's first step runs in an iteration; the planner plans
		// the rest again in the light of what it found (see planexec).
		fmt.Fprintf(p.w, "\nplan, iteration %d of at most %d%s: %d step(s); this iteration runs the first, then the planner plans again\n",
			d.Iteration, d.MaxIterations, note, len(d.Steps))
		if len(d.Steps) == 0 {
			break
		}
		fmt.Fprintf(p.w, "  next: %s\n", p.step(d.Steps[0]))
		later := d.Steps[1:]
		if !p.verbose {
			if len(later) > 0 {
				fmt.Fprintf(p.w, "  (%d later step(s) foreseen, not run unless planned again; --verbose shows them)\n", len(later))
			}
			break
		}
		for i, s := range later {
			fmt.Fprintf(p.w, "  later %d. %s\n", i+2, s)
		}
	case planexec.StepStarted:
		p.flushCalls()
		fmt.Fprintf(p.w, "\nstep (iteration %d): %s\n", d.Iteration, p.step(d.Step))
	case events.ToolCall:
		fmt.Fprintf(p.w, "  → %s %s\n", d.Name, d.Args)
		p.calls = append(p.calls, d)
	case events.ToolResult:
		p.result(d)
	case planexec.FindingRecorded:
		p.flushCalls()
		if p.verbose {
			fmt.Fprintf(p.w, "finding %q:\n%s", d.Key, p.preview(d.Text, 0, "    "))
			break
		}
		// The tool results were shown as they came: show the last part,
		// the executor's answer when it gave one.
		parts := strings.Split(d.Text, "\n---\n")
		fmt.Fprintf(p.w, "finding %q (%d parts, the last one):\n%s", d.Key, len(parts),
			p.preview(parts[len(parts)-1], findingPreviewLines, "    "))
	case planexec.DecisionMade:
		note := ""
		switch {
		case d.Forced:
			note = " (forced: iteration limit)"
		case d.Fallback:
			note = " (the model's decision was not usable JSON)"
		}
		fmt.Fprintf(p.w, "\ndecision: %s%s — %s\n", d.Decision, note, d.Reason)
	case events.ModelCall:
		if p.verbose {
			fmt.Fprintf(p.w, "  [model call in %s: %d tool calls, %d tokens] %s\n", ev.Node, d.ToolCalls, d.TotalTokens, oneLine(d.Text, 120))
		}
	case events.Error:
		fmt.Fprintf(p.w, "\nerror: %s\n", d.Message)
	}
}

// result prints r under its call once the results of every call before
// it are printed; until then it is kept.
func (p *printer) result(r events.ToolResult) {
	if !slices.ContainsFunc(p.calls, func(c events.ToolCall) bool { return c.ID == r.ID }) {
		// A result of no call seen: print it as it is.
		fmt.Fprintf(p.w, "  ← %s:\n%s", r.Name, p.preview(r.Result, resultPreviewLines, "      "))
		return
	}
	if p.results == nil {
		p.results = map[string]events.ToolResult{}
	}
	p.results[r.ID] = r
	for len(p.calls) > 0 {
		c := p.calls[0]
		r, ok := p.results[c.ID]
		if !ok {
			return
		}
		delete(p.results, c.ID)
		p.calls = p.calls[1:]
		fmt.Fprintf(p.w, "  ← %s %s:\n%s", c.Name, oneLine(c.Args, stepPreviewRunes), p.preview(r.Result, resultPreviewLines, "      "))
	}
}

// flushCalls prints the results kept for calls whose earlier calls have
// no result, and forgets the calls: a new step or plan begins.
func (p *printer) flushCalls() {
	for _, c := range p.calls {
		if r, ok := p.results[c.ID]; ok {
			fmt.Fprintf(p.w, "  ← %s %s:\n%s", c.Name, oneLine(c.Args, stepPreviewRunes), p.preview(r.Result, resultPreviewLines, "      "))
		}
	}
	p.calls, p.results = nil, nil
}

// step returns a plan step on one line, cut to stepPreviewRunes runes
// unless verbose.
func (p *printer) step(s string) string {
	if p.verbose {
		return s
	}
	return oneLine(s, stepPreviewRunes)
}

// preview indents text, cut to n lines unless verbose.
func (p *printer) preview(text string, n int, indent string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	more := 0
	if !p.verbose && len(lines) > n {
		lines, more = lines[:n], len(lines)-n
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(indent + l + "\n")
	}
	if more > 0 {
		fmt.Fprintf(&b, "%s… %d more lines (--verbose shows all)\n", indent, more)
	}
	return b.String()
}

// oneLine returns text on one line, cut to n runes.
func oneLine(text string, n int) string {
	r := []rune(strings.Join(strings.Fields(text), " "))
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}

// watch returns stream as it is, for events.Bridge, and a function that
// returns the last state the stream yielded (after Bridge returned). When
// verbose, it prints the whole state after every superstep, with the
// nodes that ran in it.
func (p *printer) watch(stream iter.Seq2[graph.Event, error]) (func() planexec.State, iter.Seq2[graph.Event, error]) {
	var last planexec.State
	var nodes []string
	seq := func(yield func(graph.Event, error) bool) {
		for ev, err := range stream {
			switch {
			case err != nil:
			case ev.Mode == graph.ModeUpdates && ev.Namespace == "":
				if !slices.Contains(nodes, ev.Node) {
					nodes = append(nodes, ev.Node)
				}
			case ev.Mode == graph.ModeValues && ev.Namespace == "":
				if s, ok := ev.Payload.(planexec.State); ok {
					last = s
					if p.verbose {
						p.dumpState(ev.Step, nodes, s)
					}
					nodes = nil
				}
			}
			if !yield(ev, err) {
				return
			}
		}
	}
	return func() planexec.State { return last }, seq
}

// dumpState prints s as indented JSON.
func (p *printer) dumpState(step int, nodes []string, s planexec.State) {
	b, err := json.MarshalIndent(s, "    ", "  ")
	if err != nil {
		fmt.Fprintf(p.w, "  [state after superstep %d: %v]\n", step, err)
		return
	}
	ran := strings.Join(nodes, ", ")
	if ran == "" {
		ran = "the input"
	}
	fmt.Fprintf(p.w, "  [state after superstep %d (%s)]\n    %s\n", step, ran, b)
}

// graphCommand is `coderag graph`: the agent's graph as Mermaid.
func graphCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("graph", "graph", "Prints the graph of the ask agent as a Mermaid flowchart.", stderr)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageErrorf(fs, "want no arguments, got %d", len(pos))
	}
	// The graph's shape depends on the tools' presence only: a codebase
	// with no index is never called.
	g, err := planexec.New(llm.NewScripted(), (&codebase{}).agentTools())
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprint(stdout, g.Mermaid())
	return exitOK
}
