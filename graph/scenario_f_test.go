package graph_test

// Ports of LangGraph behavioural scenarios, section F of
// the project's LangGraph behavioural specification (not shipped) §7 (messages, streaming
// details, retries, cancellation), and the goroutine-leak check.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// abcfMsg is the comparable view of a message.
type abcfMsg struct {
	ID, Role, Text string
}

func abcfMsgs(ms []state.Message) []abcfMsg {
	out := make([]abcfMsg, len(ms))
	for i, m := range ms {
		out[i] = abcfMsg{ID: m.ID, Role: string(m.Role), Text: m.Text()}
	}
	return out
}

// ---------------------------------------------------------------------------
// S61 add_messages unit tests (T/test_messages_state.py). Python's
// "non-list inputs" case has no Go equivalent (the API takes messages).

func TestS61AddMessages(t *testing.T) {
	H := func(id, text string) state.Message { return state.Human(text).WithID(id) }
	A := func(id, text string) state.Message { return state.AI(text).WithID(id) }
	Sys := func(id, text string) state.Message { return state.System(text).WithID(id) }
	view := func(ms ...state.Message) []abcfMsg { return abcfMsgs(ms) }

	tests := []struct {
		name    string
		left    []state.Message
		right   func(w *state.Messages)
		want    []abcfMsg
		wantErr string // the unknown message ID
	}{
		{
			name:  "single append",
			left:  []state.Message{H("1", "Hello")},
			right: func(w *state.Messages) { w.Append(A("2", "Hi there!")) },
			want:  view(H("1", "Hello"), A("2", "Hi there!")),
		},
		{
			name:  "multiple append",
			left:  []state.Message{H("1", "Hello")},
			right: func(w *state.Messages) { w.Append(A("2", "Hi there!"), H("3", "How are you?")) },
			want:  view(H("1", "Hello"), A("2", "Hi there!"), H("3", "How are you?")),
		},
		{
			name:  "replace by id keeps the position",
			left:  []state.Message{H("1", "Hello"), A("2", "Hi there!")},
			right: func(w *state.Messages) { w.Append(H("1", "Hello again")) },
			want:  view(H("1", "Hello again"), A("2", "Hi there!")),
		},
		{
			name:  "duplicates in right",
			right: func(w *state.Messages) { w.Append(A("1", "Hi there!"), A("1", "Hi there again!")) },
			want:  view(A("1", "Hi there again!")),
		},
		{
			name: "re-adding after remove cancels the removal",
			left: []state.Message{A("1", "Hello!")},
			right: func(w *state.Messages) {
				w.Remove("1")
				w.Append(A("1", "Hi there!"), A("1", "Hi there again!"))
			},
			want: view(A("1", "Hi there again!")),
		},
		{
			name: "duplicate remove",
			left: []state.Message{H("1", "Hello"), A("2", "Hi there!")},
			right: func(w *state.Messages) {
				w.Remove("2")
				w.Remove("2")
			},
			want: view(H("1", "Hello")),
		},
		{
			name:    "remove missing id",
			left:    []state.Message{H("1", "Hello")},
			right:   func(w *state.Messages) { w.Remove("2") },
			wantErr: "2",
		},
		{
			name: "mixed",
			left: []state.Message{H("1", "Hello"), A("2", "Hi there!")},
			right: func(w *state.Messages) {
				w.Append(H("1", "Updated hello"))
				w.Remove("2")
				w.Append(Sys("3", "You are a helpful assistant."))
			},
			want: view(H("1", "Updated hello"), Sys("3", "You are a helpful assistant.")),
		},
		{
			name:  "empty left and right",
			right: func(w *state.Messages) { w.Append() },
			want:  view(),
		},
		{
			name:  "empty right",
			left:  []state.Message{H("1", "Hello")},
			right: func(w *state.Messages) { w.Append() },
			want:  view(H("1", "Hello")),
		},
		{
			name: "remove all one by one",
			left: []state.Message{H("1", "Hello"), A("2", "Hi there!")},
			right: func(w *state.Messages) {
				w.Remove("1")
				w.Remove("2")
			},
			want: view(),
		},
		{
			name:  "REMOVE_ALL",
			left:  []state.Message{H("1", "Hello"), A("2", "Hi there!")},
			right: func(w *state.Messages) { w.RemoveAll() },
			want:  view(),
		},
		{
			name: "REMOVE_ALL then a message",
			left: []state.Message{H("1", "Hello"), A("2", "Hi there!")},
			right: func(w *state.Messages) {
				w.RemoveAll()
				w.Append(H("3", "Updated hello"))
			},
			want: view(H("3", "Updated hello")),
		},
		{
			name: "message, REMOVE_ALL, message",
			left: []state.Message{H("1", "Hello"), A("2", "Hi there!")},
			right: func(w *state.Messages) {
				w.Append(H("3", "Updated hello"))
				w.RemoveAll()
				w.Append(H("4", "Updated hi there"))
			},
			want: view(H("4", "Updated hi there")),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f state.Messages
			if tc.left != nil {
				l := state.Msgs(tc.left...)
				require.NoError(t, f.Channel().MergeWrites([]state.Channel{l.Channel()}))
			}
			var w state.Messages
			tc.right(&w)
			err := f.Channel().MergeWrites([]state.Channel{w.Channel()})
			if tc.wantErr != "" {
				var ue *state.UnknownMessageError
				require.ErrorAs(t, err, &ue)
				require.Equal(t, tc.wantErr, ue.ID)
				require.Contains(t, err.Error(), "doesn't exist")
				return
			}
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tc.want, abcfMsgs(f.List())))
		})
	}

	t.Run("missing ids get uuid4s", func(t *testing.T) {
		var f state.Messages
		w := state.Msgs(state.Human("Hello"), state.AI("Hi there!"))
		require.NoError(t, f.Channel().MergeWrites([]state.Channel{w.Channel()}))
		got := f.List()
		require.Len(t, got, 2)
		for _, m := range got {
			require.Regexp(t, abcfUUIDv4, m.ID)
		}
		require.NotEqual(t, got[0].ID, got[1].ID)
	})

	t.Run("in a graph", func(t *testing.T) {
		type S struct{ Messages state.Messages }
		g, err := graph.New[S]().
			AddNode("foo", func(context.Context, S) (S, error) {
				return S{Messages: state.Msgs(state.Human("foo"))}, nil
			}).
			AddEdge(graph.Start, "foo").AddEdge("foo", graph.End).
			Compile()
		require.NoError(t, err)
		out, err := g.Invoke(dexCtx(t), S{Messages: state.Msgs(state.Human("meow"))})
		require.NoError(t, err)
		got := out.Messages.List()
		require.Equal(t, []string{"meow", "foo"}, abcfTexts(got))
		for _, m := range got {
			require.Regexp(t, abcfUUIDv4, m.ID)
		}
	})
}

