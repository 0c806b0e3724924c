package graph

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/state"
)

type concat struct{}

func (concat) Reduce(old, update string) string { return old + update }

type allFields struct {
	V   state.Value[string]
	A   state.Append[int]
	N   state.Sum[float64]
	M   state.Map[string, int]
	R   state.Reduced[string, concat]
	Msg state.Messages
}

// The Channel built from a field's interface table and address is the one
// reflection builds, for every field type of package state.
func TestSchemaChannelIsTheFieldsPointer(t *testing.T) {
	sc, problems := newSchema[allFields]()
	require.Empty(t, problems)
	var s allFields
	s.V.Set("x")
	s.A.Append(1)
	p := unsafe.Pointer(&s)
	for i, f := range sc.fields {
		want := reflect.NewAt(f.typ, unsafe.Add(p, f.off)).Interface().(state.Channel)
		got := sc.ch(p, i)
		require.Equal(t, reflect.TypeOf(want), reflect.TypeOf(got), f.name)
		require.Equal(t, reflect.ValueOf(want).Pointer(), reflect.ValueOf(got).Pointer(), f.name)
		require.Equal(t, want.Written(), got.Written(), f.name)
	}
	require.True(t, sc.ch(p, 0).Written())
	sc.ch(p, 0).ClearWrite()
	require.False(t, s.V.Written())
}
