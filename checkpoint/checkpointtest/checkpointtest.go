package checkpointtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/state"
)

// Run tests a [checkpoint.Saver] against the promises of its contract, one
// subtest per promise.
//
// newSaver is called once per subtest. It must return a saver that holds no
// checkpoints and is not shared with any other subtest (subtests list every
// thread the saver holds), and release it with t.Cleanup. Savers must keep
// CreatedAt to at least the microsecond. The suite never uses a Checkpoint
// after passing it to Put, nor changes a Write's value after PutWrites.
//
// The cases that need two instances of the saver on one database run only
// with [WithSecondInstance]; they are skipped otherwise.
func Run(t *testing.T, newSaver func(t *testing.T) checkpoint.Saver, opts ...Option) {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	for _, c := range slices.Concat(cases, conflictCases, leaseCases, fenceCases, batchCases, concurrentCases) {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("promise: %s", c.explanation)
				}
			})
			if c.twoInstances && o.secondInstance == nil {
				t.Skip("needs two instances on one database: see checkpointtest.WithSecondInstance")
			}
			e := &env{t: t, ctx: t.Context(), s: newSaver(t)}
			if c.twoInstances {
				e.s2 = o.secondInstance(t, e.s)
			}
			c.run(e)
		})
	}
}

// An Option configures [Run].
type Option func(*options)

type options struct {
	secondInstance func(t *testing.T, s checkpoint.Saver) checkpoint.Saver
}

// WithSecondInstance runs the cases that need two instances of the saver
// on one database, as two processes would have: open must return a new
// saver on the same database as s (a saver returned by Run's newSaver),
// and release it with t.Cleanup. Savers that keep their data in the
// process, such as [checkpoint.Memory], have no such instance.
func WithSecondInstance(open func(t *testing.T, s checkpoint.Saver) checkpoint.Saver) Option {
	return func(o *options) { o.secondInstance = open }
}

type testCase struct {
	// name names the subtest.
	name string
	// explanation states the promise the case checks.
	explanation string
	// twoInstances marks a case that needs env.s2.
	twoInstances bool
	run          func(e *env)
}