// ---------------------------------------------------------------------------
// S62 test_remove_message_via_state_update / test_remove_message_from_node.
// Python's root message-list state is a struct with one Messages field.

func TestS62RemoveMessage(t *testing.T) {
	type S struct{ Messages state.Messages }
	t.Run("via update_state", func(t *testing.T) {
		g, err := graph.New[S]().
			AddNode("chatbot", func(context.Context, S) (S, error) {
				return S{Messages: state.Msgs(state.AI("Hello! How can I help you"))}, nil
			}).
			AddEdge(graph.Start, "chatbot").AddEdge("chatbot", graph.End).
			Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
		require.NoError(t, err)
		ctx := dexCtx(t)
		out, err := g.Invoke(ctx, S{Messages: state.Msgs(state.Human("Hi"))}, graph.WithThread("1"))
		require.NoError(t, err)
		last, ok := out.Messages.Last()
		require.True(t, ok)
		var rm S
		rm.Messages.Remove(last.ID)
		_, err = g.UpdateState(ctx, rm, "", graph.WithThread("1"))
		require.NoError(t, err)
		snap, err := g.GetState(ctx, graph.WithThread("1"))
		require.NoError(t, err)
		require.Equal(t, []string{"Hi"}, abcfTexts(snap.Values.Messages.List()))
	})
	t.Run("from a node", func(t *testing.T) {
		g, err := graph.New[S]().
			AddNode("chatbot", func(context.Context, S) (S, error) {
				return S{Messages: state.Msgs(state.AI("Hello!"), state.AI("How can I help you?"))}, nil
			}).
			AddNode("delete_messages", func(_ context.Context, s S) (S, error) {
				ms := s.Messages.List()
				var u S
				u.Messages.Remove(ms[len(ms)-2].ID)
				return u, nil
			}).
			AddEdge(graph.Start, "chatbot").AddEdge("chatbot", "delete_messages").AddEdge("delete_messages", graph.End).
			Compile()
		require.NoError(t, err)
		out, err := g.Invoke(dexCtx(t), S{Messages: state.Msgs(state.Human("Hi"))})
		require.NoError(t, err)
		require.Equal(t, []string{"Hi", "How can I help you?"}, abcfTexts(out.Messages.List()))
	})
}

