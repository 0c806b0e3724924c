package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/agentgraph/agentgraph/graph"
)

// RemoteGraph is a graph deployed behind a LangGraph Server API, used as a
// local compiled graph is: invoked, streamed, resumed, its state read and
// updated — by thread, as LangGraph's RemoteGraph does. [Node] makes it a
// node of a local graph. A RemoteGraph is safe for concurrent use.
type RemoteGraph struct {
	c         *Client
	assistant string
	config    *RunConfig
	thread    func(local string) string
}

// RemoteOption configures a [RemoteGraph].
type RemoteOption func(*RemoteGraph)

// WithRunConfig sends cfg with every run of the remote graph.
func WithRunConfig(cfg RunConfig) RemoteOption {
	return func(r *RemoteGraph) { r.config = &cfg }
}

// WithThreadMapping makes a [Node] run the remote graph on thread
// remote(local) for a local run on thread local, instead of the same id:
// for local thread ids that are not UUIDs (which LangGraph servers want),
// or for two remote-graph nodes of one local graph that must not share a
// remote thread. remote must always give the same id for the same local
// one.
func WithThreadMapping(remote func(local string) string) RemoteOption {
	return func(r *RemoteGraph) { r.thread = remote }
}

// NewRemoteGraph returns the graph that assistantID (an assistant id, or
// a graph's name) runs on c's server.
func NewRemoteGraph(c *Client, assistantID string, opts ...RemoteOption) *RemoteGraph {
	r := &RemoteGraph{c: c, assistant: assistantID}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Interrupted is the error of a remote run that paused at interrupts: the
// thread waits for [RemoteGraph.Resume].
type Interrupted struct {
	// Interrupts are the questions pending.
	Interrupts []Interrupt
}

func (e *Interrupted) Error() string {
	var b strings.Builder
	b.WriteString("client: the remote run is interrupted")
	for i, in := range e.Interrupts {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		b.Write(in.Value)
	}
	return b.String()
}

// request is a run of r.
func (r *RemoteGraph) request(threadID string) RunRequest {
	req := RunRequest{Config: r.config}
	if threadID != "" {
		req.IfNotExists = "create"
	}
	return req
}

// finish turns a run's last values into Invoke's answer.
func finish(values json.RawMessage, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	if in := Interrupts(values); in != nil {
		return values, &Interrupted{Interrupts: in}
	}
	return values, nil
}

// Invoke runs the remote graph on input, on thread threadID (created when
// missing; "" runs it on a thread of its own), and returns its final
// values; a nil input continues the thread from its checkpoint (after a
// breakpoint, say). A run that paused returns its values and an
// [*Interrupted].
func (r *RemoteGraph) Invoke(ctx context.Context, threadID string, input any) (json.RawMessage, error) {
	req := r.request(threadID)
	req.Input = input
	return finish(r.c.Runs.Wait(ctx, threadID, r.assistant, req))
}

// Resume answers the interrupt thread threadID waits at with answer (a
// map from interrupt id to answer for several) and runs on, as Invoke.
func (r *RemoteGraph) Resume(ctx context.Context, threadID string, answer any) (json.RawMessage, error) {
	if threadID == "" {
		return nil, errors.New("client: resuming a remote graph needs its thread")
	}
	req := r.request(threadID)
	req.IfNotExists = ""
	req.Command = &Command{Resume: answer}
	if answer == nil {
		req.Command.Resume = json.RawMessage("null")
	}
	return finish(r.c.Runs.Wait(ctx, threadID, r.assistant, req))
}

// Stream runs the remote graph on input as Invoke does and streams its
// events in modes (the server's default, values, when none), with the
// events of its subgraphs.
func (r *RemoteGraph) Stream(ctx context.Context, threadID string, input any, modes ...StreamMode) iter.Seq2[Part, error] {
	req := r.request(threadID)
	req.Input = input
	req.StreamMode = modes
	req.StreamSubgraphs = true
	return r.c.Runs.Stream(ctx, threadID, r.assistant, req)
}

// GetState returns thread threadID's current state.
func (r *RemoteGraph) GetState(ctx context.Context, threadID string) (*ThreadState, error) {
	return r.c.Threads.State(ctx, threadID, "")
}

// History returns thread threadID's states, newest first.
func (r *RemoteGraph) History(ctx context.Context, threadID string, q HistoryRequest) ([]ThreadState, error) {
	return r.c.Threads.History(ctx, threadID, q)
}

// UpdateState writes values to thread threadID's state as node asNode
// would ("" lets the server choose), and returns the new checkpoint.
func (r *RemoteGraph) UpdateState(ctx context.Context, threadID string, values any, asNode string) (*Checkpoint, error) {
	return r.c.Threads.UpdateState(ctx, threadID, StateUpdate{Values: values, AsNode: asNode})
}

// The remote thread's metadata through which a [Node] knows, when its
// local run resumes, which of its task's answers the remote run already
// had.
const (
	metaTask     = "agentgraph_remote_task"
	metaAnswered = "agentgraph_remote_answered"
)

// Node makes the remote graph r a node of a local graph of state S.
//
// The remote run is on the thread of the local run ([graph.ThreadID]):
// the same id on the remote server (LangGraph servers want a UUID there;
// see [WithThreadMapping]), created when missing; a local run without a
// thread runs it on a thread of its own, which cannot pause. in builds the remote input from the
// local state; out turns the remote's final values into the node's writes
// on s.
//
// When the remote run pauses at an interrupt, the local run pauses too: the
// node calls [graph.Interrupt] with the remote interrupt's value (the list
// of [Interrupt]s when there are several, then resumed with a map from
// their ids to answers). Resuming the local run resumes the remote one with
// the answer, and so on for each interrupt the remote run raises; the node
// returns once the remote run ended. To know, when it runs again, which
// answers the remote run had, the node keeps its task id and their count
// in the remote thread's metadata (agentgraph_remote_task,
// agentgraph_remote_answered). An answer is counted before it is sent: a
// crash between the two asks the question again rather than sending an
// answer twice.
func Node[S any](r *RemoteGraph, in func(S) any, out func(s S, values json.RawMessage) (S, error)) graph.NodeFunc[S] {
	return func(ctx context.Context, s S) (S, error) {
		if in == nil || out == nil {
			return s, errors.New("client: Node needs its in and out functions")
		}
		thread := graph.ThreadID(ctx)
		if thread != "" && r.thread != nil {
			thread = r.thread(thread)
		}
		if thread == "" {
			values, err := r.Invoke(ctx, "", in(s))
			var intr *Interrupted
			if errors.As(err, &intr) {
				return s, fmt.Errorf("client: the remote graph interrupted in a local run without a thread, which could not resume it: %w", err)
			}
			if err != nil {
				return s, err
			}
			return out(s, values)
		}
		task := graph.TaskID(ctx)
		answered, pending, err := r.resumable(ctx, thread, task)
		if err != nil {
			return s, err
		}
		var values json.RawMessage
		if answered < 0 {
			// A new remote run, for this task.
			if err := r.markThread(ctx, thread, task, 0, true); err != nil {
				return s, err
			}
			values, err = r.Invoke(ctx, thread, in(s))
			var intr *Interrupted
			if errors.As(err, &intr) {
				pending, err = intr.Interrupts, nil
			}
			if err != nil {
				return s, err
			}
			answered = 0
		}
		// The answers the remote run had: Interrupt returns them again,
		// by position.
		for range answered {
			if _, err := graph.Interrupt(ctx, interruptPayload(pending)); err != nil {
				return s, err
			}
		}
		for len(pending) > 0 {
			answer, err := graph.Interrupt(ctx, interruptPayload(pending))
			if err != nil {
				return s, err // the local run pauses
			}
			answered++
			if err := r.markThread(ctx, thread, task, answered, false); err != nil {
				return s, err
			}
			values, err = r.Resume(ctx, thread, answer)
			var intr *Interrupted
			if errors.As(err, &intr) {
				pending, err = intr.Interrupts, nil
			} else {
				pending = nil
			}
			if err != nil {
				return s, err
			}
		}
		return out(s, values)
	}
}

// resumable returns how many answers the remote thread's interrupted run
// of task had and its pending interrupts, or -1 when the thread is not
// paused in a run of task.
func (r *RemoteGraph) resumable(ctx context.Context, thread, task string) (int, []Interrupt, error) {
	th, err := r.c.Threads.Get(ctx, thread)
	if IsNotFound(err) {
		return -1, nil, nil
	}
	if err != nil {
		return -1, nil, err
	}
	n, ok := th.Metadata[metaAnswered].(float64)
	if th.Status != ThreadStatusInterrupted || th.Metadata[metaTask] != task || !ok || n < 0 {
		return -1, nil, nil
	}
	st, err := r.c.Threads.State(ctx, thread, "")
	if err != nil {
		return -1, nil, err
	}
	pending := st.Interrupts()
	if len(pending) == 0 {
		return -1, nil, nil // a breakpoint, not a question: run anew
	}
	return int(n), pending, nil
}

// markThread records in the remote thread's metadata that task's run had
// answered answers, creating the thread first when create.
func (r *RemoteGraph) markThread(ctx context.Context, thread, task string, answered int, create bool) error {
	md := map[string]any{metaTask: task, metaAnswered: answered}
	if create {
		if _, err := r.c.Threads.Create(ctx, ThreadCreate{ThreadID: thread, Metadata: md, IfExists: "do_nothing"}); err != nil {
			return err
		}
	}
	_, err := r.c.Threads.Update(ctx, thread, md)
	return err
}

// interruptPayload is what the local interrupt carries for the remote's
// pending ones.
func interruptPayload(pending []Interrupt) any {
	if len(pending) == 1 {
		return pending[0].Value
	}
	return pending
}
