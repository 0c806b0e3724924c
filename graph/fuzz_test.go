package graph

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/state"
)

type fuzzState struct {
	Log   state.Append[string]
	Note  state.Value[string]
	Count state.Sum[int]
}

// fuzzGraph has what a frontier and pending writes can name: a branch
// that sends, a join whose sources run in different steps, a deferred
// node, an interrupt.
func fuzzGraph(tb testing.TB, saver checkpoint.Saver) *Graph[fuzzState] {
	tb.Helper()
	opts := []CompileOption{}
	if saver != nil {
		opts = append(opts, WithCheckpointer(saver))
	}
	g, err := New[fuzzState]().
		AddNode("plan", func(context.Context, fuzzState) (fuzzState, error) {
			return fuzzState{Note: state.Set("plan"), Log: state.Items("plan")}, nil
		}).
		AddBranch("plan", func(context.Context, fuzzState) (Route[fuzzState], error) {
			return Route[fuzzState]{Nodes: []string{"ask"}, Sends: []Send[fuzzState]{
				{Node: "work", Arg: fuzzState{Log: state.Items("w1")}},
				{Node: "work", Arg: fuzzState{Log: state.Items("w2"), Count: state.Delta(2)}},
			}}, nil
		}, WithDestinations("ask", "work")).
		AddNode("work", func(_ context.Context, s fuzzState) (fuzzState, error) {
			return fuzzState{Log: state.Items("did:" + s.Log.Get()[len(s.Log.Get())-1]), Count: state.Delta(1)}, nil
		}).
		AddNode("ask", func(ctx context.Context, _ fuzzState) (fuzzState, error) {
			answer, err := InterruptAs[string](ctx, "question")
			if err != nil {
				return fuzzState{}, err
			}
			return fuzzState{Log: state.Items("ask:" + answer)}, nil
		}).
		AddNode("sum", func(_ context.Context, s fuzzState) (fuzzState, error) {
			return fuzzState{Note: state.Set("sum:" + strconv.Itoa(s.Count.Get()))}, nil
		}, WithDeferred()).
		AddEdge(Start, "plan").
		AddJoin([]string{"plan", "ask"}, "sum").
		AddEdge("work", "sum").
		AddEdge("sum", End).
		Compile(opts...)
	require.NoError(tb, err)
	return g
}

// FuzzDecodeCheckpoint restores a checkpoint of fuzzGraph as GetState and
// Resume do: its channel values, one a line ("name version json"), its
// frontier, and its pending writes, one a line ("task\tnode\tchannel\tjson"),
// recorded against checkpoint id of namespace ns at step. The seed corpus
// in testdata/fuzz/FuzzDecodeCheckpoint holds the checkpoints of real runs
// of fuzzGraph, alone and as a subgraph (whose frontiers carry the
// accumulated writes). Restoring must never panic, and must either succeed or fail
// with a *checkpoint.CorruptError naming the checkpoint; a frontier that
// decodes must encode and decode back to itself.
func FuzzDecodeCheckpoint(f *testing.F) {
	g := fuzzGraph(f, nil)
	f.Fuzz(func(t *testing.T, ns, id string, step int, values, frontier, writes []byte) {
		tup := &checkpoint.Tuple{
			Checkpoint: checkpoint.Checkpoint{
				ThreadID: "t", Namespace: ns, ID: id, Metadata: checkpoint.Metadata{Source: "loop", Step: step},
				Channels: parseChannels(values), Frontier: frontier, Shape: g.shape,
			},
			PendingWrites: parseWrites(writes),
		}

		var accum fuzzState
		if fr, err := g.decodeFrontier(frontier, &accum, nil); err == nil {
			e1, err := g.encodeFrontier(nil, &fr, &accum)
			require.NoError(t, err)
			var accum2 fuzzState
			fr2, err := g.decodeFrontier(e1, &accum2, nil)
			require.NoError(t, err, "%s", e1)
			e2, err := g.encodeFrontier(nil, &fr2, &accum2)
			require.NoError(t, err)
			require.Equal(t, string(e1), string(e2))
		}

		l := g.newLoop(nil)
		l.ns, l.accumulate = ns, true
		byTask := make(map[string][]checkpoint.Write)
		for _, w := range tup.PendingWrites {
			byTask[w.TaskID] = append(byTask[w.TaskID], w)
		}
		for id, ws := range byTask {
			_, _ = l.decodeTask(ws, strings.HasPrefix(id, cmdTaskPrefix)) // must not panic
		}

		err := l.restore(tup)
		if err == nil {
			err = l.restorePending(tup)
		}
		if err != nil {
			var cerr *checkpoint.CorruptError
			require.ErrorAs(t, err, &cerr)
			require.Equal(t, checkpoint.CorruptError{ThreadID: "t", Namespace: ns, CheckpointID: id, Err: cerr.Err}, *cerr)
			return
		}
		l.step = step + 1
		ids := make(map[string]bool)
		for _, tk := range l.prepare() {
			ids[tk.hdr.ID()] = true
		}
		for id := range l.restored {
			require.True(t, ids[id], "restored task %s is not a task of the next step", id)
		}
	})
}

// parseChannels parses the channel values of FuzzDecodeCheckpoint.
func parseChannels(in []byte) []checkpoint.Channel {
	var chs []checkpoint.Channel
	for line := range bytes.Lines(in) {
		f := bytes.SplitN(bytes.TrimSuffix(line, []byte("\n")), []byte(" "), 3)
		if len(f) != 3 {
			continue
		}
		v, _ := strconv.ParseInt(string(f[1]), 10, 64)
		chs = append(chs, checkpoint.Channel{Name: string(f[0]), Version: v, Value: f[2]})
	}
	return chs
}

// parseWrites parses the pending writes of FuzzDecodeCheckpoint.
func parseWrites(in []byte) []checkpoint.Write {
	var ws []checkpoint.Write
	for line := range bytes.Lines(in) {
		f := bytes.SplitN(bytes.TrimSuffix(line, []byte("\n")), []byte("\t"), 4)
		if len(f) != 4 {
			continue
		}
		ws = append(ws, checkpoint.Write{TaskID: string(f[0]), TaskPath: string(f[1]), Channel: string(f[2]), Idx: len(ws), Value: f[3]})
	}
	return ws
}