// ---------------------------------------------------------------------------
// S63 test_get_stream_writer.

func TestS63GetStreamWriter(t *testing.T) {
	type S struct{ Foo state.Value[string] }
	g, err := graph.New[S]().
		AddNode("my_node", func(ctx context.Context, s S) (S, error) {
			graph.StreamWriter(ctx)("custom!")
			s.Foo.Set(s.Foo.Get())
			return s, nil
		}).
		AddEdge(graph.Start, "my_node").AddEdge("my_node", graph.End).
		Compile()
	require.NoError(t, err)
	ctx := dexCtx(t)
	in := S{Foo: state.Set("bar")}

	evs, err := dexCollect(g.Stream(ctx, in, graph.WithStreamModes(graph.ModeCustom)))
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, graph.ModeCustom, evs[0].Mode)
	require.Equal(t, "custom!", evs[0].Payload)
	require.Equal(t, "my_node", evs[0].Node)

	evs, err = dexCollect(g.Stream(ctx, in, graph.WithStreamModes(graph.ModeValues)))
	require.NoError(t, err)
	var vals []map[string]any
	for _, ev := range evs {
		vals = append(vals, dexVals(t, ev.Payload))
	}
	require.Equal(t, []map[string]any{{"Foo": "bar"}, {"Foo": "bar"}}, vals)

	evs, err = dexCollect(g.Stream(ctx, in, graph.WithStreamModes(graph.ModeCustom|graph.ModeUpdates)))
	require.NoError(t, err)
	require.Len(t, evs, 2)
	require.Equal(t, graph.ModeCustom, evs[0].Mode)
	require.Equal(t, "custom!", evs[0].Payload)
	require.Equal(t, graph.ModeUpdates, evs[1].Mode)
	require.Equal(t, "my_node", evs[1].Node)
	require.Equal(t, map[string]any{"Foo": "bar"}, abcfWrites(t, evs[1].Writes))

	// Without the custom mode the writer is a no-op.
	out, err := g.Invoke(ctx, in)
	require.NoError(t, err)
	require.Equal(t, "bar", out.Foo.Get())
}

// ---------------------------------------------------------------------------
// S64 test_stream_messages_dedupe_inputs.

