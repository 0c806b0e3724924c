package state_test

import (
	"fmt"

	"github.com/agentgraph/agentgraph/state"
)

// A node writes fields on its own copy of the state: Get still reads the
// snapshot, and fields the node leaves alone carry no write. (Written is
// part of the graph runtime's view of a field, reached through Channel.)
func Example() {
	type State struct {
		Step  state.Value[int]
		Notes state.Append[string]
	}
	var s State // a snapshot, as a node receives it
	s.Step.Set(1)
	s.Notes.Append("started")
	fmt.Println(s.Step.Get(), s.Step.Channel().Written(), s.Notes.Channel().Written())

	var untouched State
	fmt.Println(untouched.Step.Channel().Written())
	// Output:
	// 0 true true
	// false
}

// Messages appends, replaces by ID and removes. Here the writes are merged
// by hand, as the graph runtime merges them at the end of a step.
func ExampleMessages() {
	var history state.Messages
	var w state.Messages
	w.Append(state.Message{MessageContent: state.Human("hi").MessageContent, ID: "1"})
	w.Append(state.Message{MessageContent: state.AI("hello!").MessageContent, ID: "2"})
	_ = history.Channel().MergeWrites([]state.Channel{w.Channel()})

	var edit state.Messages
	edit.Append(state.Message{MessageContent: state.AI("hello, how can I help?").MessageContent, ID: "2"})
	_ = history.Channel().MergeWrites([]state.Channel{edit.Channel()})
	for _, m := range history.List() {
		fmt.Printf("%s %s: %s\n", m.ID, m.Role, m.Text())
	}
	// Output:
	// 1 human: hi
	// 2 ai: hello, how can I help?
}
