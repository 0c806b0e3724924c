package state

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// appendOf returns an Append whose list is items, made by a merge (so its
// array has spare room and a used counter, as a run's output has).
func appendOf[T any](items ...T) Append[T] {
	var a Append[T]
	w := Items(items...)
	if err := a.Channel().MergeWrites([]Channel{w.Channel()}); err != nil {
		panic(err)
	}
	return a
}

// Two lists that differ past their first item are not equal to
// reflect.DeepEqual (and so to testify's Equal, which users compare states
// and node outputs with), as on main, where the list was a slice.
func TestTwoAppendsThatDifferPastTheirFirstItemAreNotDeepEqual(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b Append[string]
	}{
		{"second item", appendOf("x", "y"), appendOf("x", "z")},
		{"last of many", appendOf("a", "b", "c", "d"), appendOf("a", "b", "c", "e")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NotEqual(t, tc.a.Get(), tc.b.Get())
			require.NotEqual(t, tc.a, tc.b, "lists %v and %v", tc.a.Get(), tc.b.Get())
		})
	}
}

// Many merges from one base on as many goroutines (concurrent runs given
// the same input) each get the base and their own item: at most one grows
// the base's array in place, and the base reads its own items throughout.
func TestMergesOfOneBaseOnManyGoroutinesEachKeepTheirOwnItems(t *testing.T) {
	base := appendOf(0, 1, 2) // an array of 8: room for one in-place merge
	const n = 16
	outs := make([]Append[int], n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := base
			w := Items(100+i, 200+i)
			require.NoError(t, c.Channel().MergeWrites([]Channel{w.Channel()}))
			outs[i] = c
			require.Equal(t, []int{0, 1, 2}, base.Get())
		})
	}
	wg.Wait()
	inPlace := 0
	for i, o := range outs {
		require.Equal(t, []int{0, 1, 2, 100 + i, 200 + i}, o.Get())
		if unsafe.SliceData(o.v) == unsafe.SliceData(base.v) {
			inPlace++
		}
	}
	require.LessOrEqual(t, inPlace, 1)
	require.Equal(t, []int{0, 1, 2}, base.Get())
}

// A list without a used counter (decoded, or too large to pack one) copies
// on every merge: the merged list is right and the original is untouched.
func TestAnAppendWithoutAUseCounterCopiesOnMerge(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func() Append[int]
	}{
		{"decoded", func() Append[int] {
			var a Append[int]
			require.NoError(t, json.Unmarshal([]byte("[1,2,3]"), &a))
			return a
		}},
		{"counter dropped", func() Append[int] {
			a := appendOf(1, 2, 3)
			a.used = nil
			return a
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.make()
			require.Nil(t, a.used)
			kept := a
			w := Items(4)
			require.NoError(t, a.Channel().MergeWrites([]Channel{w.Channel()}))
			require.Equal(t, []int{1, 2, 3, 4}, a.Get())
			require.NotSame(t, unsafe.SliceData(kept.v), unsafe.SliceData(a.v), "copied")
			require.NotNil(t, a.used, "the copy has its own counter")
			other := kept
			w2 := Items(5)
			require.NoError(t, other.Channel().MergeWrites([]Channel{w2.Channel()}))
			require.Equal(t, []int{1, 2, 3, 5}, other.Get())
			require.Equal(t, []int{1, 2, 3, 4}, a.Get())
			require.Equal(t, []int{1, 2, 3}, kept.Get())
		})
	}
}

// An overwrite of a list of zero-size items (all of whose arrays start at
// one address) sets its length, whatever the merge finds in the counter.
func TestAnOverwriteOfZeroSizeItemsSetsTheLength(t *testing.T) {
	for _, tc := range []struct {
		have, over, more, want int
	}{
		{3, 3, 2, 5}, {3, 1, 0, 1}, {5, 7, 1, 8}, {2, 0, 0, 0}, {4, 4, 0, 4},
	} {
		t.Run(fmt.Sprint(tc), func(t *testing.T) {
			a := appendOf(make([]struct{}, tc.have)...)
			var w Append[struct{}]
			w.Overwrite(make([]struct{}, tc.over))
			w.Append(make([]struct{}, tc.more)...)
			require.NoError(t, a.Channel().MergeWrites([]Channel{w.Channel()}))
			require.Equal(t, tc.want, a.Len())
			require.Len(t, a.Get(), tc.want)
			// and it still grows from there
			w2 := Items(struct{}{})
			require.NoError(t, a.Channel().MergeWrites([]Channel{w2.Channel()}))
			require.Equal(t, tc.want+1, a.Len())
		})
	}
}

// JSON: no list and an empty list encode as [], a list as its items; a
// decoded [] is no list (Get is nil), a decoded list reads its items, and
// a pending write does not show in the encoding.
func TestAnAppendRoundTripsThroughJSON(t *testing.T) {
	type S struct {
		L Append[string] `json:"l"`
	}
	for _, tc := range []struct {
		name string
		in   S
		enc  string
		get  []string
	}{
		{"no list", S{}, `{"l":[]}`, nil},
		{"an empty write", S{L: Items[string]()}, `{"l":[]}`, nil},
		{"a pending write", S{L: Items("w")}, `{"l":[]}`, nil},
		{"a list", S{L: appendOf("a", "b")}, `{"l":["a","b"]}`, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.in)
			require.NoError(t, err)
			require.JSONEq(t, tc.enc, string(b))
			var out S
			require.NoError(t, json.Unmarshal(b, &out))
			if tc.get == nil {
				require.Nil(t, out.L.Get())
			} else {
				require.Equal(t, tc.get, out.L.Get())
			}
			require.Equal(t, len(tc.get), out.L.Len())
		})
	}
}