// The Go messages mode streams what nodes write through MessageWriter (an
// LLM adapter's tokens); it never re-emits messages found in node outputs
// or inputs, so Python's dedupe holds by construction. What is ported: the
// chunk streamed by the subgraph's call_model is yielded once, with its
// node and namespace, when subgraphs are streamed, and dropped otherwise;
// and, as in S28, the parent command discards the subgraph's own writes.
func TestS64StreamMessagesDedupeInputs(t *testing.T) {
	type S struct{ Messages state.Messages }
	child, err := graph.New[S]().
		AddNode("call_model", func(ctx context.Context, s S) (S, error) {
			graph.MessageWriter(ctx)(graph.MessageChunk{MessageID: "1", Text: "hi", Done: true})
			return S{Messages: state.Msgs(state.AI("hi").WithID("1"))}, nil
		}).
		AddCommandNode("route", func(context.Context, S) (graph.Command[S], error) {
			return graph.Command[S]{Parent: true, Goto: []string{"node_2"}}, nil
		}).
		AddEdge(graph.Start, "call_model").AddEdge("call_model", "route").
		Compile()
	require.NoError(t, err)
	g, err := graph.New[S]().
		AddCommandNode("node_1", graph.Subgraph[S, S](child, nil, nil), graph.WithDestinations("node_2")).
		AddNode("node_2", func(_ context.Context, s S) (S, error) {
			s.Messages.Append(s.Messages.List()...) // identity: rewrites the same ids
			return s, nil
		}).
		AddEdge(graph.Start, "node_1").AddEdge("node_2", graph.End).
		Compile()
	require.NoError(t, err)
	ctx := dexCtx(t)

	evs, err := dexCollect(g.Stream(ctx, S{Messages: state.Msgs(state.Human("hi"))}, graph.WithStreamModes(graph.ModeMessages), graph.WithSubgraphs()))
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, graph.ModeMessages, evs[0].Mode)
	require.Equal(t, "call_model", evs[0].Node)
	require.True(t, strings.HasPrefix(evs[0].Namespace, "node_1:"), evs[0].Namespace)
	require.Equal(t, graph.MessageChunk{MessageID: "1", Text: "hi", Done: true}, evs[0].Payload)

	evs, err = dexCollect(g.Stream(ctx, S{Messages: state.Msgs(state.Human("hi"))}, graph.WithStreamModes(graph.ModeMessages)))
	require.NoError(t, err)
	require.Empty(t, evs, "messages of nested graphs are dropped without WithSubgraphs")

	out, err := g.Invoke(ctx, S{Messages: state.Msgs(state.Human("hi"))})
	require.NoError(t, err)
	require.Equal(t, []string{"hi"}, abcfTexts(out.Messages.List()))
}

// ---------------------------------------------------------------------------
// S65 retry tests (T/test_retry.py). The sleep durations (and jitter) are
// not observable from outside the package without timing; that the wait is
// honoured is shown by cancelling a run parked in a long backoff. Python's
// per-exception policy list has no Go equivalent (one policy per node).

