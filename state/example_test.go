package state_test

import (
	"fmt"

	"github.com/agentgraph/agentgraph/state"
)

// A node writes fields on its own copy of the state; fields it leaves alone
// carry no write.
func Example() {
	type State struct {
		Step  state.Value[int]
		Notes state.Append[string]
	}
	var s State // a snapshot, as a node receives it
	s.Step.Set(0)
	s.Notes.Append("started")
	fmt.Println(s.Step.Written(), s.Notes.Written())

	var untouched State
	fmt.Println(untouched.Step.Written())
	// Output:
	// true true
	// false
}

// Messages appends, replaces by ID and removes.
func ExampleMessages() {
	var history state.Messages
	var w state.Messages
	w.Append(state.Message{MessageContent: state.Human("hi").MessageContent, ID: "1"})
	w.Append(state.Message{MessageContent: state.AI("hello!").MessageContent, ID: "2"})
	_ = history.MergeWrites([]state.Channel{&w})

	var edit state.Messages
	edit.Append(state.Message{MessageContent: state.AI("hello, how can I help?").MessageContent, ID: "2"})
	_ = history.MergeWrites([]state.Channel{&edit})
	for _, m := range history.List() {
		fmt.Printf("%s %s: %s\n", m.ID, m.Role, m.Text())
	}
	// Output:
	// 1 human: hi
	// 2 ai: hello, how can I help?
}
