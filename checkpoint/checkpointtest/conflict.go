package checkpointtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// racers is how many goroutines race to put checkpoints in the race cases.
const racers = 8

// conflictCases check that Put refuses the writes that would lose or
// overwrite another writer's data, on one instance of the saver and, with
// [WithSecondInstance], on two instances sharing one database as two
// processes would.
var conflictCases = []testCase{
	{
		name:        "put-version-conflict",
		explanation: "Put of a value under a channel version that is already stored with other bytes, fork or not, fails with an error matching checkpoint.ErrConflict and reaching (errors.As) a *checkpoint.VersionConflictError that names the thread, namespace, channel and version; nothing of the checkpoint is stored (its other new values included) and the stored value is unchanged. The same bytes under a stored version are accepted",
		run: func(e *env) {
			th := e.thread("t1", "child")
			n1 := th.put(nil, meta("input", -1), map[string]string{"messages": `["one"]`})
			v := n1.cp.Version("messages")
			var refused []*checkpoint.Checkpoint
			for _, fork := range []bool{false, true} {
				// "answer" sorts first: a saver that stored it before
				// finding the conflict must take it back.
				cp, _ := th.next(n1, meta("loop", 0), map[string]string{"answer": `"new"`, "messages": `["two"]`})
				setVersion(cp, "messages", v)
				cp.Fork = fork
				refused = append(refused, cloneCheckpoint(cp))
				vc := e.requireVersionConflict(e.s.Put(e.ctx, cp))
				require.Equal(e.t, checkpoint.VersionConflictError{ThreadID: "t1", Namespace: "child", Channel: "messages", Version: v}, *vc)
			}
			for _, cp := range refused {
				_, err := e.s.Get(e.ctx, checkpoint.Ref{ThreadID: "t1", Namespace: "child", ID: cp.ID})
				require.ErrorIs(e.t, err, checkpoint.ErrNotFound, "refused checkpoint")
			}
			e.requireTuple(th.want(n1), e.get(ref(n1)))
			require.Equal(e.t, []string{n1.cp.ID}, e.listIDs("t1", checkpoint.ListOptions{}))

			// The same bytes under the stored version are accepted, and
			// so is another value under the version of the refused
			// checkpoints' new channel, which was not stored.
			cp, values := th.next(n1, meta("loop", 0), map[string]string{"answer": `"other"`, "messages": `["one"]`})
			setVersion(cp, "messages", v)
			setVersion(cp, "answer", refused[0].Version("answer"))
			n2, err := th.try(e.s, cp, values)
			require.NoError(e.t, err)
			e.requireTuple(th.want(n2), e.get(ref(n2)))
			e.requireTuple(th.want(n1), e.get(ref(n1)))
		},
	},
	{
		name:        "put-parent-conflict",
		explanation: "Put of a checkpoint that is not a fork and whose parent is not the latest checkpoint of its thread and namespace (a stale parent, no parent, an unknown parent) fails with an error matching checkpoint.ErrConflict and reaching (errors.As) a *checkpoint.ConflictError that names the thread, namespace, checkpoint, parent and latest checkpoint, and stores nothing; putting the latest checkpoint again under its own ID is not refused (it is not its own latest); a fork (Checkpoint.Fork) of an older checkpoint is stored and becomes the latest; the first checkpoint of a thread or namespace must have no parent",
		run: func(e *env) {
			th := e.thread("t1", "")
			n1 := th.put(nil, meta("input", -1), map[string]string{"a": `1`})
			n2 := th.put(n1, meta("loop", 0), map[string]string{"a": `2`})
			again := cloneCheckpoint(n2.cp)
			again.Metadata = meta("update", 0)
			require.NoError(e.t, e.s.Put(e.ctx, again), "Put again under its own ID")
			n2.cp.Metadata = meta("update", 0)

			refuse := func(h *history, parentID, latestID string) {
				e.t.Helper()
				cp, _ := h.next(nil, meta("loop", 1), map[string]string{"a": `"refused"`})
				cp.ParentID = parentID
				id := cp.ID
				ce := e.requireConflict(e.s.Put(e.ctx, cp))
				require.Equal(e.t, checkpoint.ConflictError{ThreadID: h.id, Namespace: h.ns, CheckpointID: id, ParentID: parentID, LatestID: latestID}, *ce)
				_, err := e.s.Get(e.ctx, checkpoint.Ref{ThreadID: h.id, Namespace: h.ns, ID: id})
				require.ErrorIs(e.t, err, checkpoint.ErrNotFound, "refused checkpoint")
			}
			for _, parent := range []string{n1.cp.ID, "", checkpoint.NewID()} {
				refuse(th, parent, n2.cp.ID)
			}
			e.requireTuple(th.want(n2), e.get(checkpoint.Ref{ThreadID: "t1"}))

			f := th.fork(n1, meta("fork", 0), map[string]string{"a": `"fork"`})
			e.requireTuple(th.want(f), e.get(checkpoint.Ref{ThreadID: "t1"}))
			refuse(th, n2.cp.ID, f.cp.ID)
			th.put(f, meta("loop", 1), map[string]string{"a": `"after fork"`})

			for _, h := range []*history{e.thread("t2", ""), e.thread("t1", "child")} {
				refuse(h, n1.cp.ID, "")
				h.put(nil, meta("loop", 0), map[string]string{"a": `1`})
			}
		},
	},
	{
		name:        "put-race-same-parent",
		explanation: "of checkpoints with one parent put at the same time from several goroutines, exactly one is stored; the others fail with a *checkpoint.ConflictError naming it as the latest",
		run: func(e *env) {
			e.raceSameParent(e.s)
		},
	},
	{
		name:        "put-race-fork-same-version",
		explanation: "of forks of one checkpoint put at the same time from several goroutines with one channel version but different values, exactly one is stored and reads back its value; the others fail with a *checkpoint.VersionConflictError",
		run: func(e *env) {
			e.raceForkSameVersion(e.s)
		},
	},
	{
		name:         "instances-fork-same-version",
		twoInstances: true,
		explanation:  "two instances on one database that fork one checkpoint with different values under the same channel version (as an engine numbering versions by counting would): the second Put fails with a *checkpoint.VersionConflictError instead of reading back the first one's value, and each branch stored reads back what it wrote, from either instance",
		run: func(e *env) {
			a, b := e.s, e.s2
			th := e.thread("t1", "")
			root := th.putOn(a, nil, false, meta("input", -1), map[string]string{"messages": `["hi"]`})
			n0 := th.putOn(a, root, false, meta("loop", 0), map[string]string{"messages": `["hi","main"]`})
			cpA, valuesA := th.next(root, meta("fork", 0), map[string]string{"messages": `["hi","from A"]`})
			cpB, valuesB := th.next(root, meta("fork", 0), map[string]string{"messages": `["hi","from B"]`})
			v := cpA.Version("messages")
			setVersion(cpB, "messages", v)
			cpA.Fork, cpB.Fork = true, true
			idB := cpB.ID
			nA, err := th.try(a, cpA, valuesA)
			require.NoError(e.t, err)
			_, err = th.try(b, cpB, valuesB)
			vc := e.requireVersionConflict(err)
			require.Equal(e.t, checkpoint.VersionConflictError{ThreadID: "t1", Channel: "messages", Version: v}, *vc)
			for _, s := range []checkpoint.Saver{a, b} {
				_, err := s.Get(e.ctx, checkpoint.Ref{ThreadID: "t1", ID: idB})
				require.ErrorIs(e.t, err, checkpoint.ErrNotFound, "refused fork")
			}

			// B forks again under a version of its own.
			nB := th.putOn(b, root, true, meta("fork", 0), map[string]string{"messages": `["hi","from B"]`})
			for _, s := range []checkpoint.Saver{a, b} {
				for _, n := range []*node{root, n0, nA, nB} {
					e.requireTuple(th.want(n), e.getOn(s, ref(n)))
				}
			}
		},
	},
	{
		name:         "instances-old-process-forks",
		twoInstances: true,
		explanation:  "an instance that read a thread's first checkpoint before another instance moved the thread on cannot continue from it as a plain child (*checkpoint.ConflictError), nor fork it under a version the other instance stored with other bytes (*checkpoint.VersionConflictError); its fork under a version of its own reads back its own values, from either instance, and the other instance's checkpoints keep theirs",
		run: func(e *env) {
			old, young := e.s, e.s2
			th := e.thread("t1", "")
			root := th.putOn(young, nil, false, meta("input", -1), map[string]string{"messages": `["hi"]`})
			seen := e.getOn(old, checkpoint.Ref{ThreadID: "t1"})
			require.Equal(e.t, root.cp.ID, seen.ID)
			from := &node{cp: &seen.Checkpoint}

			nodes := []*node{root}
			n := root
			for i := range 3 {
				n = th.putOn(young, n, false, meta("loop", i), map[string]string{"messages": fmt.Sprintf(`["hi","young %d"]`, i)})
				nodes = append(nodes, n)
			}

			cp, values := th.next(from, meta("loop", 0), map[string]string{"messages": `["hi","old"]`})
			_, err := th.try(old, cp, values)
			ce := e.requireConflict(err)
			require.Equal(e.t, n.cp.ID, ce.LatestID)

			cp, values = th.next(from, meta("fork", 0), map[string]string{"messages": `["hi","old"]`})
			setVersion(cp, "messages", nodes[1].cp.Version("messages"))
			cp.Fork = true
			_, err = th.try(old, cp, values)
			e.requireVersionConflict(err)

			fork := th.putOn(old, from, true, meta("fork", 0), map[string]string{"messages": `["hi","old"]`})
			nodes = append(nodes, fork)
			for _, s := range []checkpoint.Saver{old, young} {
				e.requireTuple(th.want(fork), e.getOn(s, checkpoint.Ref{ThreadID: "t1"}))
				for _, n := range nodes {
					e.requireTuple(th.want(n), e.getOn(s, ref(n)))
				}
			}
		},
	},
	{
		name:         "instances-alternate-writers",
		twoInstances: true,
		explanation:  "two instances on one database that take turns writing one thread, each continuing from the latest checkpoint as it reads it, store every checkpoint, and both read every one back; a checkpoint from the instance that did not write the latest one, whose parent is the checkpoint before, is refused with a *checkpoint.ConflictError",
		run: func(e *env) {
			savers := []checkpoint.Saver{e.s, e.s2}
			th := e.thread("t1", "")
			var nodes []*node
			var n *node
			var msgs []string
			for i := range 6 {
				s := savers[i%2]
				if n != nil {
					require.Equal(e.t, n.cp.ID, e.getOn(s, checkpoint.Ref{ThreadID: "t1"}).ID, "step %d", i)
				}
				msgs = append(msgs, fmt.Sprintf("turn %d", i))
				list, err := json.Marshal(msgs)
				require.NoError(e.t, err)
				n = th.putOn(s, n, false, meta("loop", i), map[string]string{"messages": string(list), "writer": fmt.Sprint(i % 2)})
				nodes = append(nodes, n)
			}
			for _, s := range savers {
				for _, n := range nodes {
					e.requireTuple(th.want(n), e.getOn(s, ref(n)))
				}
			}
			latest := nodes[len(nodes)-1]
			cp, values := th.next(nodes[len(nodes)-2], meta("loop", len(nodes)-1), map[string]string{"writer": `"stale"`})
			_, err := th.try(savers[len(nodes)%2], cp, values)
			require.Equal(e.t, latest.cp.ID, e.requireConflict(err).LatestID)
			for _, s := range savers {
				e.requireTuple(th.want(latest), e.getOn(s, checkpoint.Ref{ThreadID: "t1"}))
			}
		},
	},
	{
		name:         "instances-race-same-parent",
		twoInstances: true,
		explanation:  "of checkpoints with one parent put at the same time through two instances on one database, exactly one is stored; the others fail with a *checkpoint.ConflictError naming it as the latest",
		run: func(e *env) {
			e.raceSameParent(e.s, e.s2)
		},
	},
	{
		name:         "instances-race-fork-same-version",
		twoInstances: true,
		explanation:  "of forks of one checkpoint put at the same time through two instances on one database with one channel version but different values, exactly one is stored and reads back its value from either instance; the others fail with a *checkpoint.VersionConflictError",
		run: func(e *env) {
			e.raceForkSameVersion(e.s, e.s2)
		},
	},
}