func TestS65Retry(t *testing.T) {
	type S struct{ L state.Append[string] }
	errTransient := errors.New("transient")
	errPermanent := errors.New("permanent")
	build := func(fn graph.NodeFunc[S], opts ...graph.NodeOption) *graph.Graph[S] {
		g, err := graph.New[S]().
			AddNode("node", fn, opts...).
			AddEdge(graph.Start, "node").AddEdge("node", graph.End).
			Compile()
		require.NoError(t, err)
		return g
	}
	failing := func(attempts *[]int, failures int, err error) graph.NodeFunc[S] {
		var mu sync.Mutex
		return func(context.Context, S) (S, error) {
			mu.Lock()
			defer mu.Unlock()
			*attempts = append(*attempts, len(*attempts)+1)
			if len(*attempts) <= failures {
				return S{}, err
			}
			return S{L: state.Items("ok")}, nil
		}
	}

	t.Run("succeeds on the third attempt", func(t *testing.T) {
		var attempts []int
		g := build(failing(&attempts, 2, errTransient), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, BackoffFactor: 2}))
		out, err := g.Invoke(dexCtx(t), S{})
		require.NoError(t, err)
		require.Equal(t, []int{1, 2, 3}, attempts)
		require.Equal(t, []string{"ok"}, out.L.Get())
	})
	t.Run("exhausted returns the original error", func(t *testing.T) {
		var attempts []int
		g := build(failing(&attempts, 100, errTransient), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}))
		_, err := g.Invoke(dexCtx(t), S{})
		require.ErrorIs(t, err, errTransient)
		var ne *graph.NodeError
		require.ErrorAs(t, err, &ne)
		require.Equal(t, "node", ne.Node)
		require.Equal(t, 3, ne.Attempts)
		require.Equal(t, []int{1, 2, 3}, attempts)
	})
	t.Run("retry_on rejects the error", func(t *testing.T) {
		var attempts []int
		g := build(failing(&attempts, 100, errPermanent), graph.WithRetry(graph.RetryPolicy{
			MaxAttempts: 3,
			RetryOn:     func(err error) bool { return errors.Is(err, errTransient) },
		}))
		_, err := g.Invoke(dexCtx(t), S{})
		require.ErrorIs(t, err, errPermanent)
		require.Equal(t, []int{1}, attempts)
	})
	t.Run("no policy, no retry", func(t *testing.T) {
		var attempts []int
		g := build(failing(&attempts, 1, errTransient))
		_, err := g.Invoke(dexCtx(t), S{})
		require.ErrorIs(t, err, errTransient)
		require.Equal(t, []int{1}, attempts)
	})
	t.Run("interrupts are not retried", func(t *testing.T) {
		var runs atomic.Int32
		g, err := graph.New[S]().
			AddNode("node", func(ctx context.Context, s S) (S, error) {
				runs.Add(1)
				if _, err := graph.Interrupt(ctx, "stop"); err != nil {
					return s, err
				}
				return S{L: state.Items("resumed")}, nil
			}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 5})).
			AddEdge(graph.Start, "node").AddEdge("node", graph.End).
			Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
		require.NoError(t, err)
		_, err = g.Invoke(dexCtx(t), S{}, graph.WithThread("1"))
		var intr *graph.Interrupted
		require.ErrorAs(t, err, &intr)
		require.EqualValues(t, 1, runs.Load())
	})
	t.Run("node timeouts are retried", func(t *testing.T) {
		_, panics := abcfRetainedCtx()
		require.False(t, panics, "a context retained after the run does not panic")
		var runs atomic.Int32
		g := build(func(ctx context.Context, s S) (S, error) {
			if runs.Add(1) == 1 {
				<-ctx.Done() // the attempt's deadline
				return s, ctx.Err()
			}
			return S{L: state.Items("ok")}, nil
		}, graph.WithNodeTimeout(time.Millisecond), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2}))
		out, err := g.Invoke(dexCtx(t), S{})
		require.NoError(t, err)
		require.Equal(t, []string{"ok"}, out.L.Get())
		require.EqualValues(t, 2, runs.Load())
	})
	t.Run("node timeout error", func(t *testing.T) {
		_, panics := abcfRetainedCtx()
		require.False(t, panics, "a context retained after the run does not panic")
		g := build(func(ctx context.Context, s S) (S, error) {
			<-ctx.Done()
			return s, ctx.Err()
		}, graph.WithNodeTimeout(time.Millisecond))
		_, err := g.Invoke(dexCtx(t), S{})
		var ne *graph.NodeError
		require.ErrorAs(t, err, &ne)
		require.Equal(t, 1, ne.Attempts)
		require.ErrorIs(t, err, graph.ErrNodeTimeout)
	})
	t.Run("backoff wait is honoured and cancellable", func(t *testing.T) {
		var runs atomic.Int32
		failed := make(chan struct{})
		g := build(func(context.Context, S) (S, error) {
			if runs.Add(1) == 1 {
				close(failed)
			}
			return S{}, errTransient
		}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Hour}))
		ctx, cancel := context.WithCancel(dexCtx(t))
		go func() {
			<-failed
			cancel()
		}()
		_, err := g.Invoke(ctx, S{})
		require.ErrorIs(t, err, context.Canceled)
		require.EqualValues(t, 1, runs.Load(), "no second attempt before the backoff elapsed")
	})
}

// ---------------------------------------------------------------------------
// S67 test_node_cancellation_on_other_node_exception.

func TestS67NodeCancellationOnOtherNodeException(t *testing.T) {
	type S struct{ L state.Append[string] }
	errBad := errors.New("I am bad")
	agentStarted := make(chan struct{})
	agentErr := make(chan error, 1)
	g, err := graph.New[S]().
		AddNode("agent", func(ctx context.Context, s S) (S, error) {
			close(agentStarted)
			<-ctx.Done()
			agentErr <- ctx.Err()
			return s, ctx.Err()
		}).
		AddNode("bad", func(ctx context.Context, s S) (S, error) {
			select {
			case <-agentStarted:
			case <-ctx.Done():
				return s, ctx.Err()
			}
			return s, errBad
		}).
		AddEdge(graph.Start, "agent").AddEdge(graph.Start, "bad").
		AddEdge("agent", graph.End).AddEdge("bad", graph.End).
		Compile()
	require.NoError(t, err)
	_, err = g.Invoke(dexCtx(t), S{})
	require.ErrorIs(t, err, errBad)
	require.NotErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	require.Equal(t, "bad", ne.Node)
	select {
	case e := <-agentErr:
		require.ErrorIs(t, e, context.Canceled, "the sibling was cancelled")
	default:
		t.Fatal("the sibling was not cancelled before the run returned")
	}
}

