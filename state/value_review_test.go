package state_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/state"
)

type point struct {
	X, Y int
	Tag  string `json:",omitempty"`
}

// roundTrip merges a write of v into a Value, checks what the Value holds,
// and that its JSON (a checkpoint's) decodes to a Value holding the same.
func roundTrip[T any](t *testing.T, v T) {
	t.Helper()
	var f state.Value[T]
	require.False(t, f.HasValue())
	require.False(t, f.Channel().Written())
	w := state.Set(v)
	require.True(t, w.Channel().Written())
	require.False(t, w.HasValue(), "a write is not the value yet")
	require.NoError(t, f.Channel().MergeWrites([]state.Channel{w.Channel()}))
	require.True(t, f.HasValue())
	require.Equal(t, v, f.Get())

	b, err := json.Marshal(f)
	require.NoError(t, err)
	want, err := json.Marshal(v)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(b))
	var back state.Value[T]
	require.NoError(t, json.Unmarshal(b, &back))
	require.True(t, back.HasValue())
	require.Equal(t, v, back.Get())
	require.False(t, back.Channel().Written(), "a decoded value is no write")

	wb, err := w.Channel().MarshalWrite()
	require.NoError(t, err)
	var wback state.Value[T]
	require.NoError(t, wback.Channel().UnmarshalWrite(wb))
	require.True(t, wback.Channel().Written())
	var g state.Value[T]
	require.NoError(t, g.Channel().MergeWrites([]state.Channel{wback.Channel()}))
	require.Equal(t, v, g.Get())
}

// A Value of any type keeps its value and its write apart, and its value
// and write survive their JSON, zero values included.
func TestAValueOfAnyTypeRoundTrips(t *testing.T) {
	s := "s"
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"int", func(t *testing.T) { roundTrip(t, 42) }},
		{"zero int", func(t *testing.T) { roundTrip(t, 0) }},
		{"bool", func(t *testing.T) { roundTrip(t, true) }},
		{"zero bool", func(t *testing.T) { roundTrip(t, false) }},
		{"string", func(t *testing.T) { roundTrip(t, "héllo \"x\"") }},
		{"empty string", func(t *testing.T) { roundTrip(t, "") }},
		{"struct", func(t *testing.T) { roundTrip(t, point{X: 1, Y: -2, Tag: "t"}) }},
		{"zero struct", func(t *testing.T) { roundTrip(t, point{}) }},
		{"pointer", func(t *testing.T) { roundTrip(t, &s) }},
		{"slice", func(t *testing.T) { roundTrip(t, []point{{X: 1}, {Y: 2}}) }},
		{"map", func(t *testing.T) { roundTrip(t, map[string]int{"a": 1}) }},
		{"byte", func(t *testing.T) { roundTrip(t, byte(7)) }},
		{"float", func(t *testing.T) { roundTrip(t, 1.5) }},
	} {
		t.Run(tc.name, tc.run)
	}
}

// A nil pointer written is a write of nil: the Value then holds a value
// (nil), which its JSON says as null, and null decodes to no value.
func TestAValueOfAPointerWrittenNil(t *testing.T) {
	var f state.Value[*point]
	require.NoError(t, f.Channel().MergeWrites([]state.Channel{new(state.Set[*point](nil)).Channel()}))
	require.True(t, f.HasValue())
	require.Nil(t, f.Get())
	b, err := json.Marshal(f)
	require.NoError(t, err)
	require.Equal(t, "null", string(b))
}

// Setting a copy does not change the original's value or write, whatever
// T is.
func TestAValueSetOnACopyLeavesTheOriginal(t *testing.T) {
	var f state.Value[point]
	require.NoError(t, f.Channel().MergeWrites([]state.Channel{new(state.Set(point{X: 1})).Channel()}))
	c := f
	c.Set(point{X: 2})
	require.Equal(t, point{X: 1}, f.Get())
	require.False(t, f.Channel().Written())
	require.True(t, c.Channel().Written())
	require.Equal(t, point{X: 1}, c.Get(), "Get does not see a write on the same copy")
}
