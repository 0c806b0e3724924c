package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// graphAdapter is what the server needs of a registered graph, whatever
// its state type: runs, thread state and schemas, all in JSON.
type graphAdapter interface {
	// run runs the graph for p, calling emit for every API event of the
	// modes p asks for. It returns the pending interrupts when the run
	// paused, or the run's error.
	run(ctx context.Context, p runParams, emit func(name string, data any)) error
	// validate checks a run's input and command before the run is made.
	validate(input json.RawMessage, cmd *commandBody) error
	state(ctx context.Context, thread, checkpointID string) (*threadState, error)
	history(ctx context.Context, thread string, limit int, before string, filter map[string]any) ([]*threadState, error)
	update(ctx context.Context, thread string, values json.RawMessage, asNode, checkpointID string) (string, error)
	schemas() map[string]any
	drawing() drawing
}

// runParams is what a run was asked to do, decoded from RunCreate.
type runParams struct {
	abandoned                   *sync.WaitGroup // see executeClaim: nodes a cancelled run left running
	thread, runID, checkpointID string
	input                       json.RawMessage // nil or null: continue from the checkpoint
	command                     *commandBody
	modes                       map[string]bool
	subgraphs                   bool     // stream subgraph events too
	before, after               []string // nil: not given, so the compiled breakpoints hold
	metadata                    map[string]any
	recursionLimit              int
	// leaseTTL, when positive, is the graph's thread lease for the run
	// (graph.WithLeaseTTL): a claimed run's follows its run lease.
	leaseTTL time.Duration
}

// commandBody is the API's Command: {resume, update, goto}.
type commandBody struct {
	Resume json.RawMessage `json:"resume"`
	Update json.RawMessage `json:"update"`
	Goto   json.RawMessage `json:"goto"`
}

// fieldKind is how a state field takes a write from JSON and shows one.
type fieldKind int

const (
	kindValue fieldKind = iota
	kindAppend
	kindScalarReducer // Sum, Reduced: one update is one value
	kindMap
	kindMessages
)

type fieldCodec struct {
	index int
	key   string
	kind  fieldKind
	inner reflect.Type // the type of the field's value
}

type adapter[S any] struct {
	name string
	g    *graph.Graph[S]
	*stateFields
	schema  map[string]any
	picture drawing
}

// stateFields is how the fields of a state struct read and show JSON.
type stateFields struct {
	fields []fieldCodec
	byKey  map[string]int // by json key
	byGo   map[string]int // by Go field name, as Writes name them
}

const statePkg = "github.com/agentgraph/agentgraph/state"

// fieldsCache holds the stateFields of subgraph states, by type.
var fieldsCache sync.Map // reflect.Type → *stateFields

func fieldsOf(t reflect.Type) *stateFields {
	if sf, ok := fieldsCache.Load(t); ok {
		return sf.(*stateFields)
	}
	sf := &stateFields{byKey: map[string]int{}, byGo: map[string]int{}}
	if t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			key := f.Name
			if tag, ok := f.Tag.Lookup("json"); ok {
				n, _, _ := strings.Cut(tag, ",")
				if n == "-" {
					continue
				}
				if n != "" {
					key = n
				}
			}
			fc := fieldCodec{index: i, key: key, kind: kindValue, inner: f.Type}
			if f.Type.PkgPath() == statePkg {
				base, _, _ := strings.Cut(f.Type.Name(), "[")
				switch base {
				case "Append":
					fc.kind = kindAppend
				case "Sum", "Reduced":
					fc.kind = kindScalarReducer
				case "Map":
					fc.kind = kindMap
				case "Messages":
					fc.kind = kindMessages
				}
				if v, ok := f.Type.FieldByName("v"); ok {
					fc.inner = v.Type
				} else if get, ok := f.Type.MethodByName("Get"); ok && base == "Append" {
					fc.inner = get.Type.Out(0) // its list is two words, not a field "v"
				}
			}
			sf.byKey[key] = len(sf.fields)
			sf.byGo[f.Name] = len(sf.fields)
			sf.fields = append(sf.fields, fc)
		}
	}
	actual, _ := fieldsCache.LoadOrStore(t, sf)
	return actual.(*stateFields)
}