// ---------------------------------------------------------------------------
// Goroutine leaks: runs that succeed, fail, are cancelled (from the
// caller's context or by stopping a stream early) and are interrupted
// (dynamic interrupt in a subgraph, with a parallel sibling) must leave no
// goroutine behind, in every durability mode.

func TestGoroutineLeaksABCF(t *testing.T) {
	type S struct{ L state.Append[string] }
	errBoom := errors.New("boom")
	leaf := func(name string) graph.NodeFunc[S] {
		return func(context.Context, S) (S, error) { return S{L: state.Items(name)}, nil }
	}
	child, err := graph.New[S]().
		AddNode("ask", func(ctx context.Context, s S) (S, error) {
			v, err := graph.Interrupt(ctx, "ok?")
			if err != nil {
				return s, err
			}
			return S{L: state.Items(fmt.Sprint(v))}, nil
		}).
		AddEdge(graph.Start, "ask").AddEdge("ask", graph.End).
		Compile()
	require.NoError(t, err)

	for _, m := range dexDurabilities {
		t.Run(m.name, func(t *testing.T) {
			check := abcfNoLeak(t)
			defer check()
			dur := graph.WithDurability(m.d)
			ctx := dexCtx(t)

			// Success: fan-out, Send tasks, streamed and invoked.
			ok, err := graph.New[S]().
				AddNode("a", leaf("a")).AddNode("b", leaf("b")).AddNode("c", leaf("c")).
				AddEdge(graph.Start, "a").AddEdge(graph.Start, "b").
				AddBranch("a", func(context.Context, S) (graph.Route[S], error) {
					return graph.Route[S]{Sends: []graph.Send[S]{{Node: "c"}, {Node: "c"}}}, nil
				}).
				AddEdge("b", graph.End).AddEdge("c", graph.End).
				Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			out, err := ok.Invoke(ctx, S{}, graph.WithThread("ok"), dur)
			require.NoError(t, err)
			require.Equal(t, []string{"a", "b", "c", "c"}, out.L.Get())
			_, err = dexCollect(ok.Stream(ctx, S{}, graph.WithThread("ok2"), dur, graph.WithStreamModes(graph.ModeUpdates|graph.ModeValues|graph.ModeTasks|graph.ModeCheckpoints)))
			require.NoError(t, err)

			// Failure: one node fails while its sibling blocks.
			started := make(chan struct{})
			bad, err := graph.New[S]().
				AddNode("slow", func(ctx context.Context, s S) (S, error) {
					close(started)
					<-ctx.Done()
					return s, ctx.Err()
				}).
				AddNode("bad", func(ctx context.Context, s S) (S, error) {
					<-started
					return s, errBoom
				}).
				AddEdge(graph.Start, "slow").AddEdge(graph.Start, "bad").
				AddEdge("slow", graph.End).AddEdge("bad", graph.End).
				Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			_, err = dexCollect(bad.Stream(ctx, S{}, graph.WithThread("bad"), dur))
			require.ErrorIs(t, err, errBoom)

			// Cancelled from the caller's context while nodes block.
			block, err := graph.New[S]().
				AddNode("x", func(ctx context.Context, s S) (S, error) { <-ctx.Done(); return s, ctx.Err() }).
				AddNode("y", func(ctx context.Context, s S) (S, error) { <-ctx.Done(); return s, ctx.Err() }).
				AddEdge(graph.Start, "x").AddEdge(graph.Start, "y").
				AddEdge("x", graph.End).AddEdge("y", graph.End).
				Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			cctx, cancel := context.WithCancel(ctx)
			var evs int
			for ev, err := range block.Stream(cctx, S{}, graph.WithThread("cancel"), dur, graph.WithStreamModes(graph.ModeTasks)) {
				if err != nil {
					require.ErrorIs(t, err, context.Canceled)
					continue
				}
				if ts, ok := ev.Payload.(graph.TaskStart); ok && ts.Name == "y" {
					cancel()
				}
				evs++
			}
			cancel()
			require.NotZero(t, evs)

			// Cancelled by stopping a stream early.
			for range ok.Stream(ctx, S{}, graph.WithThread("early"), dur) {
				break
			}

			// Interrupted inside a subgraph while a sibling finishes, then
			// resumed.
			intrG, err := graph.New[S]().
				AddCommandNode("sub", graph.Subgraph[S, S](child, nil, nil)).
				AddNode("sib", leaf("sib")).
				AddEdge(graph.Start, "sub").AddEdge(graph.Start, "sib").
				AddEdge("sib", graph.End).
				Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			_, err = intrG.Invoke(ctx, S{}, graph.WithThread("intr"), dur)
			var intr *graph.Interrupted
			require.ErrorAs(t, err, &intr)
			if m.d == graph.DurabilityExit {
				snap, err := intrG.GetState(ctx, graph.WithThread("intr"))
				require.NoError(t, err)
				require.Equal(t, 0, snap.Metadata.Step, "the exit checkpoint carries the step it was saved in")
			}
			out, err = intrG.Resume(ctx, graph.Command[S]{Resume: "yes"}, graph.WithThread("intr"), dur)
			require.NoError(t, err)
			require.Equal(t, []string{"sib", "yes"}, out.L.Get())
		})
	}
}

