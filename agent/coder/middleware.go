package coder

import (
	"context"
	"errors"

	"github.com/agentgraph/agentgraph/agent/middleware"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
)

// note adds a feedback entry of the current node to the working memory.
func note(ctx context.Context, out *State, kind, text string) {
	out.Memory.Update(middleware.WorkingMemory{Feedback: []middleware.Feedback{{
		Node: graph.NodeName(ctx), Step: graph.Step(ctx), Kind: kind, Text: text}}})
}

// setLastError records the last error in the working memory.
func setLastError(out *State, text string) {
	out.Memory.Update(middleware.WorkingMemory{LastError: text})
}

// setCurrentFile records the file being worked on.
func setCurrentFile(out *State, path string) {
	out.Memory.Update(middleware.WorkingMemory{CurrentFile: path})
}

// handleErrors is the error handling of every node: middleware.HandleErrors
// on the state's working memory, which runs a failing node up to
// maxNodeRetries times in all and then ends the request with an answer
// that says what failed (Halted, OutcomeError) instead of failing the run.
func (a *Agent) handleErrors() graph.Middleware[State] {
	return middleware.HandleErrors(
		func(s State) middleware.WorkingMemory { return s.Memory.Get() },
		func(u *State, d middleware.WorkingMemory) { u.Memory.Update(d) },
		func(ctx context.Context, s State, f middleware.NodeFailure) State {
			var out State
			out.Halted.Set(true)
			intent := s.Route.Get().Intent
			if intent == "" {
				intent = DefaultIntent
			}
			a.finish(ctx, &out, s, intent, f.Message(), OutcomeError)
			return out
		},
		middleware.WithNodeAttempts(a.cfg.maxNodeRetries),
		middleware.WithRerunIf(worthRerunning))
}

// logNodes is the graph middleware that writes the node log and records
// the node and step in the working memory.
func (a *Agent) logNodes(next graph.CommandFunc[State]) graph.CommandFunc[State] {
	return func(ctx context.Context, s State) (graph.Command[State], error) {
		cmd, err := next(ctx, s)
		if graph.IsInterrupt(err) {
			return cmd, err
		}
		node := graph.NodeName(ctx)
		e := NodeLogEntry{Thread: s.Thread.Get(), Turn: s.Turn.Get(), Node: node, Intent: s.Route.Get().Intent}
		if err != nil {
			e.Error = err.Error()
		}
		lerr := a.mem.LogNode(context.WithoutCancel(ctx), e)
		if err != nil {
			return cmd, err
		}
		cmd.Update.Memory.Update(middleware.WorkingMemory{CurrentNode: node, CurrentStep: graph.Step(ctx)})
		if lerr != nil {
			note(ctx, &cmd.Update, "memory", "node log: "+lerr.Error())
		}
		return cmd, nil
	}
}

// worthRerunning reports whether another run of a node might heal err:
// not when the model's provider refused the request itself (a bad
// request, a bad key, a missing model), nor when the model package has
// already retried the call (a server down or overloaded for all its
// attempts): running the node again would multiply those attempts.
func worthRerunning(err error) bool {
	var le *llm.Error
	return !errors.As(err, &le) || (le.Retryable && le.Attempts <= 1)
}