func newAdapter[S any](name string, g *graph.Graph[S]) (*adapter[S], error) {
	t := reflect.TypeFor[S]()
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("server: Graph %q: state %s is not a struct", name, t)
	}
	a := &adapter[S]{name: name, g: g, stateFields: fieldsOf(t)}
	a.schema = stateSchema(name, t, a.fields)
	a.picture = drawingOf(g)
	return a, nil
}

func (a *adapter[S]) schemas() map[string]any { return a.schema }
func (a *adapter[S]) drawing() drawing        { return a.picture }

// decodeWrites turns a JSON object of state fields into an S carrying
// those fields as writes, merged through their reducers when applied:
// a Value is set, an Append gets the items, a Sum or Reduced the update,
// a Map the entries, Messages the messages.
func (a *adapter[S]) decodeWrites(raw json.RawMessage) (S, error) {
	var s S
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return s, errorf(http.StatusBadRequest, "state input must be a JSON object of the fields of graph %q", a.name)
	}
	rv := reflect.ValueOf(&s).Elem()
	seen := make(map[int]string, len(obj))
	for key, val := range obj {
		i, err := a.lookup(key)
		if err != nil {
			return s, errorf(http.StatusBadRequest, "graph %q: %v (fields: %s)", a.name, err, strings.Join(a.keys(), ", "))
		}
		if other, dup := seen[i]; dup {
			return s, errorf(http.StatusBadRequest, "graph %q: keys %q and %q both name the state field %q", a.name, min(key, other), max(key, other), a.fields[i].key)
		}
		seen[i] = key
		fc := a.fields[i]
		if fc.kind == kindMessages {
			if f, ok := rv.Field(fc.index).Addr().Interface().(*state.Messages); ok {
				if err := writeMessages(f, val); err != nil {
					return s, errorf(http.StatusBadRequest, "state field %q: %v", key, err)
				}
				continue
			}
		}
		ch, ok := rv.Field(fc.index).Addr().Interface().(interface{ Channel() state.Channel })
		if !ok {
			if err := json.Unmarshal(val, rv.Field(fc.index).Addr().Interface()); err != nil {
				return s, errorf(http.StatusBadRequest, "state field %q: %v", key, err)
			}
			continue
		}
		if err := writeField(ch.Channel(), fc.kind, val); err != nil {
			return s, errorf(http.StatusBadRequest, "state field %q: %v", key, err)
		}
	}
	return s, nil
}

// lookup finds the field a JSON key names, as encoding/json does: the
// field of that json name, else the one whose name matches it ignoring
// case; a key that matches several fields so is refused.
func (a *stateFields) lookup(key string) (int, error) {
	if i, ok := a.byKey[key]; ok {
		return i, nil
	}
	found := -1
	for i, f := range a.fields {
		if !strings.EqualFold(f.key, key) {
			continue
		}
		if found >= 0 {
			return 0, fmt.Errorf("state field %q is ambiguous: %q and %q differ only in case, so the key must match one exactly", key, a.fields[found].key, f.key)
		}
		found = i
	}
	if found < 0 {
		return 0, fmt.Errorf("no state field %q", key)
	}
	return found, nil
}

func (a *stateFields) keys() []string {
	out := make([]string, len(a.fields))
	for i, f := range a.fields {
		out[i] = f.key
	}
	return out
}

