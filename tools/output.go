package tools

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"
)

// capBuffer is an io.Writer that keeps the first and the last bytes written
// to it and counts the characters dropped in between, so that commands with
// huge output cannot exhaust memory.
type capBuffer struct {
	mu           sync.Mutex
	max          int // bytes kept at the head; the tail keeps between max and 2*max
	head         []byte
	tail         []byte
	droppedRunes int64
}

func newCapBuffer(maxBytes int) *capBuffer {
	return &capBuffer{max: maxBytes}
}

// captureBytes is how many bytes a capBuffer keeps at each end for an output
// limit of chars characters: enough for any UTF-8 text of that length.
func captureBytes(chars int) int {
	return max(4*chars, 64<<10)
}

// Write implements io.Writer; it never fails.
func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := b.max - len(b.head); room > 0 {
		take := min(room, len(p))
		b.head = append(b.head, p[:take]...)
		p = p[take:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if len(p) >= b.max {
		b.droppedRunes += runeStarts(b.tail) + runeStarts(p[:len(p)-b.max])
		b.tail = append(b.tail[:0], p[len(p)-b.max:]...)
		return n, nil
	}
	b.tail = append(b.tail, p...)
	if len(b.tail) > 2*b.max {
		cut := len(b.tail) - b.max
		b.droppedRunes += runeStarts(b.tail[:cut])
		b.tail = b.tail[:copy(b.tail, b.tail[cut:])]
	}
	return n, nil
}

// runeStarts counts the bytes of p that start a UTF-8 sequence, which is the
// number of characters for valid UTF-8.
func runeStarts(p []byte) int64 {
	var n int64
	for _, c := range p {
		if !utf8.RuneStart(c) {
			continue
		}
		n++
	}
	return n
}

// chars returns the number of characters written so far.
func (b *capBuffer) chars() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return int64(utf8.RuneCount(b.head)) + b.droppedRunes + int64(utf8.RuneCount(b.tail))
}

// String returns everything kept, clipped to limit characters.
func (b *capBuffer) String(limit int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return clip(b.head, b.tail, b.droppedRunes, limit)
}

// clip joins head and tail, between which dropped characters are missing,
// and keeps at most limit characters: the first and the last halves, around
// a marker saying how many characters were cut.
func clip(head, tail []byte, dropped int64, limit int) string {
	if dropped == 0 {
		all := make([]byte, 0, len(head)+len(tail))
		all = append(append(all, head...), tail...)
		return Truncate(string(all), limit)
	}
	hr := []rune(string(head))
	tr := []rune(string(tail))
	total := int64(len(hr)) + dropped + int64(len(tr))
	keepHead := min(limit/2, len(hr))
	keepTail := min(limit-keepHead, len(tr))
	cut := total - int64(keepHead) - int64(keepTail)
	return string(hr[:keepHead]) + truncMarker(cut) + string(tr[len(tr)-keepTail:])
}

// Truncate cuts s to at most limit characters (runes) the way the tools
// of this package cut their output: it keeps the first and the last
// halves around a line saying how many characters were cut. A limit of
// 0 or less keeps s whole. Tools of other packages (MCP servers', your
// own) use it to follow the same rule.
func Truncate(s string, limit int) string {
	if limit <= 0 || utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	keepHead := limit / 2
	keepTail := limit - keepHead
	return string(r[:keepHead]) + truncMarker(int64(len(r)-limit)) + string(r[len(r)-keepTail:])
}

func truncMarker(cut int64) string {
	return fmt.Sprintf("\n[... %d chars truncated ...]\n", cut)
}

// truncateLine shortens a single line to at most limit characters.
func truncateLine(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit]) + fmt.Sprintf(" [... %d chars]", len(r)-limit)
}

// binarySniffLen is how many leading bytes are checked for NUL bytes.
const binarySniffLen = 8 << 10

// looksBinary reports whether data contains a NUL byte in its first 8 KB.
func looksBinary(data []byte) bool {
	if len(data) > binarySniffLen {
		data = data[:binarySniffLen]
	}
	return bytes.IndexByte(data, 0) >= 0
}

// sniffBinary reads the first 8 KB of r and reports whether it looks binary.
func sniffBinary(r io.ReaderAt) (bool, error) {
	buf := make([]byte, binarySniffLen)
	n, err := r.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return looksBinary(buf[:n]), nil
}

// eachLine calls fn with every line of r (1-based number, without the line
// terminator) until fn returns false. Lines longer than maxLen bytes are
// cut to maxLen bytes.
func eachLine(r io.Reader, maxLen int, fn func(n int, line []byte) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	n := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if room := maxLen - len(buf); room > 0 {
			buf = append(buf, chunk[:min(room, len(chunk))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil || len(buf) > 0 {
			n++
			if !fn(n, trimEOL(buf)) {
				return nil
			}
		}
		buf = buf[:0]
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}
