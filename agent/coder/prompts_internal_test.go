package coder

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestTruncationKeepsWithinTheLimitAndSaysHowMuchWasCut(t *testing.T) {
	s := strings.Repeat("é", 1000)
	for _, n := range []int{1, 10, 40, 100, 999, 1000, 2000} {
		h, m := truncateHead(s, n), truncateMiddle(s, n)
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

func TestParseJSONFindsTheValueInProseAndFences(t *testing.T) {
	v, err := parseJSON[[]string]("Here:\n```json\n[\"a.go\", \"b.go\"]\n```\nDone.")
	require.NoError(t, err)
	require.Equal(t, []string{"a.go", "b.go"}, v)
	_, err = parseJSON[[]string]("no json here")
	require.ErrorIs(t, err, errNoJSON)
}
