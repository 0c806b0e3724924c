// Command support is the program of the guide "Approve a tool call"
// (docs/guides/approve-tool-call.md): a customer-support agent — a ReAct
// loop with two tools on a scripted model — that asks a human before it
// refunds, keeps its threads in a SQLite file so that the answer may come
// from another process, streams each step's messages as typed updates and
// traces its runs with OpenTelemetry.
//
//	support -db support.db -thread t-1 ask "Order A17 never arrived, I want my money back."
//	support -db support.db -thread t-1 answer approve
//	support -db support.db -thread t-1 answer edit '{"order":"A17","amount":60}'
//	support -db support.db -thread t-1 answer reject "Refunds need the parcel back first."
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/telemetry"
	"github.com/agentgraph/agentgraph/tools"
)

// lookupArgs and refundArgs are the arguments of the two tools; their
// JSON Schema, which the model sees, comes from the struct tags.
type lookupArgs struct {
	Order string `json:"order" jsonschema:"required,description=Order number"`
}

type refundArgs struct {
	Order  string `json:"order" jsonschema:"required,description=Order number"`
	Amount int    `json:"amount" jsonschema:"required,description=Euros to refund"`
}

// supportTools returns the agent's tools. refund pays: it appends a line
// to the payments file, so that a test can count the payments made.
func supportTools(payments string) []tools.Tool {
	lookup := tools.New("lookup_order", "Look an order up: its status and price.",
		func(ctx context.Context, a lookupArgs) (string, error) {
			return fmt.Sprintf("order %s: 120 EUR, shipped 12 days ago, not delivered", a.Order), nil
		})
	refund := tools.New("refund", "Refund an order, in full or in part. Moves money: a human approves each call.",
		func(ctx context.Context, a refundArgs) (string, error) {
			f, err := os.OpenFile(payments, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", err
			}
			defer f.Close()
			if _, err := fmt.Fprintf(f, "%s %d\n", a.Order, a.Amount); err != nil {
				return "", err
			}
			return fmt.Sprintf("refunded %d EUR on order %s", a.Amount, a.Order), nil
		})
	return []tools.Tool{lookup, refund}
}

// scriptedModel plays the model: its reply depends on how many answers
// the conversation already holds, not on how often it was called, so a
// process that resumes the thread goes on where the first one stopped.
func scriptedModel() llm.Model {
	return llm.NewScriptedByTurn(
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("call_lookup", "lookup_order", `{"order":"A17"}`)}},
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("call_refund", "refund", `{"order":"A17","amount":120}`)}},
		llm.Reply{Text: "I have dealt with order A17; the refund's outcome is above."},
	)
}

// build compiles the support agent. Every process builds the same agent
// on the same file: a paused thread is resumed by a graph of the shape
// that paused it.
func build(saver *sqlite.Saver, payments string, tp *sdktrace.TracerProvider) (*graph.Graph[agent.ReActState], error) {
	return agent.NewReAct(scriptedModel(), supportTools(payments),
		agent.WithSystemPrompt("You are the support desk of a web shop."),
		agent.WithCheckpointer(saver),
		agent.WithToolApproval("refund"),
		agent.WithCompileOptions(
			telemetry.Instrument(tp),
			graph.WithRunDefaults(graph.RefuseInputWhileInterrupted()),
		))
}

// printUpdates prints the messages each node adds, read as typed updates,
// and returns the error that ended the stream (a *graph.Interrupted when
// the run paused).
func printUpdates(events iter.Seq2[graph.Event, error]) error {
	for ev, err := range events {
		if err != nil {
			return err
		}
		if ev.Mode != graph.ModeUpdates {
			continue
		}
		upd, err := graph.UpdateAs[agent.ReActState](ev)
		if err != nil {
			return err
		}
		for _, m := range upd.Messages.List() {
			fmt.Printf("%s: %s\n", ev.Node, describe(m))
		}
	}
	return nil
}

// describe renders a message on one line.
func describe(m state.Message) string {
	var parts []string
	if t := m.Text(); t != "" && len(m.ToolResults()) == 0 {
		parts = append(parts, t)
	}
	for _, c := range m.ToolCalls() {
		parts = append(parts, fmt.Sprintf("calls %s %s", c.FunctionCall.Name, c.FunctionCall.Arguments))
	}
	for _, r := range m.ToolResults() {
		parts = append(parts, fmt.Sprintf("%s → %s", r.Name, r.Content))
	}
	return strings.Join(parts, "; ")
}

// printRequest prints what the paused thread waits for.
func printRequest(err error) error {
	intr, ok := errors.AsType[*graph.Interrupted](err)
	if !ok {
		return err
	}
	req, err := graph.PayloadAs[agent.ApprovalRequest](intr.Interrupts[0])
	if err != nil {
		return err
	}
	if req.Problem != "" {
		fmt.Printf("the answer was not used: %s\n", req.Problem)
	}
	for _, c := range req.Calls {
		fmt.Printf("waiting for approval: %s %s (%s)\n", c.Tool, c.Args, c.Description)
	}
	return nil
}

// decision reads the answer of the command line.
func decision(args []string) (agent.Decision, error) {
	switch {
	case len(args) == 1 && args[0] == "approve":
		return agent.Approve(), nil
	case len(args) == 2 && args[0] == "edit":
		return agent.Edit(args[1]), nil
	case len(args) >= 1 && args[0] == "reject":
		return agent.Reject(strings.Join(args[1:], " ")), nil
	}
	return agent.Decision{}, fmt.Errorf("answer approve, edit ARGS or reject [MESSAGE], not %q", args)
}

// printSpans prints the tool-call spans this process recorded.
func printSpans(exp *tracetest.InMemoryExporter) {
	for _, s := range exp.GetSpans() {
		if !strings.HasPrefix(s.Name, telemetry.SpanExecuteTool) {
			continue
		}
		status := "ok"
		if s.Status.Code == codes.Error {
			status = "error: " + s.Status.Description
		}
		if slices.ContainsFunc(s.Attributes, func(a attribute.KeyValue) bool {
			return a.Key == telemetry.AttrInterrupted && a.Value.AsBool()
		}) {
			status = "interrupted"
		}
		fmt.Printf("span %s: %s\n", s.Name, status)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("support", flag.ContinueOnError)
	db := fs.String("db", "support.db", "SQLite file of the threads")
	thread := fs.String("thread", "t-1", "conversation")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 2 {
		return errors.New("usage: support [-db F] [-thread T] ask TEXT | answer approve|edit ARGS|reject [MESSAGE]")
	}
	saver, err := sqlite.Open(ctx, *db)
	if err != nil {
		return err
	}
	defer saver.Close()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.WithoutCancel(ctx))
	defer printSpans(exp)
	g, err := build(saver, filepath.Join(filepath.Dir(*db), "payments.log"), tp)
	if err != nil {
		return err
	}

	on := []graph.RunOption{graph.WithThread(*thread), graph.WithStreamModes(graph.ModeUpdates)}
	var events iter.Seq2[graph.Event, error]
	switch fs.Arg(0) {
	case "ask":
		in := agent.ReActState{Messages: state.Msgs(state.Human(strings.Join(fs.Args()[1:], " ")))}
		events = g.Stream(ctx, in, on...)
	case "answer":
		d, err := decision(fs.Args()[1:])
		if err != nil {
			return err
		}
		events = g.StreamResume(ctx, graph.Command[agent.ReActState]{Resume: []agent.Decision{d}}, on...)
	default:
		return fmt.Errorf("unknown command %q", fs.Arg(0))
	}
	return printRequest(printUpdates(events))
}

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "support:", err)
		os.Exit(1)
	}
}