func writeField(c state.Channel, kind fieldKind, val json.RawMessage) error {
	switch kind {
	case kindAppend:
		if !isJSONArray(val) {
			return errors.New("must be a JSON array")
		}
		return c.UnmarshalWrite(jsonObject("updates", val))
	case kindScalarReducer:
		return c.UnmarshalWrite(jsonObject("updates", json.RawMessage("["+string(val)+"]")))
	case kindMap:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(val, &m); err != nil {
			return errors.New("must be a JSON object")
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		ops := make([]map[string]any, 0, len(m))
		for _, k := range keys {
			ops = append(ops, map[string]any{"k": k, "v": m[k]})
		}
		b, err := json.Marshal(map[string]any{"updates": ops})
		if err != nil {
			return err
		}
		return c.UnmarshalWrite(b)
	default: // Value
		return c.UnmarshalWrite(val)
	}
}

func isJSONArray(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '['
}

func jsonObject(key string, val json.RawMessage) []byte {
	b, _ := json.Marshal(map[string]json.RawMessage{key: val})
	return b
}

// showWrites turns a task's writes, as checkpoints record them, into the
// update the API shows: each field's written value (the items appended,
// the update added, the entries merged).
func (a *stateFields) showWrites(w graph.Writes) map[string]any {
	out := make(map[string]any, len(w))
	for field, raw := range w {
		i, ok := a.byGo[field]
		if !ok {
			out[field] = raw
			continue
		}
		fc := a.fields[i]
		w := showWrite(fc.kind, raw)
		if shape := shapeOf(fc); shape != noMessages {
			w = showRawMessages(shape, mustJSON(w))
		}
		out[fc.key] = w
	}
	return out
}

func showWrite(kind fieldKind, raw json.RawMessage) any {
	if kind == kindValue {
		return raw
	}
	var ops struct {
		Overwrite json.RawMessage   `json:"overwrite"`
		Updates   []json.RawMessage `json:"updates"`
	}
	if err := json.Unmarshal(raw, &ops); err != nil {
		return raw
	}
	switch kind {
	case kindAppend:
		var items []json.RawMessage
		if len(ops.Overwrite) > 0 {
			_ = json.Unmarshal(ops.Overwrite, &items)
		}
		return append(items, ops.Updates...)
	case kindMessages:
		var items []json.RawMessage
		if len(ops.Overwrite) > 0 {
			_ = json.Unmarshal(ops.Overwrite, &items)
		}
		for _, u := range ops.Updates {
			var op struct {
				M         json.RawMessage `json:"m"`
				Remove    string          `json:"remove"`
				RemoveAll bool            `json:"remove_all"`
			}
			if json.Unmarshal(u, &op) != nil {
				continue
			}
			switch {
			case len(op.M) > 0:
				items = append(items, op.M)
			case op.Remove != "" || op.RemoveAll:
				id := op.Remove
				if op.RemoveAll {
					id = removeAll
				}
				items = append(items, mustJSON(removeMessage{Content: "", Type: "remove", ID: id}))
			}
		}
		return items
	case kindMap:
		m := map[string]any{}
		if len(ops.Overwrite) > 0 {
			_ = json.Unmarshal(ops.Overwrite, &m)
		}
		for _, u := range ops.Updates {
			var op struct {
				K any             `json:"k"`
				V json.RawMessage `json:"v"`
				D bool            `json:"d"`
			}
			if json.Unmarshal(u, &op) != nil {
				continue
			}
			k := fmt.Sprint(op.K)
			if op.D {
				m[k] = nil
			} else {
				m[k] = op.V
			}
		}
		return m
	default: // Sum, Reduced
		if len(ops.Updates) == 0 && len(ops.Overwrite) > 0 {
			return ops.Overwrite
		}
		if len(ops.Updates) == 1 && len(ops.Overwrite) == 0 {
			return ops.Updates[0]
		}
		return ops.Updates
	}
}

// apiInterrupt is an interrupt as the API shows it.
type apiInterrupt struct {
	ID    string `json:"id"`
	Value any    `json:"value"`
}

func showInterrupts(in []graph.Interruption) []apiInterrupt {
	out := make([]apiInterrupt, len(in))
	for i, x := range in {
		out[i] = apiInterrupt{ID: x.ID, Value: showInterruptValue(x.Value)}
	}
	return out
}

func (a *adapter[S]) runOptions(p runParams) []graph.RunOption {
	opts := []graph.RunOption{graph.WithThread(p.thread), graph.WithRunID(p.runID)}
	if p.abandoned != nil {
		opts = append(opts, graph.WithAbandonedNodes(p.abandoned))
	}
	if p.checkpointID != "" {
		opts = append(opts, graph.WithCheckpointID(p.checkpointID))
	}
	if p.before != nil {
		opts = append(opts, graph.WithInterruptBefore(p.before...))
	}
	if p.after != nil {
		opts = append(opts, graph.WithInterruptAfter(p.after...))
	}
	if p.subgraphs {
		opts = append(opts, graph.WithSubgraphs())
	}
	if p.recursionLimit > 0 {
		opts = append(opts, graph.WithRecursionLimit(p.recursionLimit))
	}
	if p.leaseTTL > 0 {
		opts = append(opts, graph.WithLeaseTTL(p.leaseTTL))
	}
	if len(p.metadata) > 0 {
		opts = append(opts, graph.WithMetadata(p.metadata))
	}
	modes := graph.ModeValues // always: wait and join answer the last values
	if p.modes["updates"] {
		modes |= graph.ModeUpdates
	}
	if p.modes["custom"] {
		modes |= graph.ModeCustom
	}
	if p.modes["tasks"] || p.modes["debug"] {
		modes |= graph.ModeTasks
	}
	if p.modes["checkpoints"] || p.modes["debug"] {
		modes |= graph.ModeCheckpoints
	}
	if p.modes["messages-tuple"] || p.modes["messages"] {
		modes |= graph.ModeMessages
	}
	return append(opts, graph.WithStreamModes(modes))
}

func (a *adapter[S]) validate(input json.RawMessage, cmd *commandBody) error {
	if cmd != nil {
		_, err := a.command(cmd)
		return err
	}
	if len(input) == 0 || string(bytes.TrimSpace(input)) == "null" {
		return nil
	}
	_, err := a.decodeWrites(input)
	return err
}

func (a *adapter[S]) run(ctx context.Context, p runParams, emit func(string, any)) error {
	opts := a.runOptions(p)
	var events func(yield func(graph.Event, error) bool)
	switch {
	case p.command != nil:
		cmd, err := a.command(p.command)
		if err != nil {
			return err
		}
		events = a.g.StreamResume(ctx, cmd, opts...)
	case len(p.input) == 0 || string(bytes.TrimSpace(p.input)) == "null":
		events = a.g.StreamResume(ctx, graph.Command[S]{}, opts...)
	default:
		in, err := a.decodeWrites(p.input)
		if err != nil {
			return err
		}
		events = a.g.Stream(ctx, in, opts...)
	}
	var ms *messageStream
	if p.modes["messages"] {
		ms = newMessageStream()
	}
	for ev, err := range events {
		if err != nil {
			return err
		}
		if ms != nil {
			a.streamMessages(ms, ev, emit)
		}
		if ev.Namespace != "" && !p.subgraphs {
			continue
		}
		a.emitEvent(ev, p, emit)
	}
	return nil
}

func (a *adapter[S]) emitEvent(ev graph.Event, p runParams, emitRoot func(string, any)) {
	modes := p.modes
	// A subgraph's events are named "<mode>|<namespace>" and show its own
	// state's fields.
	emit, fields := emitRoot, a.stateFields
	if ev.Namespace != "" {
		if ev.Mode == graph.ModeValues && !modes["values"] {
			return // values are always run for wait and join, not streamed
		}
		emit = func(name string, data any) { emitRoot(name+"|"+ev.Namespace, data) }
		if ev.Payload != nil {
			fields = fieldsOf(reflect.TypeOf(ev.Payload))
		}
	}
	debug := func(kind string, payload any) {
		if modes["debug"] {
			emit("debug", map[string]any{"type": kind, "step": ev.Step, "timestamp": time.Now().UTC(), "payload": payload})
		}
	}
	switch ev.Mode {
	case graph.ModeTasks:
		switch x := ev.Payload.(type) {
		case graph.TaskStart:
			t := map[string]any{"id": ev.TaskID, "name": x.Name, "input": showValue(x.Input), "triggers": []string{}, "interrupts": []apiInterrupt{}}
			if modes["tasks"] {
				emit("tasks", t)
			}
			debug("task", t)
		case graph.TaskResult:
			t := map[string]any{"id": ev.TaskID, "name": x.Name, "result": nil, "error": nil, "interrupts": showInterrupts(x.Interrupts)}
			if x.Writes != nil {
				if ev.Namespace != "" && x.Output != nil {
					fields = fieldsOf(reflect.TypeOf(x.Output))
				}
				t["result"] = fields.showWrites(x.Writes)
			}
			if x.Err != nil {
				t["error"] = x.Err.Error()
			}
			if modes["tasks"] {
				emit("tasks", t)
			}
			debug("task_result", t)
		}
	case graph.ModeCheckpoints:
		ci, ok := ev.Payload.(graph.CheckpointInfo)
		if !ok {
			return
		}
		config := func(id string) any {
			if id == "" {
				return nil
			}
			return map[string]any{"configurable": map[string]any{"thread_id": p.thread, "checkpoint_ns": "", "checkpoint_id": id}}
		}
		next := ci.Next
		if next == nil {
			next = []string{}
		}
		c := map[string]any{
			"config": config(ci.ID), "parent_config": config(ci.ParentID),
			"metadata": map[string]any{"source": ci.Source, "step": ci.Step, "run_id": p.runID},
			"values":   showValue(ci.Values), "next": next, "tasks": []any{},
			"checkpoint":        checkpointRef{ThreadID: p.thread, CheckpointID: ci.ID},
			"parent_checkpoint": nil,
		}
		if ci.ParentID != "" {
			c["parent_checkpoint"] = checkpointRef{ThreadID: p.thread, CheckpointID: ci.ParentID}
		}
		if modes["checkpoints"] {
			emit("checkpoints", c)
		}
		debug("checkpoint", c)
	case graph.ModeValues:
		if len(ev.Interrupts) > 0 {
			emit("values", map[string]any{"__interrupt__": showInterrupts(ev.Interrupts)})
			return
		}
		emit("values", showValue(ev.Payload))
	case graph.ModeUpdates:
		if modes["updates"] {
			emit("updates", map[string]any{ev.Node: fields.showWrites(ev.Writes)})
		}
	case graph.ModeInterrupts:
		if modes["updates"] {
			emit("updates", map[string]any{"__interrupt__": showInterrupts(ev.Interrupts)})
		}
	case graph.ModeCustom:
		if modes["custom"] {
			emit("custom", ev.Payload)
		}
	case graph.ModeMessages:
		c, ok := ev.Payload.(graph.MessageChunk)
		if ok && modes["messages-tuple"] {
			emit("messages", []any{
				map[string]any{"type": "AIMessageChunk", "id": c.MessageID, "content": c.Text,
					"tool_calls": []any{}, "tool_call_chunks": []any{}, "additional_kwargs": map[string]any{}, "response_metadata": map[string]any{}},
				messageMetadata(ev),
			})
		}
	}
}

// isResumeMap reports whether a resume object is a map from interrupt ids
// to answers: not empty, every key an interrupt id (32 lowercase hex
// digits, the shape of both graph's and LangGraph's ids).
func isResumeMap(m map[string]any) bool {
	if len(m) == 0 {
		return false
	}
	for k := range m {
		if len(k) != 32 {
			return false
		}
		for _, r := range k {
			if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
				return false
			}
		}
	}
	return true
}

