package graph

import (
	"context"
	"errors"
	"fmt"
	"unsafe"
)

// Subgraph turns the compiled graph sub into a node of a parent graph with
// state P, for [Builder.AddCommandNode]. The subgraph runs as a nested run:
// it shares the parent's checkpointer and thread under its own namespace
// ("node:taskID"), its events join the parent's stream with that namespace
// when the parent streams [WithSubgraphs], its interrupts pause the parent
// (resuming the parent resumes the subgraph where it stopped), and a
// Command{Parent: true} from one of its nodes is applied to the parent.
//
// in builds the subgraph's input (its writes) from the parent's state, and
// out turns the subgraph's final state into the parent's writes. When they
// are nil, P and C must be the same type: the subgraph starts from the
// parent's state, and every write the subgraph's nodes made is replayed
// into the parent, through the parent's reducers, as the node's writes.
func Subgraph[P, C any](sub *Graph[C], in func(P) C, out func(C) P) CommandFunc[P] {
	return func(ctx context.Context, p P) (Command[P], error) {
		var input C
		if in != nil {
			input = in(p)
		} else {
			c, ok := any(p).(C)
			if !ok {
				return Command[P]{}, fmt.Errorf("graph: subgraph of state %T in a graph of state %T needs in and out mappings", *new(C), p)
			}
			input = c
			ptr := unsafe.Pointer(&input)
			for fi := range sub.sc.fields {
				sub.sc.ch(ptr, fi).WriteValue()
			}
		}
		l := sub.newLoop(nil)
		l.accumulate = out == nil
		err := l.run(ctx, &input, nil)
		var pc *parentCommand[C]
		if errors.As(err, &pc) {
			upd, ok := any(pc.cmd.Update).(P)
			if !ok {
				return Command[P]{}, fmt.Errorf("graph: Command{Parent: true} from a subgraph of state %T needs the parent's state type, %T", *new(C), p)
			}
			return Command[P]{Update: upd, Goto: pc.cmd.Goto}, nil
		}
		var intr *Interrupted
		if errors.As(err, &intr) {
			if rt := runtimeFrom(ctx); rt != nil {
				sp := rt.hdr.scratch()
				sp.mu.Lock()
				if !sp.detached {
					sp.raised = append(sp.raised, intr.Interrupts...)
					sp.paused = true
				}
				sp.mu.Unlock()
			}
			return Command[P]{}, err
		}
		if err != nil {
			return Command[P]{}, err
		}
		if out != nil {
			return Command[P]{Update: out(l.vals)}, nil
		}
		upd, _ := any(l.accum).(P)
		return Command[P]{Update: upd}, nil
	}
}
