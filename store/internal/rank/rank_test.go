package rank

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTopKeepsTheBestPage adds shuffled entries to Tops of every page
// size and compares each page with the same page of all entries sorted.
func TestTopKeepsTheBestPage(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var all []Entry[int]
	for i := range 40 {
		all = append(all, Entry[int]{
			Score:     float64(i % 5),                           // many ties
			Updated:   t0.Add(time.Duration(i%3) * time.Second), // ties broken by time,
			Namespace: []string{"a", "b"}[i%2],                  // then namespace,
			Key:       string(rune('a' + i)),                    // then key
			Item:      i,
		})
	}
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b Entry[int]) int {
		if Better(&a, &b) {
			return -1
		}
		return 1
	})
	rng := rand.New(rand.NewPCG(1, 2))
	for _, page := range []struct{ offset, limit int }{{0, 0}, {0, 1}, {0, 10}, {5, 10}, {35, 10}, {40, 1}, {0, 100}, {3, math.MaxInt}} {
		shuffled := slices.Clone(all)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		top := NewTop[int](page.offset, page.limit)
		for _, e := range shuffled {
			top.Add(e)
		}
		want := sorted[min(page.offset, len(sorted)):]
		want = want[:min(page.limit, len(want))]
		got := top.Page(page.offset)
		require.Equal(t, len(want), len(got), "page %+v", page)
		for i := range want {
			require.Equal(t, want[i].Item, got[i].Item, "page %+v, position %d", page, i)
		}
	}
}

func TestBetterOrder(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	base := Entry[int]{Score: 0.5, Updated: t0, Namespace: "n", Key: "k"}
	for name, worse := range map[string]Entry[int]{
		"lower score":     {Score: 0.4, Updated: t0.Add(time.Hour), Namespace: "a", Key: "a"},
		"older":           {Score: 0.5, Updated: t0.Add(-time.Nanosecond), Namespace: "a", Key: "a"},
		"later namespace": {Score: 0.5, Updated: t0, Namespace: "n.a", Key: "a"},
		"later key":       {Score: 0.5, Updated: t0, Namespace: "n", Key: "l"},
	} {
		require.True(t, Better(&base, &worse), name)
		require.False(t, Better(&worse, &base), name)
	}
	require.False(t, Better(&base, &base), "not better than itself")
}