// command decodes the API's Command into the graph's.
func (a *adapter[S]) command(c *commandBody) (graph.Command[S], error) {
	var cmd graph.Command[S]
	if len(c.Resume) > 0 {
		var v any
		if err := json.Unmarshal(c.Resume, &v); err != nil {
			return cmd, errorf(http.StatusBadRequest, "command.resume: %v", err)
		}
		if m, ok := v.(map[string]any); ok && isResumeMap(m) {
			// {interrupt id: answer, …} answers several interrupts, as
			// LangGraph reads such a map.
			cmd.ResumeMap = m
		} else {
			cmd.Resume = v
		}
	}
	if u := bytes.TrimSpace(c.Update); len(u) > 0 && string(u) != "null" {
		if u[0] == '[' { // [[key, value], …]
			var pairs [][2]json.RawMessage
			if err := json.Unmarshal(u, &pairs); err != nil {
				return cmd, errorf(http.StatusBadRequest, "command.update must be an object or a list of [key, value] pairs")
			}
			obj := map[string]json.RawMessage{}
			for _, p := range pairs {
				var k string
				if err := json.Unmarshal(p[0], &k); err != nil {
					return cmd, errorf(http.StatusBadRequest, "command.update: keys must be strings")
				}
				obj[k] = p[1]
			}
			u, _ = json.Marshal(obj)
		}
		s, err := a.decodeWrites(u)
		if err != nil {
			return cmd, err
		}
		cmd.Update = s
	}
	if g := bytes.TrimSpace(c.Goto); len(g) > 0 && string(g) != "null" {
		var one string
		var many []string
		switch {
		case json.Unmarshal(g, &one) == nil:
			cmd.Goto = []string{one}
		case json.Unmarshal(g, &many) == nil:
			cmd.Goto = many
		default:
			return cmd, errorf(http.StatusBadRequest, "command.goto must be a node name or a list of node names (Send objects are not supported yet)")
		}
	}
	return cmd, nil
}

