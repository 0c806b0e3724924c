package state

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// A Value's two flags share one word after its two values: a state is
// copied into every task and a Send carries one.
func TestAValueIsItsTwoValuesAndOneWordOfFlags(t *testing.T) {
	require.Equal(t, uintptr(24), unsafe.Sizeof(Value[int]{}))
	require.Equal(t, uintptr(40), unsafe.Sizeof(Value[string]{}))
}

// An Append is its list (a slice, so that reflect.DeepEqual compares its
// items), its pending write and its used counter: a state is copied into
// every task and a Send carries one.
func TestAnAppendIsEightWords(t *testing.T) {
	require.Equal(t, uintptr(64), unsafe.Sizeof(Append[int]{}))
}

// A list that gets an item a step grows in place within its array, and a
// value kept at every length reads its own items for ever.
func TestAnAppendGrowsInPlaceAndKeptValuesStay(t *testing.T) {
	var cur Append[int]
	var kept []Append[int]
	arrays := map[*int]bool{}
	for i := range 40 {
		w := Items(i)
		require.NoError(t, cur.Channel().MergeWrites([]Channel{w.Channel()}))
		require.Equal(t, i+1, cur.Len())
		arrays[unsafe.SliceData(cur.v)] = true
		require.Equal(t, int64(i+1), cur.used.Load())
		require.GreaterOrEqual(t, cap(cur.v), i+1)
		kept = append(kept, cur)
	}
	require.Len(t, arrays, 4, "arrays of 8, 16, 32 and 64") // not one per item
	for n, k := range kept {
		got := k.Get()
		require.Len(t, got, n+1)
		require.Equal(t, n+1, cap(got))
		for i, x := range got {
			require.Equal(t, i, x)
		}
	}
	// A fork from a kept value copies instead of writing past its end.
	fork := kept[9]
	w := Items(-1)
	require.NoError(t, fork.Channel().MergeWrites([]Channel{w.Channel()}))
	require.NotSame(t, unsafe.SliceData(kept[10].v), unsafe.SliceData(fork.v))
	require.Equal(t, 10, kept[10].Get()[10])
	require.Equal(t, -1, fork.Get()[10])
}

// The empty list encodes as [] and decodes to no list.
func TestAnEmptyAppendEncodesAsAnEmptyList(t *testing.T) {
	var f Append[int]
	b, err := f.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, "[]", string(b))
	require.NoError(t, f.UnmarshalJSON([]byte("[1,2]")))
	require.Equal(t, []int{1, 2}, f.Get())
	require.NoError(t, f.UnmarshalJSON([]byte("[]")))
	require.Nil(t, f.Get())
}

// A list of zero-size items and one of large items merge and grow as any
// other: the two-word list keeps their length and, for large items, their
// values.
func TestAnAppendOfZeroSizeOrLargeItemsMerges(t *testing.T) {
	var z Append[struct{}]
	for i := range 20 {
		w := Items(struct{}{}, struct{}{})
		require.NoError(t, z.Channel().MergeWrites([]Channel{w.Channel()}))
		require.Equal(t, 2*(i+1), z.Len())
		require.Len(t, z.Get(), 2*(i+1))
	}
	type big [64]int
	var b Append[big]
	for i := range 20 {
		w := Items(big{i})
		require.NoError(t, b.Channel().MergeWrites([]Channel{w.Channel()}))
	}
	for i, x := range b.Get() {
		require.Equal(t, i, x[0])
	}
}
