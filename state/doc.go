// Package state provides the field types of a graph's state. A state is a
// plain Go struct; the type of each field is its channel and decides how
// the writes of parallel nodes merge at the end of a superstep:
//
//	type State struct {
//		Messages state.Messages          // add or replace by ID, Remove, RemoveAll
//		Plan     state.Value[[]string]   // last value; two writes in one step are an error
//		Results  state.Append[string]    // concatenation, in a deterministic order
//		Tokens   state.Sum[int]          // a counter
//		Seen     state.Map[string, bool] // merged key by key
//		Summary  state.Reduced[string, Join] // your own reducer, as a type
//	}
//
// Every field holds its current value, read with Get (List for Messages),
// and an optional pending write recorded on the node's own copy by Set,
// Append, Add, Put, Update, Remove or Overwrite. A node receives a snapshot
// without pending writes, so it returns exactly what it wrote:
//
//	func plan(ctx context.Context, s State) (State, error) {
//		s.Plan.Set(makePlan(s.Messages.List()))
//		s.Tokens.Overwrite(0) // writing a zero value is a write
//		return s, nil          // Messages, Results, Seen: untouched
//	}
//
// Get reads the snapshot: a node does not see its own writes, which become
// visible in the next step (as in LangGraph). Overwrite replaces a reducer
// field's value outright. Slices returned by Get have capacity equal to
// their length, so appending to them copies instead of writing into a
// snapshot other nodes read; do not modify their elements in place.
//
// [Message] wraps langchaingo's llms.MessageContent with an ID and a name,
// and round-trips through JSON losslessly (valid UTF-8 text), tool calls
// included. Every field type round-trips through JSON too: checkpoints
// store values and pending writes that way.
//
// Because Message embeds llms.MessageContent, this package — and so every
// program that imports package graph, even one that never calls a model —
// imports langchaingo's llms, whose count_tokens.go imports
// github.com/pkoukk/tiktoken-go (and through it github.com/dlclark/regexp2,
// github.com/google/uuid and net/http). Go's linker drops the code that is
// not called: a graph-only binary keeps about 8 kB of those packages,
// their package variables and init functions, which allocate a map and a
// mutex and download nothing. Only a message type of our own, converted at
// the model boundary, would cut the import itself.
//
// The graph runtime drives these types through the [Channel] interface,
// which user code does not need; a new merge rule is a [Reducer] used with
// [Reduced], not a new Channel. The runtime's methods (merging writes,
// encoding them for checkpoints) are not on the field types themselves, so
// that their documentation lists only the methods above: each type has one
// accessor, Channel, returning the runtime's view of the field — the same
// memory under an unexported type, at no allocation, as protobuf-go's
// ProtoReflect is the one door to a message's reflection. The runtime
// reflects over a state struct once, at Compile; every later step reaches
// a field's Channel from its address through a prototype view made then.
package state