var cases = []testCase{
	{
		name:        "copy-thread",
		explanation: "checkpoint.CopyThread gives the target thread the source's whole history — every namespace, forks, values, metadata, pending writes — under the same IDs, and refuses a target that has checkpoints or a source that has none",
		run: func(e *env) {
			th := e.thread("src", "")
			a := th.put(nil, meta("input", -1), map[string]string{"x": `1`})
			b := th.put(a, meta("loop", 0), map[string]string{"x": `2`, "y": `"b"`})
			th.put(b, meta("loop", 1), map[string]string{"x": `3`})
			th.fork(b, meta("update", 1), map[string]string{"y": `"fork"`})
			sub := e.thread("src", "inner:t1")
			sub.put(nil, meta("input", -1), map[string]string{"z": `"s"`})
			e.putWrites(ref(b), checkpoint.Write{TaskID: "t1", TaskPath: "n", Idx: 0, Channel: "x", Value: []byte(`9`)},
				checkpoint.Write{TaskID: "t1", TaskPath: "n", Idx: checkpoint.WriteIndex(checkpoint.ChannelError, 0), Channel: checkpoint.ChannelError, Value: []byte(`"boom"`)},
				checkpoint.Write{TaskID: "t0", TaskPath: "m", Idx: 0, Channel: "y", Value: []byte(`"w"`)})

			require.NoError(e.t, checkpoint.CopyThread(e.ctx, e.s, "src", "dst"))
			want := e.list("src", checkpoint.ListOptions{})
			for _, t := range want {
				t.ThreadID = "dst"
			}
			e.requireTuples(want, e.list("dst", checkpoint.ListOptions{}))
			require.Len(e.t, want, 5)

			require.ErrorContains(e.t, checkpoint.CopyThread(e.ctx, e.s, "src", "dst"), "has checkpoints already")
			require.ErrorIs(e.t, checkpoint.CopyThread(e.ctx, e.s, "nobody", "dst2"), checkpoint.ErrNotFound)
			require.Empty(e.t, e.list("dst2", checkpoint.ListOptions{}))
		},
	},
	{
		name:        "put-get-by-id",
		explanation: "Get with a checkpoint ID returns exactly what Put stored: IDs, thread, namespace, parent, creation time (to the microsecond), metadata, versions, values, frontier and shape",
		run: func(e *env) {
			th := e.thread("t1", "")
			n := th.put(nil, meta("input", -1), map[string]string{"__start__": `{"question":"hi"}`})
			e.requireTuple(th.want(n), e.get(ref(n)))
		},
	},
	{
		name:        "large-versions",
		explanation: "channel versions are arbitrary int64s (the runtime seeds them from the clock, near 2^61): they round trip exactly and address the right values, also across a delta chain",
		run: func(e *env) {
			th := e.thread("t1", "")
			th.version = 1<<62 - 10
			n1 := th.put(nil, meta("input", -1), map[string]string{"a": `[1]`, "b": `"x"`})
			n2 := th.put(n1, meta("loop", 0), map[string]string{"a": `[1,2]`})
			th.version = math.MaxInt64 - 1
			n3 := th.put(n2, meta("loop", 1), map[string]string{"a": `[1,2,3]`})
			require.Equal(e.t, int64(math.MaxInt64), n3.cp.Version("a"))
			for _, n := range []*node{n1, n2, n3} {
				e.requireTuple(th.want(n), e.get(ref(n)))
			}
		},
	},
	{
		name:        "get-latest",
		explanation: "Get without a checkpoint ID returns the checkpoint with the greatest ID of the thread and namespace",
		run: func(e *env) {
			th := e.thread("t1", "")
			n1 := th.put(nil, meta("input", -1), map[string]string{"a": `1`})
			n2 := th.put(n1, meta("loop", 0), map[string]string{"a": `2`})
			n3 := th.put(n2, meta("loop", 1), map[string]string{"a": `3`})
			e.requireTuple(th.want(n3), e.get(checkpoint.Ref{ThreadID: "t1"}))
		},
	},
	{
		name:        "get-older-by-id",
		explanation: "Get with the ID of an older checkpoint returns that checkpoint with the values it had, not the latest values",
		run: func(e *env) {
			th := e.thread("t1", "")
			n1 := th.put(nil, meta("input", -1), map[string]string{"a": `"one"`, "b": `[1]`})
			n2 := th.put(n1, meta("loop", 0), map[string]string{"a": `"two"`, "b": `[1,2]`})
			th.put(n2, meta("loop", 1), map[string]string{"a": `"three"`, "b": `[1,2,3]`})
			e.requireTuple(th.want(n1), e.get(ref(n1)))
			e.requireTuple(th.want(n2), e.get(ref(n2)))
		},
	},
	{
		name:        "get-not-found",
		explanation: "Get of an unknown thread, namespace or checkpoint ID (or of an empty thread ID) returns an error wrapping checkpoint.ErrNotFound",
		run: func(e *env) {
			th := e.thread("t1", "")
			n := th.put(nil, meta("input", -1), map[string]string{"a": `1`})
			for _, r := range []checkpoint.Ref{
				{ThreadID: "nope"},
				{ThreadID: "nope", ID: n.cp.ID},
				{ThreadID: "t1", Namespace: "child"},
				{ThreadID: "t1", ID: checkpoint.NewID()},
				{ThreadID: "", ID: n.cp.ID},
				{},
			} {
				tup, err := e.s.Get(e.ctx, r)
				require.ErrorIs(e.t, err, checkpoint.ErrNotFound, "Get(%+v)", r)
				require.Nil(e.t, tup, "Get(%+v)", r)
			}
		},
	},
	{
		name:        "parent-links",
		explanation: "ParentID is stored as given: empty for a thread's first checkpoint, the previous checkpoint's ID after it",
		run: func(e *env) {
			th := e.thread("t1", "")
			n1 := th.put(nil, meta("input", -1), map[string]string{"a": `1`})
			n2 := th.put(n1, meta("loop", 0), map[string]string{"a": `2`})
			n3 := th.put(n2, meta("loop", 1), nil)
			require.Empty(e.t, e.get(ref(n1)).ParentID)
			require.Equal(e.t, n1.cp.ID, e.get(ref(n2)).ParentID)
			require.Equal(e.t, n2.cp.ID, e.get(ref(n3)).ParentID)
		},
	},
	{
		name:        "unchanged-channels-carried-over",
		explanation: "Put receives only the values of channels whose version changed; Get returns a value for every channel of the checkpoint, reading unchanged channels from the ancestor checkpoint that wrote that version",
		run: func(e *env) {
			th := e.thread("t1", "")
			n1 := th.put(nil, meta("input", -1), map[string]string{"a": `"a1"`, "b": `"b1"`, "c": `"c1"`})
			n2 := th.put(n1, meta("loop", 0), map[string]string{"b": `"b2"`})
			n3 := th.put(n2, meta("loop", 1), map[string]string{"c": `"c3"`})
			n4 := th.put(n3, meta("loop", 2), nil)
			require.Empty(e.t, valuesOf(n4.cp))
			got := e.get(ref(n4))
			require.Equal(e.t, map[string]string{"a": `"a1"`, "b": `"b2"`, "c": `"c3"`}, stringValues(valuesOf(&got.Checkpoint)))
			e.requireTuple(th.want(n4), got)
			e.requireTuple(th.want(n2), e.get(ref(n2)))
		},
	},
	{
		name:        "removed-channel-has-no-value",
		explanation: "a channel missing from a checkpoint's Channels has no value in that checkpoint, even if an ancestor had one",
		run: func(e *env) {
			th := e.thread("t1", "")
			n1 := th.put(nil, meta("input", -1), map[string]string{"a": `1`, "gone": `"x"`})
			n2 := th.put(n1, meta("loop", 0), map[string]string{"a": `2`}, "gone")
			got := e.get(ref(n2))
			_, ok := got.Lookup("gone")
			require.False(e.t, ok)
			e.requireTuple(th.want(n2), got)
		},
	},
	{
		name:        "values-byte-exact",
		explanation: "values come back byte for byte, whitespace and key order included, whether they are arrays that grow, arrays rewritten, or other JSON",
		run: func(e *env) {
			th := e.thread("t1", "")
			steps := []string{`[]`, `[ ]`, `[1, 2 ]`, `[1, 2 ,3]`, `[1, 2 ,3]`, `{"b":1, "a":[2]}`, `"[1]"`, `null`, `[]`, `[]`, `[{"x":"]"}]`, `[{"x":"]"},"[,]"]`, `[0]`}
			var prev *node
			var nodes []*node
			for i, v := range steps {
				prev = th.put(prev, meta("loop", i), map[string]string{"v": v})
				nodes = append(nodes, prev)
			}
			for i, n := range nodes {
				require.Equal(e.t, steps[i], string(e.get(ref(n)).Value("v")), "step %d", i)
			}
		},
	},
	{
		name:        "appended-list-reads-back-at-every-checkpoint",
		explanation: "a channel that grows by appending over many checkpoints, as a message list does (and that is sometimes rewritten, left unchanged or forked), reads back exactly at every checkpoint",
		run: func(e *env) {
			th := e.thread("t1", "")
			var list []string
			var prev, forkAt *node
			var nodes []*node
			for i := range 100 {
				changes := map[string]string{"step": fmt.Sprint(i)}
				switch {
				case i%40 == 39:
					list = list[1:]
				case i%7 == 6:
				default:
					list = append(list, fmt.Sprintf(`{"role":"human","text":"message %d"}`, i))
				}
				if i%7 != 6 {
					changes["messages"] = "[" + strings.Join(list, ",") + "]"
				}
				prev = th.put(prev, meta("loop", i), changes)
				nodes = append(nodes, prev)
				if i == 60 {
					forkAt = prev
				}
			}
			fork := forkAt
			for i := range 20 {
				vals := th.values[fork.cp.ID]
				old := string(vals["messages"])
				next := old[:len(old)-1] + fmt.Sprintf(`,{"role":"ai","text":"fork %d"}]`, i)
				changes := map[string]string{"messages": next}
				if i == 0 {
					fork = th.fork(fork, meta("fork", 61+i), changes)
				} else {
					fork = th.put(fork, meta("fork", 61+i), changes)
				}
				nodes = append(nodes, fork)
			}
			for _, n := range nodes {
				got := e.get(ref(n))
				require.Equal(e.t, string(th.values[n.cp.ID]["messages"]), string(got.Value("messages")), "checkpoint %d", n.cp.Metadata.Step)
			}
		},
	},
	{
		name:        "fork-branches-independent",
		explanation: "two checkpoints with the same parent (a fork, put with Fork set) keep their own values and parents; neither branch sees the other's writes",
		run: func(e *env) {
			th := e.thread("t1", "")
			root := th.put(nil, meta("input", -1), map[string]string{"a": `["x"]`, "b": `0`})
			left := th.put(root, meta("loop", 0), map[string]string{"a": `["x","left"]`})
			right := th.fork(root, meta("fork", 0), map[string]string{"a": `["x","right"]`, "b": `1`})
			left2 := th.fork(left, meta("loop", 1), map[string]string{"a": `["x","left","left2"]`})
			for _, n := range []*node{root, left, right, left2} {
				e.requireTuple(th.want(n), e.get(ref(n)))
			}
			require.Equal(e.t, root.cp.ID, e.get(ref(right)).ParentID)
		},
	},
	{
		name:        "list-newest-first",
		explanation: "List yields a thread's checkpoints in every namespace newest first (descending ID), each complete with values and pending writes like Get",
		run: func(e *env) {
			th := e.thread("t1", "")
			child := e.thread("t1", "child")
			var want []*checkpoint.Tuple
			var prev, cprev *node
			for i := range 4 {
				prev = th.put(prev, meta("loop", i), map[string]string{"a": fmt.Sprint(i)})
				want = append(want, th.want(prev))
				cprev = child.put(cprev, meta("loop", i), map[string]string{"c": fmt.Sprint(i)})
				want = append(want, child.want(cprev))
			}
			w := checkpoint.Write{TaskID: "task", Idx: 0, Channel: "a", Value: []byte(`9`)}
			e.putWrites(ref(prev), w)
			want[len(want)-2].PendingWrites = []checkpoint.Write{w}
			slices.Reverse(want)
			e.requireTuples(want, e.list("t1", checkpoint.ListOptions{}))
		},
	},
	{
		name:        "list-limit",
		explanation: "List with Limit yields at most Limit checkpoints, the newest ones",
		run: func(e *env) {
			ids := e.linear("t1", "", 5)
			require.Equal(e.t, rev(ids)[:2], e.listIDs("t1", checkpoint.ListOptions{Limit: 2}))
			require.Equal(e.t, rev(ids), e.listIDs("t1", checkpoint.ListOptions{Limit: 10}))
		},
	},
	{
		name:        "list-before",
		explanation: "List with Before yields only checkpoints whose ID is strictly smaller, newest first, also combined with Limit",
		run: func(e *env) {
			ids := e.linear("t1", "", 5)
			require.Equal(e.t, rev(ids[:3]), e.listIDs("t1", checkpoint.ListOptions{Before: ids[3]}))
			require.Equal(e.t, rev(ids[:3])[:2], e.listIDs("t1", checkpoint.ListOptions{Before: ids[3], Limit: 2}))
			require.Empty(e.t, e.listIDs("t1", checkpoint.ListOptions{Before: ids[0]}))
		},
	},
	{
		name:        "list-filter",
		explanation: "List with Filter yields checkpoints whose flat metadata has an equal value for every key: source, step, run_id and custom keys, one or several, types compared as JSON (\"1\" does not match 1, 1 does not match true); Limit applies after the filter",
		run: func(e *env) {
			th := e.thread("t1", "")
			m := func(source string, step int, extra map[string]any) checkpoint.Metadata {
				md := meta(source, step)
				md.Extra = extra
				md.RunID = "run-" + fmt.Sprint(step%2)
				return md
			}
			n0 := th.put(nil, m("input", -1, map[string]any{"user": "ana", "flag": true}), map[string]string{"a": `0`})
			n1 := th.put(n0, m("loop", 0, map[string]any{"user": "ana", "score": 3.5}), map[string]string{"a": `1`})
			n2 := th.put(n1, m("loop", 1, map[string]any{"user": "bob", "score": 1, "flag": false}), map[string]string{"a": `2`})
			n3 := th.put(n2, m("update", 2, map[string]any{"user": "ana", "n": 1}), map[string]string{"a": `3`})
			n4 := th.put(n3, m("loop", 3, map[string]any{"user": "ana", "score": 3.5}), map[string]string{"a": `4`})
			id := func(ns ...*node) []string {
				var out []string
				for _, n := range ns {
					out = append(out, n.cp.ID)
				}
				return out
			}
			tests := []struct {
				filter map[string]any
				limit  int
				want   []string
			}{
				{map[string]any{}, 0, id(n4, n3, n2, n1, n0)},
				{map[string]any{"source": "input"}, 0, id(n0)},
				{map[string]any{"source": "loop"}, 0, id(n4, n2, n1)},
				{map[string]any{"source": "loop"}, 2, id(n4, n2)},
				{map[string]any{"step": 1}, 0, id(n2)},
				{map[string]any{"step": -1}, 0, id(n0)},
				{map[string]any{"step": 1.0}, 0, id(n2)},
				{map[string]any{"run_id": "run-1"}, 0, id(n4, n2)},
				{map[string]any{"user": "ana"}, 0, id(n4, n3, n1, n0)},
				{map[string]any{"user": "ana"}, 1, id(n4)},
				{map[string]any{"score": 3.5}, 0, id(n4, n1)},
				{map[string]any{"flag": true}, 0, id(n0)},
				{map[string]any{"flag": false}, 0, id(n2)},
				{map[string]any{"source": "loop", "user": "ana"}, 0, id(n4, n1)},
				{map[string]any{"source": "loop", "user": "ana", "step": 0}, 0, id(n1)},
				{map[string]any{"source": "update", "user": "bob"}, 0, nil},
				{map[string]any{"step": "1"}, 0, nil},
				{map[string]any{"n": true}, 0, nil},
				{map[string]any{"flag": 1}, 0, nil},
				{map[string]any{"missing": "x"}, 0, nil},
				{map[string]any{"user": "nobody"}, 0, nil},
			}
			for _, tt := range tests {
				got := e.listIDs("t1", checkpoint.ListOptions{Filter: tt.filter, Limit: tt.limit})
				require.Equal(e.t, tt.want, got, "filter %v limit %d", tt.filter, tt.limit)
			}
		},
	},
	{
		name:        "list-namespace",
		explanation: "ListOptions.Namespace nil lists every namespace of the thread, a pointer to \"\" only the root graph, a pointer to \"child\" only that subgraph",
		run: func(e *env) {
			root := e.linear("t1", "", 2)
			child := e.linear("t1", "child", 2)
			all := slices.Sorted(slices.Values(append(slices.Clone(root), child...)))
			require.Equal(e.t, rev(all), e.listIDs("t1", checkpoint.ListOptions{}))
			require.Equal(e.t, rev(root), e.listIDs("t1", checkpoint.ListOptions{Namespace: new("")}))
			require.Equal(e.t, rev(child), e.listIDs("t1", checkpoint.ListOptions{Namespace: new("child")}))
			require.Empty(e.t, e.listIDs("t1", checkpoint.ListOptions{Namespace: new("other")}))
		},
	},
	{
		name:        "list-all-threads",
		explanation: "List with an empty thread ID yields the checkpoints of every thread and namespace, newest first, still honouring the options",
		run: func(e *env) {
			a := e.linear("a", "", 2)
			b := e.linear("b", "", 2)
			c := e.linear("b", "child", 1)
			all := slices.Sorted(slices.Values(slices.Concat(a, b, c)))
			require.Equal(e.t, rev(all), e.listIDs("", checkpoint.ListOptions{}))
			require.Equal(e.t, rev(all)[:3], e.listIDs("", checkpoint.ListOptions{Limit: 3}))
			require.Equal(e.t, rev(slices.Sorted(slices.Values(slices.Concat(a, b)))), e.listIDs("", checkpoint.ListOptions{Namespace: new("")}))
			require.Equal(e.t, rev(all[:2]), e.listIDs("", checkpoint.ListOptions{Before: all[2]}))
		},
	},
	{
		name:        "list-unknown-thread",
		explanation: "List of a thread with no checkpoints yields nothing and no error",
		run: func(e *env) {
			e.linear("t1", "", 1)
			require.Empty(e.t, e.list("nope", checkpoint.ListOptions{}))
		},
	},
	{
		name:        "list-stop-early",
		explanation: "a consumer may stop ranging over List early; the saver stays usable (no transaction, lock or connection is left held)",
		run: func(e *env) {
			ids := e.linear("t1", "", 3)
			for range 3 {
				for tup, err := range e.s.List(e.ctx, "t1", checkpoint.ListOptions{}) {
					require.NoError(e.t, err)
					require.Equal(e.t, ids[2], tup.ID)
					break
				}
			}
			ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
			defer cancel()
			id := checkpoint.NewID()
			cp := &checkpoint.Checkpoint{ID: id, ThreadID: "t1", ParentID: ids[2], CreatedAt: now(), Metadata: meta("loop", 3), Channels: []checkpoint.Channel{{Name: "x", Version: 100, Value: []byte(`1`)}}}
			require.NoError(e.t, e.s.Put(ctx, cp))
			got, err := e.s.Get(ctx, checkpoint.Ref{ThreadID: "t1"})
			require.NoError(e.t, err)
			require.Equal(e.t, id, got.ID)
		},
	},
	{
		name:        "list-during-writes",
		explanation: "the consumer of List may call Put, PutWrites and Get on the same saver while ranging",
		run: func(e *env) {
			th := e.thread("t1", "")
			n := th.put(nil, meta("input", -1), map[string]string{"a": `1`})
			n = th.put(n, meta("loop", 0), map[string]string{"a": `2`})
			count := 0
			for tup, err := range e.s.List(e.ctx, "t1", checkpoint.ListOptions{}) {
				require.NoError(e.t, err)
				count++
				e.putWrites(ref(&node{cp: &tup.Checkpoint}), checkpoint.Write{TaskID: "t", Channel: "a", Value: []byte(`0`)})
				n = th.put(n, meta("loop", 10+count), map[string]string{"b": fmt.Sprint(count)})
				e.get(checkpoint.Ref{ThreadID: "t1"})
			}
			require.Equal(e.t, 2, count)
		},
	},
	{
		name:        "writes-round-trip",
		explanation: "PutWrites stores each write's task ID, task path, index, channel and value against the checkpoint; Get and List return them as PendingWrites",
		run: func(e *env) {
			th := e.thread("t1", "")
			n := th.put(nil, meta("loop", 0), map[string]string{"a": `1`})
			ws := []checkpoint.Write{
				{TaskID: "task-1", TaskPath: "~__pregel_pull, one", Idx: 0, Channel: "a", Value: []byte(`2`)},
				{TaskID: "task-1", TaskPath: "~__pregel_pull, one", Idx: 1, Channel: "branch:to:two", Value: []byte(`null`)},
				{TaskID: "task-1", TaskPath: "~__pregel_pull, one", Idx: 2, Channel: checkpoint.ChannelNoWrites},
			}
			e.putWrites(ref(n), ws...)
			want := th.want(n)
			want.PendingWrites = ws
			e.requireTuple(want, e.get(ref(n)))
			e.requireTuples([]*checkpoint.Tuple{want}, e.list("t1", checkpoint.ListOptions{}))
		},
	},
	{
		name:        "writes-ordered-by-task-and-index",
		explanation: "pending writes are ordered by task ID, then index (negative indexes of special channels first), whatever the order they were put in",
		run: func(e *env) {
			th := e.thread("t1", "")
			n := th.put(nil, meta("loop", 0), map[string]string{"a": `1`})
			w := func(task string, idx int, ch string) checkpoint.Write {
				return checkpoint.Write{TaskID: task, Idx: idx, Channel: ch, Value: []byte(fmt.Sprintf(`"%s/%d"`, task, idx))}
			}
			e.putWrites(ref(n), w("b", 1, "y"), w("b", 0, "x"))
			e.putWrites(ref(n), w("a", 2, "z"), w("a", 0, "x"), w("a", 10, "w"))
			e.putWrites(ref(n), w("c", -1, checkpoint.ChannelError))
			e.putWrites(ref(n), w("a", checkpoint.WriteIndex(checkpoint.ChannelInterrupt, 5), checkpoint.ChannelInterrupt))
			e.putWrites(ref(n), w("a", 1, "y"))
			got := e.get(ref(n)).PendingWrites
			want := []checkpoint.Write{w("a", -3, checkpoint.ChannelInterrupt), w("a", 0, "x"), w("a", 1, "y"), w("a", 2, "z"), w("a", 10, "w"), w("b", 0, "x"), w("b", 1, "y"), w("c", -1, checkpoint.ChannelError)}
			e.requireWrites(want, got)
		},
	},
	{
		name:        "writes-first-wins",
		explanation: "a write whose (task, index) is already stored and whose index is non-negative is ignored: the first write wins, so a replayed task cannot change its recorded result",
		run: func(e *env) {
			th := e.thread("t1", "")
			n := th.put(nil, meta("loop", 0), map[string]string{"a": `1`})
			first := []checkpoint.Write{{TaskID: "t", Idx: 0, Channel: "a", Value: []byte(`"first"`)}, {TaskID: "t", Idx: 1, Channel: "b", Value: []byte(`"first"`)}}
			e.putWrites(ref(n), first...)
			e.putWrites(ref(n), checkpoint.Write{TaskID: "t", Idx: 0, Channel: "c", Value: []byte(`"second"`)}, checkpoint.Write{TaskID: "t", Idx: 2, Channel: "c", Value: []byte(`"new"`)})
			want := append(slices.Clone(first), checkpoint.Write{TaskID: "t", Idx: 2, Channel: "c", Value: []byte(`"new"`)})
			e.requireWrites(want, e.get(ref(n)).PendingWrites)
		},
	},
	{
		name:        "writes-special-last-wins",
		explanation: "a write with a negative index (error, interrupt, resume) replaces the stored write of the same task and index: the last one wins, so a retried task's latest error is kept",
		run: func(e *env) {
			th := e.thread("t1", "")
			n := th.put(nil, meta("loop", 0), map[string]string{"a": `1`})
			errIdx := checkpoint.WriteIndex(checkpoint.ChannelError, 0)
			intIdx := checkpoint.WriteIndex(checkpoint.ChannelInterrupt, 0)
			e.putWrites(ref(n), checkpoint.Write{TaskID: "t", Idx: errIdx, Channel: checkpoint.ChannelError, Value: []byte(`"ConnectionError 1"`)})
			e.putWrites(ref(n), checkpoint.Write{TaskID: "t", Idx: errIdx, Channel: checkpoint.ChannelError, Value: []byte(`"ConnectionError 2"`)})
			e.putWrites(ref(n), checkpoint.Write{TaskID: "u", Idx: intIdx, Channel: checkpoint.ChannelInterrupt, Value: []byte(`"ask 1"`)})
			e.putWrites(ref(n), checkpoint.Write{TaskID: "u", Idx: intIdx, Channel: checkpoint.ChannelInterrupt, TaskPath: "p2", Value: []byte(`"ask 2"`)})
			want := []checkpoint.Write{
				{TaskID: "t", Idx: -1, Channel: checkpoint.ChannelError, Value: []byte(`"ConnectionError 2"`)},
				{TaskID: "u", Idx: -3, Channel: checkpoint.ChannelInterrupt, TaskPath: "p2", Value: []byte(`"ask 2"`)},
			}
			e.requireWrites(want, e.get(ref(n)).PendingWrites)
		},
	},
	{
		name:        "writes-per-checkpoint",
		explanation: "pending writes belong to the checkpoint they were put against: a newer checkpoint starts with none and the older one keeps its own",
		run: func(e *env) {
			th := e.thread("t1", "")
			n1 := th.put(nil, meta("loop", 0), map[string]string{"a": `1`})
			w := checkpoint.Write{TaskID: "t", Idx: 0, Channel: "a", Value: []byte(`2`)}
			e.putWrites(ref(n1), w)
			n2 := th.put(n1, meta("loop", 1), map[string]string{"a": `2`})
			require.Empty(e.t, e.get(checkpoint.Ref{ThreadID: "t1"}).PendingWrites)
			require.Empty(e.t, e.get(ref(n2)).PendingWrites)
			e.requireWrites([]checkpoint.Write{w}, e.get(ref(n1)).PendingWrites)
		},
	},
	{
		name:        "put-needs-thread-and-id",
		explanation: "Put of a checkpoint without a thread ID or ID, and PutWrites against a ref without a thread ID or checkpoint ID, return an error",
		run: func(e *env) {
			require.Error(e.t, e.s.Put(e.ctx, &checkpoint.Checkpoint{ID: checkpoint.NewID(), CreatedAt: now()}))
			require.Error(e.t, e.s.Put(e.ctx, &checkpoint.Checkpoint{ThreadID: "t1", CreatedAt: now()}))
			w := checkpoint.Write{TaskID: "t", Channel: "a", Value: []byte(`1`)}
			require.Error(e.t, e.s.PutWrites(e.ctx, checkpoint.Ref{ThreadID: "t1"}, []checkpoint.Write{w}))
			require.Error(e.t, e.s.PutWrites(e.ctx, checkpoint.Ref{ID: checkpoint.NewID()}, []checkpoint.Write{w}))
		},
	},
	{
		name:        "put-again-replaces",
		explanation: "Put of an ID that is already stored replaces the checkpoint (LangGraph savers upsert); List still yields it once",
		run: func(e *env) {
			th := e.thread("t1", "")
			n := th.put(nil, meta("loop", 0), map[string]string{"a": `1`})
			cp := cloneCheckpoint(n.cp)
			cp.Metadata = meta("update", 5)
			cp.Shape = "shape-2"
			require.NoError(e.t, e.s.Put(e.ctx, cp))
			got := e.get(ref(n))
			require.Equal(e.t, "update", got.Metadata.Source)
			require.Equal(e.t, 5, got.Metadata.Step)
			require.Equal(e.t, "shape-2", got.Shape)
			require.Len(e.t, e.list("t1", checkpoint.ListOptions{}), 1)
		},
	},
	{
		name:        "metadata-round-trip",
		explanation: "metadata comes back equal as flat JSON: source, step (including -1), parents, run ID and custom scalar keys in Extra",
		run: func(e *env) {
			th := e.thread("t1", "child:1")
			md := checkpoint.Metadata{
				Source:  "update",
				Step:    -1,
				Parents: map[string]string{"": checkpoint.NewID(), "outer:0": checkpoint.NewID()},
				RunID:   "run-42",
				Extra:   map[string]any{"user": "ana", "score": 3.5, "count": 42, "flag": true, "off": false, "empty": "", "unicode": "héllo <&> \u2028"},
			}
			n := th.put(nil, md, map[string]string{"a": `1`})
			got := e.get(ref(n)).Metadata
			require.Equal(e.t, "update", got.Source)
			require.Equal(e.t, -1, got.Step)
			require.Equal(e.t, md.Parents, got.Parents)
			require.Equal(e.t, "run-42", got.RunID)
			require.Equal(e.t, flatJSON(md), flatJSON(got))
			got = e.get(ref(th.put(n, meta("loop", 0), nil))).Metadata
			require.Empty(e.t, got.Parents)
			require.Empty(e.t, got.Extra)
			require.Empty(e.t, got.RunID)
		},
	},
	{
		name:        "frontier-and-shape-round-trip",
		explanation: "Frontier bytes (any bytes, NULs included) and the Shape string come back unchanged; an empty frontier comes back empty",
		run: func(e *env) {
			th := e.thread("t1", "")
			n := th.put(nil, meta("loop", 0), map[string]string{"a": `1`})
			frontier := make([]byte, 3*256)
			for i := range frontier {
				frontier[i] = byte(i)
			}
			const shape = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
			cp := cloneCheckpoint(n.cp)
			id := checkpoint.NewID()
			cp.ID, cp.ParentID, cp.Frontier, cp.Shape = id, n.cp.ID, slices.Clone(frontier), shape
			require.NoError(e.t, e.s.Put(e.ctx, cp))
			got := e.get(checkpoint.Ref{ThreadID: "t1", ID: id})
			require.Equal(e.t, frontier, got.Frontier)
			require.Equal(e.t, shape, got.Shape)
			cp = cloneCheckpoint(n.cp)
			cp.ParentID = id
			id = checkpoint.NewID()
			cp.ID, cp.Frontier, cp.Shape = id, nil, ""
			require.NoError(e.t, e.s.Put(e.ctx, cp))
			got = e.get(checkpoint.Ref{ThreadID: "t1", ID: id})
			require.Empty(e.t, got.Frontier)
			require.Empty(e.t, got.Shape)
		},
	},
	{
		name:        "get-returns-copies",
		explanation: "Get and List return fresh tuples: changing a returned Tuple's maps and byte slices does not change the stored checkpoint",
		run: func(e *env) {
			th := e.thread("t1", "")
			n := th.put(nil, meta("loop", 0), map[string]string{"a": `[1]`})
			e.putWrites(ref(n), checkpoint.Write{TaskID: "t", Channel: "a", Value: []byte(`[2]`)})
			want := th.want(n)
			want.PendingWrites = []checkpoint.Write{{TaskID: "t", Channel: "a", Value: []byte(`[2]`)}}
			got := e.get(ref(n))
			e.requireTuple(want, got)
			got.Channels[0].Value[1] = '8'
			got.Channels[0].Version = 998
			got.Frontier[0] = 'Y'
			got.PendingWrites[0].Value[1] = '9'
			e.requireTuple(want, e.get(ref(n)))
			listed := e.list("t1", checkpoint.ListOptions{})
			require.Len(e.t, listed, 1)
			listed[0].Channels[0].Value[1] = '7'
			listed[0].PendingWrites[0].Value[1] = '6'
			e.requireTuple(want, e.get(ref(n)))
		},
	},
	{
		name:        "namespaces-isolated",
		explanation: "namespaces of one thread are independent: each has its own latest checkpoint, values (even for the same channel and version) and pending writes",
		run: func(e *env) {
			root := e.thread("t1", "")
			child := e.thread("t1", "child")
			r := root.put(nil, meta("loop", 0), map[string]string{"messages": `["root"]`})
			c := child.put(nil, meta("loop", 0), map[string]string{"messages": `["child"]`})
			require.Equal(e.t, versionsOf(r.cp), versionsOf(c.cp))
			e.putWrites(ref(c), checkpoint.Write{TaskID: "t", Channel: "x", Value: []byte(`1`)})
			e.requireTuple(root.want(r), e.get(checkpoint.Ref{ThreadID: "t1"}))
			wc := child.want(c)
			wc.PendingWrites = []checkpoint.Write{{TaskID: "t", Channel: "x", Value: []byte(`1`)}}
			e.requireTuple(wc, e.get(checkpoint.Ref{ThreadID: "t1", Namespace: "child"}))
			_, err := e.s.Get(e.ctx, checkpoint.Ref{ThreadID: "t1", Namespace: "child", ID: r.cp.ID})
			require.ErrorIs(e.t, err, checkpoint.ErrNotFound)
		},
	},
	{
		name:        "threads-isolated",
		explanation: "threads are independent: the same channel at the same version holds each thread's own value",
		run: func(e *env) {
			a := e.thread("a", "")
			b := e.thread("b", "")
			na := a.put(nil, meta("loop", 0), map[string]string{"messages": `["a"]`})
			nb := b.put(nil, meta("loop", 0), map[string]string{"messages": `["b"]`})
			na2 := a.put(na, meta("loop", 1), map[string]string{"messages": `["a","a2"]`})
			e.requireTuple(a.want(na2), e.get(checkpoint.Ref{ThreadID: "a"}))
			e.requireTuple(b.want(nb), e.get(checkpoint.Ref{ThreadID: "b"}))
			require.Equal(e.t, []string{nb.cp.ID}, e.listIDs("b", checkpoint.ListOptions{}))
		},
	},
	{
		name:        "delete-thread",
		explanation: "DeleteThread (optional) removes a thread's checkpoints, values and pending writes in every namespace and leaves other threads alone; deleting an unknown thread is not an error",
		run: func(e *env) {
			d, ok := e.s.(checkpoint.ThreadDeleter)
			if !ok {
				e.t.Skip("saver does not implement checkpoint.ThreadDeleter")
			}
			a := e.thread("a", "")
			achild := e.thread("a", "child")
			b := e.thread("b", "")
			na := a.put(nil, meta("loop", 0), map[string]string{"x": `["old"]`})
			e.putWrites(ref(na), checkpoint.Write{TaskID: "t", Channel: "x", Value: []byte(`1`)})
			achild.put(nil, meta("loop", 0), map[string]string{"x": `1`})
			nb := b.put(nil, meta("loop", 0), map[string]string{"x": `["b"]`})
			e.putWrites(ref(nb), checkpoint.Write{TaskID: "t", Channel: "x", Value: []byte(`2`)})

			require.NoError(e.t, d.DeleteThread(e.ctx, "a"))
			require.NoError(e.t, d.DeleteThread(e.ctx, "nope"))
			for _, r := range []checkpoint.Ref{{ThreadID: "a"}, {ThreadID: "a", Namespace: "child"}, ref(na)} {
				_, err := e.s.Get(e.ctx, r)
				require.ErrorIs(e.t, err, checkpoint.ErrNotFound, "Get(%+v)", r)
			}
			require.Empty(e.t, e.list("a", checkpoint.ListOptions{}))
			require.Equal(e.t, []string{nb.cp.ID}, e.listIDs("", checkpoint.ListOptions{}))
			wb := b.want(nb)
			wb.PendingWrites = []checkpoint.Write{{TaskID: "t", Channel: "x", Value: []byte(`2`)}}
			e.requireTuple(wb, e.get(ref(nb)))

			// The thread can be reused: the same ID and channel versions
			// now hold new values and no pending writes.
			cp := cloneCheckpoint(na.cp)
			for i := range cp.Channels {
				cp.Channels[i].Value = nil
				if cp.Channels[i].Name == "x" {
					cp.Channels[i].Value = []byte(`["new"]`)
				}
			}
			require.NoError(e.t, e.s.Put(e.ctx, cp))
			got := e.get(ref(na))
			require.Equal(e.t, `["new"]`, string(got.Value("x")))
			require.Empty(e.t, got.PendingWrites)
		},
	},
	{
		name:        "concurrent-writers",
		explanation: "the saver is safe for concurrent use: many goroutines putting checkpoints and writes on their own threads while others read lose nothing",
		run: func(e *env) {
			const writers, steps = 16, 6
			var wg sync.WaitGroup
			errs := make(chan error, 2*writers)
			for g := range writers {
				wg.Go(func() {
					if err := concurrentThread(e.ctx, e.s, fmt.Sprintf("t%02d", g), steps); err != nil {
						errs <- err
					}
				})
			}
			var readers sync.WaitGroup
			for range 4 {
				readers.Go(func() {
					for range steps {
						for _, err := range e.s.List(e.ctx, "", checkpoint.ListOptions{Limit: 3}) {
							if err != nil {
								errs <- err
								return
							}
						}
						if _, err := e.s.Get(e.ctx, checkpoint.Ref{ThreadID: "t00"}); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			readers.Wait()
			close(errs)
			for err := range errs {
				require.NoError(e.t, err)
			}
			require.Len(e.t, e.list("", checkpoint.ListOptions{}), writers*steps)
			for g := range writers {
				tid := fmt.Sprintf("t%02d", g)
				got := e.get(checkpoint.Ref{ThreadID: tid})
				require.Equal(e.t, steps-1, got.Metadata.Step)
				var msgs []string
				require.NoError(e.t, json.Unmarshal(got.Value("messages"), &msgs))
				require.Len(e.t, msgs, steps)
				require.Equal(e.t, fmt.Sprintf(`"%s"`, tid), string(got.Value("owner")))
				require.Len(e.t, got.PendingWrites, 1)
				require.Len(e.t, e.list(tid, checkpoint.ListOptions{}), steps)
			}
		},
	},
	{
		name:        "large-values",
		explanation: "values, frontiers and pending writes of several megabytes round trip unchanged",
		run: func(e *env) {
			th := e.thread("t1", "")
			big := `"` + strings.Repeat("0123456789abcdef", 4<<20/16) + `"`
			list := "[" + strings.Repeat(`"`+strings.Repeat("x", 1000)+`",`, 2048) + `"end"]`
			n := th.put(nil, meta("loop", 0), map[string]string{"big": big, "list": list})
			n2 := th.put(n, meta("loop", 1), map[string]string{"list": list[:len(list)-1] + `,"more"]`})
			frontier := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1<<18)
			cp := cloneCheckpoint(n2.cp)
			id := checkpoint.NewID()
			cp.ID, cp.ParentID, cp.Frontier = id, n2.cp.ID, slices.Clone(frontier)
			for i := range cp.Channels {
				cp.Channels[i].Value = nil
			}
			require.NoError(e.t, e.s.Put(e.ctx, cp))
			w := checkpoint.Write{TaskID: "t", Channel: "big", Value: []byte(big)}
			e.putWrites(checkpoint.Ref{ThreadID: "t1", ID: id}, w)
			got := e.get(checkpoint.Ref{ThreadID: "t1"})
			require.Equal(e.t, id, got.ID)
			requireSameBytes(e.t, []byte(big), got.Value("big"), "big")
			requireSameBytes(e.t, n2.cp.Value("list"), got.Value("list"), "list")
			requireSameBytes(e.t, frontier, got.Frontier, "frontier")
			require.Len(e.t, got.PendingWrites, 1)
			requireSameBytes(e.t, []byte(big), got.PendingWrites[0].Value, "write")
			requireSameBytes(e.t, []byte(list), e.get(ref(n)).Value("list"), "first list")
		},
	},
	{
		name:        "chat-messages-round-trip",
		explanation: "a []state.Message conversation with tool calls and tool results, encoded with json.Marshal into a channel, decodes back equal at every checkpoint",
		run: func(e *env) {
			msgs := []state.Message{
				state.System("You are terse."),
				state.Human("Weather in Paris and Rome?"),
				state.AI("", state.ToolCall("call_1", "weather", `{"city":"Paris"}`), state.ToolCall("call_2", "weather", `{"city":"Rome","unit":"C"}`)),
				state.Tool("call_1", "weather", `18°C, "sunny"`),
				state.Tool("call_2", "weather", "22°C\ncloudy"),
				state.AI("Paris: 18°C and sunny. Rome: 22°C and cloudy."),
			}
			for i := range msgs {
				msgs[i].ID = fmt.Sprintf("msg-%d", i)
			}
			msgs[1].Name = "ana"
			th := e.thread("t1", "")
			var prev *node
			var nodes []*node
			for i := 1; i <= len(msgs); i++ {
				b, err := json.Marshal(msgs[:i])
				require.NoError(e.t, err)
				prev = th.put(prev, meta("loop", i), map[string]string{"messages": string(b)})
				nodes = append(nodes, prev)
			}
			for i, n := range nodes {
				var got []state.Message
				require.NoError(e.t, json.Unmarshal(e.get(ref(n)).Value("messages"), &got))
				if diff := cmp.Diff(msgs[:i+1], got); diff != "" {
					e.t.Fatalf("messages at checkpoint %d (-want +got):\n%s", i, diff)
				}
			}
		},
	},
	{
		name:        "context-cancelled",
		explanation: "every method called with a cancelled context returns an error wrapping context.Canceled",
		run: func(e *env) {
			th := e.thread("t1", "")
			n := th.put(nil, meta("loop", 0), map[string]string{"a": `1`})
			ctx, cancel := context.WithCancel(e.ctx)
			cancel()
			_, err := e.s.Get(ctx, ref(n))
			require.ErrorIs(e.t, err, context.Canceled, "Get")
			cp := cloneCheckpoint(n.cp)
			cp.ID = checkpoint.NewID()
			require.ErrorIs(e.t, e.s.Put(ctx, cp), context.Canceled, "Put")
			require.ErrorIs(e.t, e.s.PutWrites(ctx, ref(n), []checkpoint.Write{{TaskID: "t", Channel: "a"}}), context.Canceled, "PutWrites")
			var listErr error
			for _, err := range e.s.List(ctx, "t1", checkpoint.ListOptions{}) {
				if err != nil {
					listErr = err
					break
				}
			}
			require.ErrorIs(e.t, listErr, context.Canceled, "List")
			if d, ok := e.s.(checkpoint.ThreadDeleter); ok {
				require.ErrorIs(e.t, d.DeleteThread(ctx, "t1"), context.Canceled, "DeleteThread")
			}
			e.requireTuple(th.want(n), e.get(checkpoint.Ref{ThreadID: "t1"}))
		},
	},
}

// concurrentThread writes one thread's history; it runs on its own
// goroutine and so reports errors instead of failing the test.
func concurrentThread(ctx context.Context, s checkpoint.Saver, tid string, steps int) error {
	var parent string
	var msgs []string
	versions := map[string]int64{}
	for i := range steps {
		msgs = append(msgs, fmt.Sprintf("%s message %d", tid, i))
		list, _ := json.Marshal(msgs)
		versions["messages"] = int64(i + 1)
		values := map[string][]byte{"messages": list}
		if i == 0 {
			versions["owner"] = 1
			values["owner"] = []byte(fmt.Sprintf(`"%s"`, tid))
		}
		id := checkpoint.NewID()
		cp := &checkpoint.Checkpoint{
			ID: id, ThreadID: tid, ParentID: parent, CreatedAt: now(),
			Metadata: meta("loop", i), Channels: channelsOf(versions, values),
		}
		if err := s.Put(ctx, cp); err != nil {
			return fmt.Errorf("%s step %d: Put: %w", tid, i, err)
		}
		w := []checkpoint.Write{{TaskID: "task", Channel: "messages", Value: []byte(`"next"`)}}
		if err := s.PutWrites(ctx, checkpoint.Ref{ThreadID: tid, ID: id}, w); err != nil {
			return fmt.Errorf("%s step %d: PutWrites: %w", tid, i, err)
		}
		t, err := s.Get(ctx, checkpoint.Ref{ThreadID: tid})
		if err != nil {
			return fmt.Errorf("%s step %d: Get: %w", tid, i, err)
		}
		if t.ID != id || !bytes.Equal(t.Value("messages"), list) {
			return fmt.Errorf("%s step %d: Get returned checkpoint %s with messages %s, want %s with %s", tid, i, t.ID, t.Value("messages"), id, list)
		}
		parent = id
	}
	return nil
}

type env struct {
	t   *testing.T
	ctx context.Context
	s   checkpoint.Saver
	// s2 is a second instance on the database of s, for the cases with
	// twoInstances set.
	s2 checkpoint.Saver
}

// node is a checkpoint as put, with the full values it should read back.
type node struct {
	cp *checkpoint.Checkpoint
}

// history builds the checkpoints of one thread and namespace, handing out
// channel versions and remembering each checkpoint's full values.
type history struct {
	e       *env
	id, ns  string
	version int64
	values  map[string]map[string][]byte // checkpoint ID → channel → value
}

func (e *env) thread(id, ns string) *history {
	return &history{e: e, id: id, ns: ns, values: make(map[string]map[string][]byte)}
}

// put stores a checkpoint following parent (nil for the first) that sets
// the channels of changes to new versions and drops the removed channels.
func (h *history) put(parent *node, md checkpoint.Metadata, changes map[string]string, removed ...string) *node {
	h.e.t.Helper()
	return h.putOn(h.e.s, parent, false, md, changes, removed...)
}

// fork is put for a checkpoint that deliberately branches from parent,
// which need not be the latest checkpoint (see [checkpoint.Checkpoint.Fork]).
func (h *history) fork(parent *node, md checkpoint.Metadata, changes map[string]string) *node {
	h.e.t.Helper()
	return h.putOn(h.e.s, parent, true, md, changes)
}

// putOn is put through s, of a fork if fork is set.
func (h *history) putOn(s checkpoint.Saver, parent *node, fork bool, md checkpoint.Metadata, changes map[string]string, removed ...string) *node {
	h.e.t.Helper()
	cp, values := h.next(parent, md, changes, removed...)
	cp.Fork = fork
	n, err := h.try(s, cp, values)
	require.NoError(h.e.t, err, "Put")
	return n
}

// next returns, without storing it, the checkpoint following parent that
// put would store, and the full values it should read back with.
func (h *history) next(parent *node, md checkpoint.Metadata, changes map[string]string, removed ...string) (*checkpoint.Checkpoint, map[string][]byte) {
	versions := map[string]int64{}
	values := map[string][]byte{}
	cp := &checkpoint.Checkpoint{
		ID:        checkpoint.NewID(),
		ThreadID:  h.id,
		Namespace: h.ns,
		CreatedAt: now(),
		Metadata:  md,
		Shape:     "shape-1",
	}
	changed := map[string][]byte{}
	if parent != nil {
		cp.ParentID = parent.cp.ID
		versions = versionsOf(parent.cp)
		values = maps.Clone(h.values[parent.cp.ID])
	}
	for _, ch := range slices.Sorted(maps.Keys(changes)) {
		h.version++
		versions[ch] = h.version
		values[ch] = []byte(changes[ch])
		changed[ch] = []byte(changes[ch])
	}
	for _, ch := range removed {
		delete(versions, ch)
		delete(values, ch)
	}
	cp.Channels = channelsOf(versions, changed)
	cp.Frontier = []byte("frontier of " + cp.ID)
	return cp, values
}

// cloneCheckpoint returns a deep copy of cp, to pass to Put (which owns
// what it is given) or to keep.
func cloneCheckpoint(cp *checkpoint.Checkpoint) *checkpoint.Checkpoint { return cp.Clone() }

// channelsOf lists the channels of versions, sorted by name, with the
// values given.
func channelsOf(versions map[string]int64, values map[string][]byte) []checkpoint.Channel {
	var out []checkpoint.Channel
	for _, name := range slices.Sorted(maps.Keys(versions)) {
		out = append(out, checkpoint.Channel{Name: name, Version: versions[name], Value: values[name]})
	}
	return out
}

// versionsOf maps cp's channels to their versions.
func versionsOf(cp *checkpoint.Checkpoint) map[string]int64 {
	out := map[string]int64{}
	for _, ch := range cp.Channels {
		out[ch.Name] = ch.Version
	}
	return out
}

// valuesOf maps cp's channels that carry a value to it.
func valuesOf(cp *checkpoint.Checkpoint) map[string][]byte {
	out := map[string][]byte{}
	for _, ch := range cp.Channels {
		if ch.Value != nil {
			out[ch.Name] = ch.Value
		}
	}
	return out
}

// want returns the tuple Get should return for n, without pending writes.
func (h *history) want(n *node) *checkpoint.Tuple {
	t := &checkpoint.Tuple{Checkpoint: *n.cp.Clone()}
	for i := range t.Channels {
		t.Channels[i].Value = slices.Clone(h.values[n.cp.ID][t.Channels[i].Name])
	}
	return t
}

// linear puts n checkpoints on one thread and namespace and returns their
// IDs, oldest first.
func (e *env) linear(thread, ns string, n int) []string {
	h := e.thread(thread, ns)
	var prev *node
	var ids []string
	for i := range n {
		prev = h.put(prev, meta("loop", i), map[string]string{"a": fmt.Sprint(i)})
		ids = append(ids, prev.cp.ID)
	}
	return ids
}

func (e *env) get(r checkpoint.Ref) *checkpoint.Tuple {
	e.t.Helper()
	return e.getOn(e.s, r)
}

// getOn is get from the saver s.
func (e *env) getOn(s checkpoint.Saver, r checkpoint.Ref) *checkpoint.Tuple {
	e.t.Helper()
	t, err := s.Get(e.ctx, r)
	require.NoError(e.t, err, "Get(%+v)", r)
	require.NotNil(e.t, t, "Get(%+v)", r)
	return t
}

func (e *env) putWrites(r checkpoint.Ref, ws ...checkpoint.Write) {
	e.t.Helper()
	require.NoError(e.t, e.s.PutWrites(e.ctx, r, ws), "PutWrites")
}

func (e *env) list(thread string, opts checkpoint.ListOptions) []*checkpoint.Tuple {
	e.t.Helper()
	out, err := collect(e.s.List(e.ctx, thread, opts))
	require.NoError(e.t, err, "List")
	return out
}

func (e *env) listIDs(thread string, opts checkpoint.ListOptions) []string {
	e.t.Helper()
	var ids []string
	for _, t := range e.list(thread, opts) {
		ids = append(ids, t.ID)
	}
	return ids
}

func collect(seq iter.Seq2[*checkpoint.Tuple, error]) ([]*checkpoint.Tuple, error) {
	var out []*checkpoint.Tuple
	for t, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, t)
	}
	return out, nil
}

var cmpOpts = cmp.Options{
	cmpopts.EquateEmpty(),
	cmp.Transformer("flatJSON", flatJSON),
}

func (e *env) requireTuple(want, got *checkpoint.Tuple) {
	e.t.Helper()
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		e.t.Fatalf("tuple mismatch (-want +got):\n%s", diff)
	}
}

