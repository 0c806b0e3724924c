package graph

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNextVersionIsGreaterThanWhatItFollows(t *testing.T) {
	for _, cur := range []int64{0, 1, 1 << versionLowBits, 1<<versionLowBits - 1, 1_780_000_000_000_000_000 /* a clock-seeded version of the old scheme */} {
		v, err := nextVersion(cur)
		require.NoError(t, err)
		require.Greater(t, v, cur)
	}
}

func TestNextVersionNeverRepeatsInAProcess(t *testing.T) {
	// Forks of one checkpoint all follow the same version: each gets its
	// own.
	seen := make(map[int64]bool)
	for range 100_000 {
		v, err := nextVersion(42 << versionLowBits)
		require.NoError(t, err)
		require.False(t, seen[v], "version %d made twice", v)
		seen[v] = true
	}
}

func TestNextVersionRefusesToOverflow(t *testing.T) {
	_, err := nextVersion(versionMaxTick << versionLowBits)
	require.ErrorContains(t, err, "exhausted")
	v, err := nextVersion((versionMaxTick - 1) << versionLowBits)
	require.NoError(t, err)
	require.Positive(t, v)
}