// raceSameParent races children of one checkpoint, each with a channel
// value of its own, through savers, and checks that one wins.
func (e *env) raceSameParent(savers ...checkpoint.Saver) {
	e.t.Helper()
	th := e.thread("t1", "")
	root := th.putOn(savers[0], nil, false, meta("input", -1), map[string]string{"a": `"root"`})
	var cps []*checkpoint.Checkpoint
	var values []map[string][]byte
	for i := range racers {
		cp, v := th.next(root, meta("loop", 0), map[string]string{"a": fmt.Sprintf(`"racer %d"`, i)})
		cps, values = append(cps, cp), append(values, v)
	}
	winner, errs := e.race(savers, cps)
	for i, err := range errs {
		if i != winner {
			ce := e.requireConflict(err)
			require.Equal(e.t, cps[winner].ID, ce.LatestID, "racer %d", i)
			require.Equal(e.t, root.cp.ID, ce.ParentID, "racer %d", i)
		}
	}
	n := th.record(cps[winner], values[winner])
	for _, s := range savers {
		e.requireTuple(th.want(n), e.getOn(s, checkpoint.Ref{ThreadID: "t1"}))
		require.Len(e.t, collectOn(e, s, "t1"), 2)
	}
}

// raceForkSameVersion races forks of one checkpoint that store different
// values under one channel version through savers, and checks that one
// wins.
func (e *env) raceForkSameVersion(savers ...checkpoint.Saver) {
	e.t.Helper()
	th := e.thread("t1", "")
	root := th.putOn(savers[0], nil, false, meta("input", -1), map[string]string{"messages": `["root"]`})
	th.putOn(savers[0], root, false, meta("loop", 0), map[string]string{"messages": `["root","main"]`})
	var cps []*checkpoint.Checkpoint
	var values []map[string][]byte
	for i := range racers {
		cp, v := th.next(root, meta("fork", 0), map[string]string{"messages": fmt.Sprintf(`["root","racer %d"]`, i)})
		if i > 0 {
			setVersion(cp, "messages", cps[0].Version("messages"))
		}
		cp.Fork = true
		cps, values = append(cps, cp), append(values, v)
	}
	winner, errs := e.race(savers, cps)
	for i, err := range errs {
		if i != winner {
			vc := e.requireVersionConflict(err)
			require.Equal(e.t, "messages", vc.Channel, "racer %d", i)
		}
	}
	n := th.record(cps[winner], values[winner])
	for _, s := range savers {
		e.requireTuple(th.want(n), e.getOn(s, ref(n)))
		require.Len(e.t, collectOn(e, s, "t1"), 3)
	}
}

