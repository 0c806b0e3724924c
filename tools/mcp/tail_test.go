package mcp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTailKeepsTheLastBytes(t *testing.T) {
	tl := &tail{max: 8}
	for _, s := range []string{"abc", "defgh", "ijklmnopqrstuvwxyz", "0"} {
		n, err := tl.Write([]byte(s))
		require.NoError(t, err)
		require.Equal(t, len(s), n)
	}
	require.Equal(t, "tuvwxyz0", tl.String())
	_, _ = tl.Write([]byte(strings.Repeat("x", 100)))
	require.Equal(t, strings.Repeat("x", 8), tl.String())
}
