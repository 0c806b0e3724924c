package tools

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCapBufferKeepsHeadAndTailOfHugeOutput(t *testing.T) {
	t.Parallel()
	b := newCapBuffer(100)
	_, _ = b.Write([]byte("HEAD"))
	for range 1000 {
		_, _ = b.Write([]byte(strings.Repeat("é", 50))) // 100 bytes, 50 chars
	}
	_, _ = b.Write([]byte(strings.Repeat("x", 500) + "TAIL"))
	require.LessOrEqual(t, len(b.head)+len(b.tail), 300, "memory stays bounded")

	total := int64(4 + 50*1000 + 504)
	require.Equal(t, total, b.chars())
	out := b.String(20)
	require.Equal(t, "HEAD"+strings.Repeat("é", 6)+truncMarker(total-20)+strings.Repeat("x", 6)+"TAIL", out)
}

func TestCapBufferReturnsShortOutputUnchanged(t *testing.T) {
	t.Parallel()
	b := newCapBuffer(100)
	_, _ = b.Write([]byte("hello "))
	_, _ = b.Write([]byte("wörld"))
	require.Equal(t, "hello wörld", b.String(100))
	require.Equal(t, int64(11), b.chars())
}

func TestTruncateMiddle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 10, "abcdefghij"},
		{"abcdefghijk", 4, "ab" + truncMarker(7) + "jk"},
		{"ääääöööö", 4, "ää" + truncMarker(4) + "öö"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Truncate(tt.in, tt.limit), tt.in)
	}
}

func TestEachLineSplitsLinesAndCapsLongOnes(t *testing.T) {
	t.Parallel()
	input := "a\r\n\nlong-line-here\nlast"
	var got []string
	err := eachLine(strings.NewReader(input), 4, func(n int, line []byte) bool {
		got = append(got, string(line))
		return true
	})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "", "long", "last"}, got)
}

func TestFileToolsRefuseFIFOs(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	require.NoError(t, syscall.Mkfifo(filepath.Join(ws.Root(), "pipe"), 0o644))
	_, err := call(t, FileRead(ws), FileReadArgs{Path: "pipe"})
	require.ErrorContains(t, err, "not a regular file")
	_, err = call(t, FilePatch(ws), FilePatchArgs{Path: "pipe", OldText: "a", NewText: "b"})
	require.ErrorContains(t, err, "not a regular file")
	_, err = call(t, Grep(ws), GrepArgs{Pattern: "a", Path: "pipe"})
	require.ErrorContains(t, err, "not a regular file")
	out, err := call(t, Grep(ws), GrepArgs{Pattern: "a"})
	require.NoError(t, err)
	require.Equal(t, "no matches\n", out)
}
