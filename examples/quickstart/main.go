// Command quickstart runs a small checkpointed workflow end to end, offline:
// it plans three research questions, answers them in parallel with Send
// (map-reduce), pauses for a human to approve the summary (answered
// automatically unless -ask is given), then resumes from the checkpoint and
// prints the result. It uses no model and no server.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// State is the workflow's state: each field's type is its merge rule.
type State struct {
	Topic    state.Value[string]
	Question state.Value[string] // a worker's input (sent with Send)
	Findings state.Append[string]
	Summary  state.Value[string]
	Approved state.Value[bool]
}

func build(saver checkpoint.Saver) (*graph.Graph[State], error) {
	b := graph.New[State]()
	b.AddNode("plan", func(ctx context.Context, s State) (State, error) { return State{}, nil })
	b.AddBranch("plan", func(ctx context.Context, s State) (graph.Route[State], error) {
		var r graph.Route[State]
		for _, q := range []string{"what is it", "who uses it", "what are its limits"} {
			r.Sends = append(r.Sends, graph.Send[State]{Node: "research", Arg: State{Question: state.Set(q + " — " + s.Topic.Get())}})
		}
		return r, nil
	}, graph.WithDestinations("research"))
	b.AddNode("research", func(ctx context.Context, s State) (State, error) {
		return State{Findings: state.Items("finding for: " + s.Question.Get())}, nil
	})
	b.AddNode("summarize", func(ctx context.Context, s State) (State, error) {
		return State{Summary: state.Set(fmt.Sprintf("%d findings about %s", len(s.Findings.Get()), s.Topic.Get()))}, nil
	}, graph.WithDeferred())
	b.AddNode("approve", func(ctx context.Context, s State) (State, error) {
		ok, err := graph.InterruptAs[bool](ctx, "approve the summary: "+s.Summary.Get()+"?")
		if err != nil {
			return s, err
		}
		s.Approved.Set(ok)
		return s, nil
	})
	b.AddEdge(graph.Start, "plan")
	b.AddEdge("research", "summarize")
	b.AddEdge("summarize", "approve")
	b.AddEdge("approve", graph.End)
	return b.Compile(graph.WithCheckpointer(saver))
}

func main() {
	ask := flag.Bool("ask", false, "ask on the terminal instead of approving automatically")
	topic := flag.String("topic", "agentgraph", "what to research")
	flag.Parse()
	if err := run(context.Background(), *topic, *ask); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, topic string, ask bool) error {
	g, err := build(checkpoint.NewMemory())
	if err != nil {
		return err
	}
	fmt.Println("graph:")
	fmt.Print(g.String())
	thread := graph.WithThread("quickstart")
	var pause *graph.Interrupted
	for ev, err := range g.Stream(ctx, State{Topic: state.Set(topic)}, thread) {
		if errors.As(err, &pause) {
			break
		}
		if err != nil {
			return err
		}
		switch {
		case ev.Node == "":
		case len(ev.Interrupts) > 0:
			fmt.Printf("step %d: %s paused\n", ev.Step, ev.Node)
		default:
			fmt.Printf("step %d: %s finished\n", ev.Step, ev.Node)
		}
	}
	if pause == nil {
		return errors.New("expected the run to pause for approval")
	}
	question := pause.Interrupts[0].Value
	answer := true
	if ask {
		fmt.Printf("%v [y/N] ", question)
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		answer = strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y")
	} else {
		fmt.Printf("paused: %v — approving automatically (run with -ask to answer)\n", question)
	}
	out, err := g.Resume(ctx, graph.Command[State]{Resume: answer}, thread)
	if err != nil {
		return err
	}
	fmt.Printf("summary: %s (approved: %v)\n", out.Summary.Get(), out.Approved.Get())
	for _, f := range out.Findings.Get() {
		fmt.Println(" -", f)
	}
	return nil
}
