package main

import (
	"context"
	"reflect"

	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// newRequest is the coder's node middleware that makes each run of the
// served graph a new request, as coder.Agent.Ask's input does: a client
// sends only {"Request": …} (and "Thread"), and the route node — the
// first node of every request — starts from a clean working memory and
// the next turn. Without it a thread's second request would carry the
// first one's answer, edits and attempts.
func newRequest(next graph.CommandFunc[coder.State]) graph.CommandFunc[coder.State] {
	return func(ctx context.Context, s coder.State) (graph.Command[coder.State], error) {
		if graph.NodeName(ctx) != coder.RouteNode {
			return next(ctx, s)
		}
		reset := coder.RequestStart(s.Turn.Get() + 1)
		in := s
		apply(&in, reset, false)
		cmd, err := next(ctx, in)
		if err != nil {
			return cmd, err
		}
		apply(&cmd.Update, reset, true)
		return cmd, nil
	}
}

// apply puts reset's writes on dst. With after, dst holds a node's
// writes, which come after the reset: a field the node wrote too gets the
// reset followed by the node's write. Without, dst is a state the node
// will read, and the reset fields take their reset value.
func apply(dst *coder.State, reset coder.State, after bool) {
	d, r := reflect.ValueOf(dst).Elem(), reflect.ValueOf(&reset).Elem()
	for i := range d.NumField() {
		rf := r.Field(i).Addr().Interface().(interface{ Channel() state.Channel })
		if !rf.Channel().Written() {
			continue
		}
		df := d.Field(i).Addr().Interface().(interface{ Channel() state.Channel })
		if after && df.Channel().Written() {
			merged := reflect.New(r.Field(i).Type())
			merged.Elem().Set(r.Field(i))
			merged.Interface().(interface{ Channel() state.Channel }).Channel().ComposeWrite(df.Channel())
			d.Field(i).Set(merged.Elem())
			continue
		}
		d.Field(i).Set(r.Field(i))
	}
}