// threadState is the API's ThreadState.
type threadState struct {
	Values           any            `json:"values"`
	Next             []string       `json:"next"`
	Tasks            []apiTask      `json:"tasks"`
	Metadata         any            `json:"metadata"`
	CreatedAt        *time.Time     `json:"created_at"`
	Checkpoint       *checkpointRef `json:"checkpoint"`
	ParentCheckpoint *checkpointRef `json:"parent_checkpoint"`
	Interrupts       []apiInterrupt `json:"interrupts"`
}

type apiTask struct {
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	Error      *string        `json:"error"`
	Interrupts []apiInterrupt `json:"interrupts"`
	Path       []string       `json:"path"`
	Checkpoint any            `json:"checkpoint"`
	State      any            `json:"state"`
	Result     any            `json:"result"`
}

type checkpointRef struct {
	ThreadID      string `json:"thread_id"`
	CheckpointNS  string `json:"checkpoint_ns"`
	CheckpointID  string `json:"checkpoint_id"`
	CheckpointMap any    `json:"checkpoint_map"`
}

func emptyState() *threadState {
	return &threadState{Values: map[string]any{}, Next: []string{}, Tasks: []apiTask{}, Interrupts: []apiInterrupt{}}
}

func (a *adapter[S]) show(thread string, snap *graph.Snapshot[S]) *threadState {
	if snap.CheckpointID == "" {
		return emptyState()
	}
	ts := &threadState{Values: showValue(snap.Values), Next: snap.Next, Tasks: []apiTask{}, Metadata: snap.Metadata,
		Interrupts: showInterrupts(snap.Interrupts)}
	if ts.Next == nil {
		ts.Next = []string{}
	}
	created := snap.CreatedAt
	ts.CreatedAt = &created
	ts.Checkpoint = &checkpointRef{ThreadID: thread, CheckpointID: snap.CheckpointID}
	if snap.ParentID != "" {
		ts.ParentCheckpoint = &checkpointRef{ThreadID: thread, CheckpointID: snap.ParentID}
	}
	for _, t := range snap.Tasks {
		at := apiTask{ID: t.ID, Name: t.Name, Interrupts: showInterrupts(t.Interrupts), Path: []string{"__pregel_pull", t.Name}}
		if t.Error != "" {
			e := t.Error
			at.Error = &e
		}
		if t.Writes != nil {
			at.Result = a.showWrites(t.Writes)
		}
		ts.Tasks = append(ts.Tasks, at)
	}
	return ts
}

