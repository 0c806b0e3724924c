package goals

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTruncateMiddleKeepsHeadAndTail(t *testing.T) {
	t.Parallel()
	require.Equal(t, "short", truncateMiddle("short", 10))
	require.Equal(t, "ab\n... [6 characters omitted] ...\nyz", truncateMiddle("abcdefwxyz", 4))
	require.Equal(t, "éé\n... [2 characters omitted] ...\nüü", truncateMiddle("ééxxüü", 4), "counts characters, not bytes")
}

func TestCapBufferKeepsFirstAndLastBytes(t *testing.T) {
	t.Parallel()
	b := newCapBuffer(10)
	for i := range 100 {
		_, _ = fmt.Fprintf(b, "%03d,", i)
	}
	s := b.String(1000)
	require.True(t, strings.HasPrefix(s, "000,001,00"), s)
	require.True(t, strings.HasSuffix(s, "097,098,099,"), s)
	require.Contains(t, s, "bytes omitted")
	require.Equal(t, "000,001,002,", func() string { c := newCapBuffer(100); _, _ = c.Write([]byte("000,001,002,")); return c.String(100) }())
}

func TestCapFailuresLimitsCountAndOutput(t *testing.T) {
	t.Parallel()
	var fs []Failure
	for i := range MaxFailures + 5 {
		fs = append(fs, Failure{Name: fmt.Sprint(i), Output: strings.Repeat("x", MaxFailureOutputChars+1)})
	}
	got := capFailures(fs)
	require.Len(t, got, MaxFailures)
	require.Contains(t, got[0].Output, "omitted")
	require.Equal(t, "0, 1, 2, 3, 4 and 50 more", nameList(got, len(fs)))
	require.Nil(t, capFailures(nil))
}

func TestLimitedBufferDiscardsOverflowWithoutShortWrites(t *testing.T) {
	t.Parallel()
	b := &limitedBuffer{max: 4}
	n, err := b.Write([]byte("abc"))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = b.Write([]byte("defg"))
	require.NoError(t, err)
	require.Equal(t, 4, n, "the whole write is acknowledged")
	require.Equal(t, "abcd", string(b.buf))
	require.True(t, b.truncated)
}
