package coder

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/internal/prompt"
)

func TestTruncationKeepsWithinTheLimitAndSaysHowMuchWasCut(t *testing.T) {
	s := strings.Repeat("é", 1000)
	for _, n := range []int{1, 10, 40, 100, 999, 1000, 2000} {
		h, m := prompt.TruncateHead(s, n), truncateMiddle(s, n)
		require.LessOrEqual(t, utf8.RuneCountInString(h), n)
		require.LessOrEqual(t, utf8.RuneCountInString(m), n)
		if n >= 1000 {
			require.Equal(t, s, h)
			continue
		}
		if n >= 100 {
			kept := strings.Count(h, "é")
			require.Contains(t, h, "["+strconv.Itoa(1000-kept)+" characters truncated]")
		}
	}
}
