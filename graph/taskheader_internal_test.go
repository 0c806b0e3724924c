package graph

import (
	"context"
	"math"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// Every task gets a header (see loop.newEnv); it stays three words.
func TestATaskContextIsThreeWords(t *testing.T) {
	require.Equal(t, uintptr(24), unsafe.Sizeof(taskCtx{}))
}

// namesOf returns a run's table of names (see runShared.names): Start's,
// then names, then filler up to n entries.
func namesOf(n int, names ...string) []*string {
	tab := []*string{&startName}
	for i := range n - 1 {
		s := "filler"
		if i < len(names) {
			s = names[i]
		}
		tab = append(tab, &s)
	}
	return tab
}

// A header gives back the step, position, flags and name it was given,
// packed or, outside the packed range (or for a name not in its run's
// table), kept beside it, and names the same task as a header that copied
// its identity.
func TestATaskHeaderKeepsItsStepAndPosition(t *testing.T) {
	names := namesOf(posMaxName+2, "node")
	last := *names[posMaxName]
	for _, tc := range []struct {
		name      string
		step, idx int
		push      bool
		node      string
		ni        int
		packed    bool
	}{
		{"input", -1, 0, false, Start, 0, true},
		{"pulled", 0, 0, false, "node", 1, true},
		{"send", 7, 12, true, "node", 1, true},
		{"largest packed step", 1<<posStepBits - 2, 0, false, "node", 1, true},
		{"step past the packed range", 1<<posStepBits - 1, 3, true, "node", 1, false},
		{"huge step", math.MaxInt64 - 1, 1, true, "node", 1, false},
		{"step below the input's", -2, 0, false, "node", 1, false},
		{"largest packed position", 5, posMaxIdx, true, "node", 1, true},
		{"position past the packed range", 5, posMaxIdx + 1, true, "node", 1, false},
		{"largest packed name", 5, 3, true, last, posMaxName, true},
		{"name past the packed range", 5, 3, true, "beyond", posMaxName + 1, false},
		{"name not in the table", 5, 3, false, "elsewhere", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &taskEnv{run: &runShared{ns: "ns", names: names}, cp: "cp"}
			var h taskHeader
			h.env = env
			h.setPos(tc.step, tc.idx, tc.push, tc.node, tc.ni)
			require.Equal(t, !tc.packed, h.pos&posBig != 0)
			require.Equal(t, tc.step, h.step())
			require.Equal(t, tc.idx, h.idx())
			require.Equal(t, tc.push, h.push())
			require.Equal(t, tc.node, h.nodeName())
			require.False(t, h.resuming())
			h.setResuming()
			require.True(t, h.resuming())
			require.Equal(t, tc.step, h.step())
			require.Equal(t, tc.idx, h.idx())
			require.Equal(t, tc.node, h.nodeName())

			var c taskHeader
			c.env = env
			c.copyIdentity(&h)
			require.Equal(t, h.ID(), c.ID())
			require.Equal(t, tc.step, c.step())
			require.Equal(t, tc.idx, c.idx())
			require.Equal(t, tc.node, c.nodeName())
			require.True(t, c.resuming())
		})
	}
}

// A header without an env (a command's task) keeps its name beside its
// position, and one never given a position has no name.
func TestATaskHeaderWithoutAnEnvKeepsItsName(t *testing.T) {
	var h taskHeader
	require.Equal(t, "", h.nodeName())
	h.setPos(2, 0, false, "node", 1)
	require.Equal(t, "node", h.nodeName())
	require.Equal(t, 2, h.step())
}

// The name of a task is its node's in the compiled graph's table: every
// node's index there names it, and Start's is the first.
func TestAGraphsHeaderNamesAreItsNodes(t *testing.T) {
	b := New[struct{}]()
	for _, n := range []string{"b", "a", "c"} {
		b.AddNode(n, func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil })
	}
	b.AddEdge(Start, "a")
	b.AddEdge("a", "b")
	b.AddEdge("b", "c")
	b.AddEdge("c", End)
	g, err := b.Compile()
	require.NoError(t, err)
	require.Len(t, g.hdrNames, 4)
	require.Equal(t, 0, g.nameIndex(Start, nil))
	require.Equal(t, -1, g.nameIndex("zz", nil))
	for name, n := range g.nodes {
		require.Same(t, &n.name, g.hdrNames[g.nameIndex(name, n)])
	}
}

// Headers of different positions, steps or kinds have different IDs.
func TestTaskIDsDifferByStepPositionAndKind(t *testing.T) {
	env := &taskEnv{run: &runShared{ns: "ns", names: namesOf(2, "node")}, cp: "cp"}
	id := func(step, idx int, push bool) string {
		h := taskHeader{env: env}
		h.setPos(step, idx, push, "node", 1)
		return h.ID()
	}
	ids := map[string]bool{}
	for _, s := range []int{0, 1, 1 << posStepBits} {
		for _, i := range []int{0, 1, posMaxIdx + 1} {
			for _, p := range []bool{false, true} {
				ids[id(s, i, p)] = true
			}
		}
	}
	require.Len(t, ids, 3*3*2)
}

// A task detached before it needed an ID or a scratchpad shares the
// stand-in; asking its ID afterwards gives it a more of its own and leaves
// the stand-in as it was, and it still refuses a scratchpad of its own.
func TestADetachedTaskComputesItsIDWithoutWritingTheSharedStandIn(t *testing.T) {
	env := &taskEnv{run: &runShared{names: namesOf(2, "node")}, cp: "cp"}
	var hs [8]taskHeader
	for i := range hs {
		hs[i] = taskHeader{env: env}
		hs[i].setPos(3, i, true, "node", 1)
		hs[i].detach()
		require.Same(t, detachedMore, hs[i].more.Load())
	}
	var wg sync.WaitGroup
	ids := make([]string, len(hs))
	for i := range hs {
		wg.Go(func() { ids[i] = hs[i].ID() })
		wg.Go(func() { require.Same(t, detachedPad, hs[i].scratch()) })
	}
	wg.Wait()
	require.Nil(t, detachedMore.id.Load())
	require.Same(t, detachedPad, detachedMore.sp.Load())
	for i := range hs {
		require.NotSame(t, detachedMore, hs[i].more.Load())
		require.Equal(t, ids[i], hs[i].ID())
		require.Same(t, detachedPad, hs[i].scratch())
		for j := range i {
			require.NotEqual(t, ids[j], ids[i])
		}
	}
}

// A Send is its node's name, its Arg and one interface (a branch may make
// thousands of them): no flag beside the interface.
func TestASendIsItsNameItsArgAndOneInterface(t *testing.T) {
	type st struct{ n int }
	require.Equal(t, unsafe.Sizeof("")+unsafe.Sizeof(st{})+unsafe.Sizeof(any(nil)), unsafe.Sizeof(Send[st]{}))
}

// Task contexts come in slabs that fill their size class: a context costs
// its 24 bytes and an 85th of a slab's allocation header, not the 27 bytes
// a slab one context larger (a size class up) would cost.
func TestATaskContextCostsItsOwnBytesInItsSlab(t *testing.T) {
	const contexts = 100 * envSlab
	// The least of five measurements: the count is process-wide, and a
	// goroutine another test left running may allocate during one.
	per := math.Inf(1)
	for range 5 {
		l := &loop[struct{}]{}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range contexts {
			l.newEnv()
		}
		runtime.ReadMemStats(&after)
		per = min(per, float64(after.TotalAlloc-before.TotalAlloc)/contexts)
	}
	require.LessOrEqual(t, per, 25.0, "bytes allocated per task context")
}
