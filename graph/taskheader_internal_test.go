package graph

import (
	"math"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// Every task gets a header (see loop.newEnv); it stays four words.
func TestATaskContextIsFourWords(t *testing.T) {
	require.Equal(t, uintptr(32), unsafe.Sizeof(taskCtx{}))
}

// A header gives back the step, position and flags it was given, packed or,
// outside the packed range, kept beside it, and names the same task as a
// header that copied its identity.
func TestATaskHeaderKeepsItsStepAndPosition(t *testing.T) {
	for _, tc := range []struct {
		name      string
		step, idx int
		push      bool
	}{
		{"input", -1, 0, false},
		{"pulled", 0, 0, false},
		{"send", 7, 12, true},
		{"largest packed step", 1<<posStepBits - 2, 0, false},
		{"step past the packed range", 1<<posStepBits - 1, 3, true},
		{"huge step", math.MaxInt64 - 1, 1, true},
		{"step below the input's", -2, 0, false},
		{"largest packed position", 5, posMaxIdx, true},
		{"position past the packed range", 5, posMaxIdx + 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &taskEnv{run: &runShared{ns: "ns"}, cp: "cp"}
			name := "node"
			var h taskHeader
			h.env, h.name = env, &name
			h.setPos(tc.step, tc.idx, tc.push)
			require.Equal(t, tc.step, h.step())
			require.Equal(t, tc.idx, h.idx())
			require.Equal(t, tc.push, h.push())
			require.False(t, h.resuming())
			h.setResuming()
			require.True(t, h.resuming())
			require.Equal(t, tc.step, h.step())
			require.Equal(t, tc.idx, h.idx())

			var c taskHeader
			c.env = env
			c.copyIdentity(&h)
			require.Equal(t, h.ID(), c.ID())
			require.Equal(t, tc.step, c.step())
			require.Equal(t, tc.idx, c.idx())
			require.True(t, c.resuming())
		})
	}
}

// Headers of different positions, steps or kinds have different IDs.
func TestTaskIDsDifferByStepPositionAndKind(t *testing.T) {
	env := &taskEnv{run: &runShared{ns: "ns"}, cp: "cp"}
	name := "node"
	id := func(step, idx int, push bool) string {
		h := taskHeader{env: env, name: &name}
		h.setPos(step, idx, push)
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
	env := &taskEnv{run: &runShared{}, cp: "cp"}
	name := "node"
	var hs [8]taskHeader
	for i := range hs {
		hs[i] = taskHeader{env: env, name: &name}
		hs[i].setPos(3, i, true)
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
// its 32 bytes and a 64th of a slab's allocation header, not the 36 bytes
// a slab one context larger (a size class up) cost.
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
	require.LessOrEqual(t, per, 33.0, "bytes allocated per task context")
}
