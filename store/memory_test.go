package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemory() })
}

func TestMemorySemanticConformance(t *testing.T) {
	storetest.RunSemantic(t, func(t *testing.T, index *store.IndexConfig) store.Store {
		if index == nil {
			return store.NewMemory()
		}
		return store.NewMemory(store.WithIndex(*index))
	})
}

func TestMemorySemanticConformanceRealTime(t *testing.T) {
	storetest.RunSemantic(t, func(t *testing.T, index *store.IndexConfig) store.Store {
		if index == nil {
			return realTime{store.NewMemory()}
		}
		return realTime{store.NewMemory(store.WithIndex(*index))}
	})
}

// realTime hides Memory's SetClock, so that the suite runs its subtests
// that do not need a clock on real time, and skips the others.
type realTime struct{ store.Store }

func TestMemoryConformanceRealTime(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return realTime{store.NewMemory()} })
}

func TestMemoryWithClock(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	m := store.NewMemory(store.WithClock(func() time.Time { return now }))
	ctx := t.Context()
	require.NoError(t, m.Put(ctx, []string{"a"}, "k", nil, store.WithTTL(time.Hour)))
	got, err := m.Get(ctx, []string{"a"}, "k")
	require.NoError(t, err)
	require.Equal(t, now, got.CreatedAt)
	require.Equal(t, now.Add(time.Hour), got.ExpiresAt)
	require.Equal(t, map[string]any{}, got.Value)

	now = now.Add(time.Hour)
	got, err = m.Get(ctx, []string{"a"}, "k")
	require.NoError(t, err)
	require.Nil(t, got)

	m.SetClock(nil) // back to time.Now: the item expired in 2030
	got, err = m.Get(ctx, []string{"a"}, "k")
	require.NoError(t, err)
	require.NotNil(t, got)
}

// TestMemoryZeroValueIsEmptyStore calls each method first on a zero
// Memory: none panics, and each answers as an empty store does.
func TestMemoryZeroValueIsEmptyStore(t *testing.T) {
	tests := []struct {
		name string
		call func(t *testing.T, m *store.Memory)
	}{
		{"Get finds nothing", func(t *testing.T, m *store.Memory) {
			got, err := m.Get(t.Context(), []string{"a"}, "k")
			require.NoError(t, err)
			require.Nil(t, got)
		}},
		{"Put stores the item", func(t *testing.T, m *store.Memory) {
			require.NoError(t, m.Put(t.Context(), []string{"a"}, "k", map[string]any{"v": 1.0}))
			got, err := m.Get(t.Context(), []string{"a"}, "k")
			require.NoError(t, err)
			require.Equal(t, map[string]any{"v": 1.0}, got.Value)
		}},
		{"Delete succeeds", func(t *testing.T, m *store.Memory) {
			require.NoError(t, m.Delete(t.Context(), []string{"a"}, "k"))
		}},
		{"Search finds nothing", func(t *testing.T, m *store.Memory) {
			got, err := m.Search(t.Context(), nil)
			require.NoError(t, err)
			require.Empty(t, got)
		}},
		{"ListNamespaces finds nothing", func(t *testing.T, m *store.Memory) {
			got, err := m.ListNamespaces(t.Context())
			require.NoError(t, err)
			require.Empty(t, got)
		}},
		{"Sweep removes nothing", func(t *testing.T, m *store.Memory) {
			n, err := m.Sweep(t.Context())
			require.NoError(t, err)
			require.Zero(t, n)
		}},
		{"SetClock sets the clock", func(t *testing.T, m *store.Memory) {
			now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			m.SetClock(func() time.Time { return now })
			require.NoError(t, m.Put(t.Context(), []string{"a"}, "k", nil))
			got, err := m.Get(t.Context(), []string{"a"}, "k")
			require.NoError(t, err)
			require.Equal(t, now, got.CreatedAt)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.call(t, new(store.Memory))
		})
	}
}

type countingSweeper struct {
	calls atomic.Int32
	done  chan struct{}
}

func (s *countingSweeper) Sweep(ctx context.Context) (int, error) {
	if s.calls.Add(1) == 3 {
		close(s.done)
	}
	return 1, nil
}

func TestSweepEvery(t *testing.T) {
	s := &countingSweeper{done: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	var reported, failed atomic.Int32
	errc := make(chan error, 1)
	go func() {
		errc <- store.SweepEvery(ctx, s, time.Millisecond, func(n int, err error) {
			if err != nil {
				failed.Add(1)
			}
			reported.Add(int32(n))
		})
	}()
	<-s.done
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.GreaterOrEqual(t, reported.Load(), int32(2), "the sweeps before the third were reported")
	require.Zero(t, failed.Load())
}

func TestSweepEveryRejectsNonPositiveInterval(t *testing.T) {
	err := store.SweepEvery(t.Context(), store.NewMemory(), 0, nil)
	require.ErrorIs(t, err, store.ErrInvalidOption)
}

func TestMemoryKeepsJSONText(t *testing.T) {
	m := store.NewMemory()
	text := `{"b":1,"a":{"d":2,"c":3}}`
	require.NoError(t, m.Put(t.Context(), []string{"n"}, "k", map[string]any{"a": map[string]any{"c": 3, "d": 2}, "b": 1}, store.WithJSON([]byte(text))))
	got, err := m.Get(t.Context(), []string{"n"}, "k")
	require.NoError(t, err)
	require.Equal(t, text, string(got.JSON))
}

// BenchmarkMemoryPutLargeValue measures what WithJSON adds to a Put of a
// large value (a 1 MiB string and 5,000 keys): normalizing the text,
// decoding it and comparing it with the value.
func BenchmarkMemoryPutLargeValue(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"s":"` + strings.Repeat("0123456789abcdef", 1<<16) + `"`)
	for i := 4999; i >= 0; i-- {
		fmt.Fprintf(&sb, `,"k%04d":%d`, i, i)
	}
	sb.WriteString("}")
	text := []byte(sb.String())
	value, err := store.UnmarshalValue(text)
	require.NoError(b, err)
	for _, bc := range []struct {
		name string
		opts []store.PutOption
	}{
		{"map", nil},
		{"map+json", []store.PutOption{store.WithJSON(text)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := store.NewMemory()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if err := m.Put(b.Context(), []string{"n"}, "k", value, bc.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