// race puts cps at the same time, cps[i] through savers[i%len(savers)],
// requires that exactly one Put succeeds and returns its index and the
// errors of all. It leaves cps unchanged (Put is given clones).
func (e *env) race(savers []checkpoint.Saver, cps []*checkpoint.Checkpoint) (winner int, errs []error) {
	e.t.Helper()
	errs = make([]error, len(cps))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, cp := range cps {
		cp := cloneCheckpoint(cp)
		wg.Go(func() {
			<-start
			errs[i] = savers[i%len(savers)].Put(e.ctx, cp)
		})
	}
	close(start)
	wg.Wait()
	winner = -1
	for i, err := range errs {
		if err == nil {
			require.Equal(e.t, -1, winner, "racers %d and %d both stored their checkpoint", winner, i)
			winner = i
		}
	}
	require.NotEqual(e.t, -1, winner, "no racer stored its checkpoint: %v", errs)
	return winner, errs
}

// requireConflict requires err to match checkpoint.ErrConflict and reach a
// *checkpoint.ConflictError, and returns it.
func (e *env) requireConflict(err error) *checkpoint.ConflictError {
	e.t.Helper()
	require.ErrorIs(e.t, err, checkpoint.ErrConflict)
	ce, ok := errors.AsType[*checkpoint.ConflictError](err)
	require.True(e.t, ok, "error %v does not reach a *checkpoint.ConflictError", err)
	return ce
}

