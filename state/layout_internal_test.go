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
