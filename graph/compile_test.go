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

// The Channel placed at a field's address is the one the field's own
// Channel method returns, for every field type of package state.
func TestSchemaChannelIsTheFieldsChannel(t *testing.T) {
	sc, problems := newSchema[allFields]()
	require.Empty(t, problems)
	var s allFields
	s.V.Set("x")
	s.A.Append(1)
	p := unsafe.Pointer(&s)
	for i, f := range sc.fields {
		want := reflect.NewAt(f.typ, unsafe.Add(p, f.off)).Interface().(channeler).Channel()
		got := sc.ch(p, i)
		require.Equal(t, reflect.TypeOf(want), reflect.TypeOf(got), f.name)
		require.Equal(t, reflect.ValueOf(want).Pointer(), reflect.ValueOf(got).Pointer(), f.name)
		require.Equal(t, want.Written(), got.Written(), f.name)
	}
	require.True(t, sc.ch(p, 0).Written())
	sc.ch(p, 0).ClearWrite()
	require.False(t, s.V.Channel().Written())
}

// A struct that only embeds a field type of package state is that field
// type to the runtime: its Channel views the whole field.
func TestSchemaAcceptsAStructThatOnlyEmbedsAField(t *testing.T) {
	type plan struct{ state.Value[string] }
	type withPlan struct{ P plan }
	sc, problems := newSchema[withPlan]()
	require.Empty(t, problems)
	s := withPlan{P: plan{state.Set("x")}}
	got := sc.ch(unsafe.Pointer(&s), 0)
	require.True(t, got.Written())
	got.ClearWrite()
	require.False(t, s.P.Channel().Written())
}

// foreignChannel is a Channel that package state did not make.
type foreignChannel struct{ state.Channel }

// foreign is a field type whose Channel is not package state's.
type foreign struct{ state.Value[int] }

func (f *foreign) Channel() state.Channel { return foreignChannel{f.Value.Channel()} }

func TestSchemaRefusesAFieldItCannotPlaceByAddress(t *testing.T) {
	type plain struct{ F int }
	type embedsBeside struct {
		F struct {
			state.Value[int]
			Note string
		}
	}
	type embedsAfter struct {
		F struct {
			Note string
			state.Value[int]
		}
	}
	type foreignField struct{ F foreign }
	tests := []struct {
		name    string
		schema  func() (*schema, []string)
		problem string
	}{
		{"a type with no Channel method", newSchema[plain], "state field plain.F has type int, which has no reducer"},
		{"a struct embedding a field beside another", newSchema[embedsBeside], "whose Channel method does not view the whole field"},
		{"a struct embedding a field after another", newSchema[embedsAfter], "whose Channel method does not view the whole field"},
		{"a Channel not made by package state", newSchema[foreignField], "whose Channel method does not view the whole field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := tc.schema()
			require.Len(t, problems, 1)
			require.Contains(t, problems[0], tc.problem)
		})
	}
}