// requireVersionConflict requires err to match checkpoint.ErrConflict and
// reach a *checkpoint.VersionConflictError, and returns it.
func (e *env) requireVersionConflict(err error) *checkpoint.VersionConflictError {
	e.t.Helper()
	require.ErrorIs(e.t, err, checkpoint.ErrConflict)
	vc, ok := errors.AsType[*checkpoint.VersionConflictError](err)
	require.True(e.t, ok, "error %v does not reach a *checkpoint.VersionConflictError", err)
	return vc
}

// try puts cp, built by next with values, through s and returns its node,
// or the error of Put.
func (h *history) try(s checkpoint.Saver, cp *checkpoint.Checkpoint, values map[string][]byte) (*node, error) {
	kept := cloneCheckpoint(cp) // Put owns cp
	if err := s.Put(h.e.ctx, cp); err != nil {
		return nil, err
	}
	return h.record(kept, values), nil
}

// record remembers the values of cp, built by next with values and stored
// (cp itself must not have been given to Put), and returns its node.
func (h *history) record(cp *checkpoint.Checkpoint, values map[string][]byte) *node {
	stored := cloneCheckpoint(cp)
	stored.Fork = false // not stored: Get returns false
	h.values[stored.ID] = values
	return &node{cp: stored}
}

// setVersion sets the version of cp's channel name.
func setVersion(cp *checkpoint.Checkpoint, name string, v int64) {
	for i := range cp.Channels {
		if cp.Channels[i].Name == name {
			cp.Channels[i].Version = v
		}
	}
}

// collectOn lists a thread's checkpoints from s.
func collectOn(e *env, s checkpoint.Saver, thread string) []*checkpoint.Tuple {
	e.t.Helper()
	out, err := collect(s.List(e.ctx, thread, checkpoint.ListOptions{}))
	require.NoError(e.t, err, "List")
	return out
}