// ---------------------------------------------------------------------------
// A node's context must stay a valid context after the node returned:
// goroutines a node starts may keep it (or contexts derived from it) and
// cancel them later, as the node-timeout context of the engine itself does.

// abcfRetainedCtx runs a two-node graph whose first node keeps its context
// and a cancel func of a context derived from it, then uses both after the
// run returned (and after a second run of the same graph). It returns what
// went wrong, or "".
func abcfRetainedCtx() (problem string, panics bool) {
	type S struct{ X state.Value[int] }
	var saved context.Context
	var cancelChild context.CancelFunc
	var taskID string
	g, err := graph.New[S]().
		AddNode("keep", func(ctx context.Context, s S) (S, error) {
			saved, taskID = ctx, graph.TaskID(ctx)
			_, cancelChild = context.WithCancel(ctx)
			return s, nil
		}).
		AddNode("other", func(_ context.Context, s S) (S, error) { return s, nil }).
		AddEdge(graph.Start, "keep").AddEdge("keep", "other").AddEdge("other", graph.End).
		Compile()
	if err != nil {
		return err.Error(), false
	}
	if _, err := g.Invoke(context.Background(), S{}); err != nil {
		return err.Error(), false
	}
	if _, err := g.Invoke(context.Background(), S{}); err != nil {
		return err.Error(), false
	}
	try := func(what string, f func()) (msg string) {
		defer func() {
			if r := recover(); r != nil {
				msg = fmt.Sprintf("%s panics after the run: %v", what, r)
			}
		}()
		f()
		return ""
	}
	if p := try("ctx.Err()", func() { _ = saved.Err() }); p != "" {
		return p, true
	}
	if p := try("cancelling a derived context", cancelChild); p != "" {
		return p, true
	}
	if name := graph.NodeName(saved); name != "keep" {
		return fmt.Sprintf("graph.NodeName(ctx) = %q after the run, want %q", name, "keep"), false
	}
	if id := graph.TaskID(saved); id != taskID {
		return fmt.Sprintf("graph.TaskID(ctx) = %q after the run, want %q", id, taskID), false
	}
	return "", false
}

func TestABCFNodeContextOutlivesRun(t *testing.T) {
	p, _ := abcfRetainedCtx()
	require.Empty(t, p, "a context kept after the run reads what it read during it")
}
