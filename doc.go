// Package agentgraph is a Go SDK for graph-based LLM agents: durable,
// human-steerable workflows with LangGraph's semantics and Go's types.
//
// The packages, from the bottom up:
//
//   - state: the field types of a graph's state — Value, Append, Sum, Map,
//     Reduced and Messages — each deciding how parallel writes merge.
//   - checkpoint: the Saver interface, an in-memory saver, and the
//     conformance suite any saver passes (checkpointtest); SQLite
//     (checkpoint/sqlite, the embedded default) and PostgreSQL
//     (checkpoint/postgres) savers.
//   - graph: the StateGraph builder and its superstep runtime — conditional
//     edges, joins, Send, Command, interrupts with resume, streaming,
//     subgraphs, retries, caching and time travel.
//   - llm: a thin layer over langchaingo models (a provider factory, retries,
//     usage accounting, token streaming) and llm.Scripted, a deterministic
//     model for tests and offline demos.
//   - tools: the Tool interface, typed tools, and coding tools confined to a
//     workspace.
//   - events: an event bus with fan-out to subscribers and sinks.
//
// A tour in code:
//
//	type State struct {
//		Count state.Value[int]
//	}
//	b := graph.New[State]()
//	b.AddNode("inc", func(ctx context.Context, s State) (State, error) {
//		s.Count.Set(s.Count.Get() + 1)
//		return s, nil
//	})
//	b.AddEdge(graph.Start, "inc")
//	b.AddEdge("inc", graph.End)
//	g, _ := b.Compile()
//	out, _ := g.Invoke(ctx, State{Count: state.Set(41)}) // out.Count.Get() == 42
//
// See README.md for the quick start and docs/design.md for the state model
// and the superstep algorithm.
package agentgraph