func (a *adapter[S]) state(ctx context.Context, thread, checkpointID string) (*threadState, error) {
	opts := []graph.RunOption{graph.WithThread(thread)}
	if checkpointID != "" {
		opts = append(opts, graph.WithCheckpointID(checkpointID))
	}
	snap, err := a.g.GetState(ctx, opts...)
	if err != nil {
		return nil, stateError(err, http.StatusInternalServerError)
	}
	return a.show(thread, snap), nil
}

func (a *adapter[S]) history(ctx context.Context, thread string, limit int, before string, filter map[string]any) ([]*threadState, error) {
	opts := []graph.HistoryOption{graph.WithLimit(limit)}
	if before != "" {
		opts = append(opts, graph.WithBefore(before))
	}
	if len(filter) > 0 {
		opts = append(opts, graph.WithFilter(filter))
	}
	out := []*threadState{}
	for snap, err := range a.g.History(ctx, thread, opts...) {
		if err != nil {
			return nil, stateError(err, http.StatusInternalServerError)
		}
		out = append(out, a.show(thread, snap))
	}
	return out, nil
}

func (a *adapter[S]) update(ctx context.Context, thread string, values json.RawMessage, asNode, checkpointID string) (string, error) {
	var s S
	if v := bytes.TrimSpace(values); len(v) > 0 && string(v) != "null" {
		var err error
		if s, err = a.decodeWrites(v); err != nil {
			return "", err
		}
	}
	opts := []graph.RunOption{graph.WithThread(thread)}
	if checkpointID != "" {
		opts = append(opts, graph.WithCheckpointID(checkpointID))
	}
	id, err := a.g.UpdateState(ctx, s, asNode, opts...)
	if err != nil {
		return "", stateError(err, http.StatusBadRequest)
	}
	return id, nil
}