func (e *env) requireTuples(want, got []*checkpoint.Tuple) {
	e.t.Helper()
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		e.t.Fatalf("tuples mismatch (-want +got):\n%s", diff)
	}
}

func (e *env) requireWrites(want, got []checkpoint.Write) {
	e.t.Helper()
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		e.t.Fatalf("pending writes mismatch (-want +got):\n%s", diff)
	}
}

func requireSameBytes(t *testing.T, want, got []byte, what string) {
	t.Helper()
	if !bytes.Equal(want, got) {
		i := 0
		for i < len(want) && i < len(got) && want[i] == got[i] {
			i++
		}
		t.Fatalf("%s: got %d bytes, want %d; first difference at byte %d", what, len(got), len(want), i)
	}
}

// flatJSON returns metadata as the flat JSON object savers store, decoded,
// so that metadata compares the way it round trips (numbers as float64,
// empty parents as absent).
func flatJSON(m checkpoint.Metadata) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return map[string]any{"error": err.Error()}
	}
	if p, ok := out["parents"].(map[string]any); ok && len(p) == 0 {
		delete(out, "parents")
	}
	return out
}

func stringValues(m map[string][]byte) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func meta(source string, step int) checkpoint.Metadata {
	return checkpoint.Metadata{Source: source, Step: step}
}

func ref(n *node) checkpoint.Ref {
	return checkpoint.Ref{ThreadID: n.cp.ThreadID, Namespace: n.cp.Namespace, ID: n.cp.ID}
}

func rev(ids []string) []string {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

// now returns the current time at the microsecond precision every saver
// keeps.
func now() time.Time {
	return time.Now().UTC().Truncate(time.Microsecond)
}
