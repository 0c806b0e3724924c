package postgres

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
)

// A presized argument is encoded exactly as its value, into a buffer
// made room for at once.
func TestPresizedEncodesAsItsValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    []string
	}{
		{"nil", nil},
		{"empty", []string{}},
		{"values", []string{"w5t-1-1", "", "日本", "a\x00b"}},
	} {
		for _, format := range []int16{pgtype.BinaryFormatCode, pgtype.TextFormatCode} {
			t.Run(fmt.Sprintf("%s/format %d", tc.name, format), func(t *testing.T) {
				m := pgtype.NewMap()
				want, err := m.Encode(pgtype.TextArrayOID, format, tc.v, nil)
				require.NoError(t, err)
				registerPresized(m)
				got, err := m.Encode(pgtype.TextArrayOID, format, presized[[]string]{tc.v, 4096}, nil)
				require.NoError(t, err)
				require.Equal(t, want, got)
				if want != nil {
					require.GreaterOrEqual(t, cap(got), 4096)
				}
			})
		}
	}
}

// Registering again on a connection's type map adds nothing.
func TestRegisterPresizedOnce(t *testing.T) {
	m := pgtype.NewMap()
	n := len(m.TryWrapEncodePlanFuncs)
	registerPresized(m)
	registerPresized(m)
	require.Len(t, m.TryWrapEncodePlanFuncs, n+1)
}

// presize wraps the first argument with about the encoded size of all,
// and leaves the others as they are.
func TestPresizeCountsEveryArgument(t *testing.T) {
	id := "tok"
	args := presize([]string{"ab", "c"}, []int64{1, 2}, [][]byte{[]byte("xyz")}, []*string{&id, nil}, []int32{7})
	first, ok := args[0].(presized[[]string])
	require.True(t, ok)
	require.Equal(t, []string{"ab", "c"}, first.v)
	// Five headers, then: 2 strings (4+2, 4+1), 2 int64s (12 each), 1
	// bytea (4+3), 2 texts (4+3, 4), 1 int32 (8).
	require.Equal(t, 5*24+(6+5)+24+7+(7+4)+8, first.n)
	require.Equal(t, []int64{1, 2}, args[1])
}