// stateError maps the graph's errors on state calls to API errors: a
// missing checkpoint is 404, a graph without checkpointer 409, a
// transient fault of the saver 500 (which fail answers 503), anything
// else status (500 for reads, whose failures are the saver's; 400 for an
// update the graph refused). The error stays wrapped.
func stateError(err error, status int) error {
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return errorf(http.StatusNotFound, "%v", err)
	case errors.Is(err, graph.ErrNoCheckpointer):
		return errorf(http.StatusConflict, "the graph has no checkpointer: %v", err)
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return err
	}
	if IsTransient(err) {
		// The saver's fault, not the request's: answered 503 (see fail).
		status = http.StatusInternalServerError
	}
	return &apiError{status: status, msg: err.Error(), err: err}
}

// messageMetadata is the metadata of a streamed message's tokens.
func messageMetadata(ev graph.Event) map[string]any {
	return map[string]any{"langgraph_node": ev.Node, "langgraph_step": ev.Step, "langgraph_checkpoint_ns": "", "checkpoint_ns": ""}
}

// streamMessages feeds the "messages" stream mode: the tokens of every
// namespace (as LangGraph's servers stream a subgraph's model calls), the
// messages of the root state.
func (a *adapter[S]) streamMessages(ms *messageStream, ev graph.Event, emit func(string, any)) {
	switch ev.Mode {
	case graph.ModeMessages:
		if c, ok := ev.Payload.(graph.MessageChunk); ok {
			ms.chunk(c, messageMetadata(ev), emit)
		}
	case graph.ModeValues:
		if ev.Namespace == "" && len(ev.Interrupts) == 0 {
			ms.values(a.stateFields, ev.Payload, emit)
		}
	}
}
