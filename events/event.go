package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"
)

// Kind identifies what an [Event] reports: the kind of its payload. Its
// string value is the name used on the wire (JSON, WebSocket, logs). The
// SDK's kinds are the Kind* constants; an agent names its own kinds with
// a prefix of its own, such as "retrai.goal_check".
type Kind string

// Payload is what an event reports. Each payload type is one kind of
// event: EventKind returns the same Kind for every value of the type, and
// no two types share a kind. Payloads are plain data that encode to JSON;
// they should be value types, with EventKind on the value.
//
// The SDK's payloads are [RunStarted], [RunEnded], [NodeStarted],
// [NodeEnded], [ModelCall], [ToolCall], [ToolResult], [Interrupt],
// [Custom] and [Error]. An agent defines its own in its own package and
// writes them from its nodes with graph.StreamWriter; [Bridge] publishes
// them under their kind.
type Payload interface {
	// EventKind returns the kind of the events carrying the payload.
	EventKind() Kind
}

// Event is one report of a run: what happened (Data, a typed [Payload]),
// in which run, superstep and task, and when.
//
// Its JSON encoding is an object with the keys "kind", "run_id", "step",
// "namespace", "node", "task" (the last three left out when empty),
// "time" and "data" (the payload's own encoding). Decoding it gives the
// SDK's payload types back; payloads of other kinds decode as [Raw],
// which [As] turns into their type.
type Event struct {
	// RunID identifies the run the event belongs to.
	RunID string
	// Step is the superstep of the graph the event comes from (of the
	// root graph, or of the subgraph of Namespace). The events of the run
	// itself carry the last superstep of the root graph seen so far: 0
	// before the first.
	Step int
	// Namespace is the subgraph path of the task the event comes from,
	// as in graph.Event ("" for the root graph).
	Namespace string
	// Node and Task name the task the event comes from: its node and its
	// task ID. Both are empty for the events of the run itself.
	Node string
	Task string
	// Time is when the event happened; [Bus.Publish] fills it if zero.
	Time time.Time
	// Data is what happened. It is shared by all subscribers, who must
	// not modify it.
	Data Payload
}

// Kind returns the kind of the event's payload, "" when it has none.
func (e Event) Kind() Kind {
	if e.Data == nil {
		return ""
	}
	return e.Data.EventKind()
}

// wireEvent is the JSON form of an Event.
type wireEvent struct {
	Kind      Kind      `json:"kind"`
	RunID     string    `json:"run_id"`
	Step      int       `json:"step"`
	Namespace string    `json:"namespace,omitempty"`
	Node      string    `json:"node,omitempty"`
	Task      string    `json:"task,omitempty"`
	Time      time.Time `json:"time"`
	Data      any       `json:"data,omitempty"`
}

// MarshalJSON encodes the event with its kind and its payload under
// "data".
func (e Event) MarshalJSON() ([]byte, error) {
	w := wireEvent{Kind: e.Kind(), RunID: e.RunID, Step: e.Step, Namespace: e.Namespace,
		Node: e.Node, Task: e.Task, Time: e.Time}
	if e.Data != nil {
		w.Data = e.Data
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes an event encoded by [Event.MarshalJSON]. The
// payload of an SDK kind is decoded into its type; that of any other
// kind is kept as a [Raw].
func (e *Event) UnmarshalJSON(b []byte) error {
	var w struct {
		wireEvent
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Kind == "" {
		return errMissingKind
	}
	data, err := decodePayload(w.Kind, w.Data)
	if err != nil {
		return fmt.Errorf("data of kind %s: %w", w.Kind, err)
	}
	*e = Event{RunID: w.RunID, Step: w.Step, Namespace: w.Namespace, Node: w.Node, Task: w.Task,
		Time: w.Time, Data: data}
	return nil
}

// Raw is the payload of a decoded event whose kind is not one of the
// SDK's: its kind and the JSON of its data. [As] decodes it into the
// payload type of its kind; encoding it writes Data back as it was.
type Raw struct {
	// Kind is the event's kind.
	Kind Kind
	// Data is the JSON of the payload (nil when the event had none).
	Data json.RawMessage
}

// EventKind implements [Payload]: it returns r.Kind.
func (r Raw) EventKind() Kind { return r.Kind }

// MarshalJSON returns r.Data (null when it is empty).
func (r Raw) MarshalJSON() ([]byte, error) {
	if len(r.Data) == 0 {
		return []byte("null"), nil
	}
	return r.Data, nil
}

// As returns ev's payload as a P, and whether it is one: when ev.Data is
// a P, or a [Raw] of P's kind whose data decodes into a P (as when the
// event was read back from JSON by a program that does not know P).
//
//	if gc, ok := events.As[retrai.GoalCheck](ev); ok {
//		fmt.Println(gc.Reason)
//	}
func As[P Payload](ev Event) (P, bool) {
	if p, ok := ev.Data.(P); ok {
		return p, true
	}
	var p P
	raw, ok := ev.Data.(Raw)
	if !ok || raw.Kind != kindOf[P]() {
		return p, false
	}
	if len(raw.Data) == 0 {
		return p, true
	}
	if err := json.Unmarshal(raw.Data, &p); err != nil {
		var zero P
		return zero, false
	}
	return p, true
}

// kindOf returns the kind of the payload type P, allocating a value for
// pointer types so that EventKind never runs on a nil pointer.
func kindOf[P Payload]() Kind {
	switch t := reflect.TypeFor[P](); t.Kind() {
	case reflect.Interface:
		return "" // no kind of its own: only the type assertion matches
	case reflect.Pointer:
		return reflect.New(t.Elem()).Interface().(P).EventKind()
	}
	var p P
	return p.EventKind()
}

// errMissingKind reports an encoded event without a kind.
var errMissingKind = errors.New("missing kind")
