package main

import (
	"fmt"
	"slices"
	"strings"
)

// A line diff: Myers' O(ND) algorithm ("An O(ND) Difference Algorithm and
// Its Variations", 1986) on the lines between the common prefix and
// suffix, and unified hunks of its result — what the dashboard shows of
// the agent's changes at a human check.

// maxEdits bounds the lines diffLines inserts and deletes between the
// common prefix and suffix before it gives up and replaces all of them:
// Myers' trace grows as the square of the edits.
const maxEdits = 1000

// diffOp is one line of an edit script: kind ' ' (kept), '-' (deleted
// from a) or '+' (inserted from b); a and b are the lines of a and b
// before it, so that a kept or deleted line is a[a] and a kept or
// inserted one b[b].
type diffOp struct {
	kind byte
	a, b int
}

// diffLines returns an edit script turning a into b: the shortest one,
// unless a and b differ by more than maxEdits lines between their common
// prefix and suffix, where the whole middle of a is deleted and that of b
// inserted.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]diffOp, 0, max(len(a), len(b))+1)
	for i := range pre {
		ops = append(ops, diffOp{' ', i, i})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	mid, ok := myers(ma, mb, maxEdits)
	if !ok {
		mid = mid[:0]
		for i := range ma {
			mid = append(mid, diffOp{'-', i, 0})
		}
		for j := range mb {
			mid = append(mid, diffOp{'+', len(ma), j})
		}
	}
	for _, op := range mid {
		ops = append(ops, diffOp{op.kind, op.a + pre, op.b + pre})
	}
	for i := range suf {
		ops = append(ops, diffOp{' ', len(a) - suf + i, len(b) - suf + i})
	}
	return ops
}

// myers returns the shortest edit script turning a into b, or false when
// it has more than maxD insertions and deletions.
func myers(a, b []string, maxD int) ([]diffOp, bool) {
	n, m := len(a), len(b)
	maxD = min(maxD, n+m)
	off := maxD + 1
	v := make([]int, 2*maxD+3) // v[off+k]: the furthest x on diagonal k
	// trace[d] is v[off-d-1 : off+d+2] as round d found it.
	var trace [][]int
	for d := 0; d <= maxD; d++ {
		trace = append(trace, slices.Clone(v[off-d-1:off+d+2]))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: insert b[y-1]
			} else {
				x = v[off+k-1] + 1 // right: delete a[x-1]
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, n, m), true
			}
		}
	}
	return nil, false
}

// backtrack walks the trace of myers back from (n, m) to (0, 0).
func backtrack(trace [][]int, n, m int) []diffOp {
	var ops []diffOp
	x, y := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		v := trace[d]
		at := func(k int) int { return v[k+d+1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := 0
		if d > 0 {
			px = at(pk)
		}
		py := px - pk
		for x > px && y > py && x > 0 && y > 0 {
			x, y = x-1, y-1
			ops = append(ops, diffOp{' ', x, y})
		}
		if d == 0 {
			break
		}
		if x == px {
			y--
			ops = append(ops, diffOp{'+', x, y})
		} else {
			x--
			ops = append(ops, diffOp{'-', x, y})
		}
	}
	slices.Reverse(ops)
	return ops
}

// diffHunk is one hunk of a unified diff.
type diffHunk struct {
	// Header is "@@ -l,s +l,s @@".
	Header string `json:"header"`
	// Lines are the hunk's lines, each prefixed with ' ', '-' or '+'.
	Lines []string `json:"lines"`
}

// unifiedHunks returns the hunks of the diff of a and b with context lines
// of context around each change; none when a and b are equal.
func unifiedHunks(a, b []string, context int) []diffHunk {
	ops := diffLines(a, b)
	var hunks []diffHunk
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from context lines before this change to context
		// lines after the last change that is at most 2*context kept
		// lines from the one before it.
		start := max(0, i-context)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
			} else if j-end > 2*context {
				break
			}
		}
		stop := min(len(ops), end+context+1)
		var h diffHunk
		na, nb := 0, 0
		for _, op := range ops[start:stop] {
			switch op.kind {
			case ' ':
				h.Lines = append(h.Lines, " "+a[op.a])
				na, nb = na+1, nb+1
			case '-':
				h.Lines = append(h.Lines, "-"+a[op.a])
				na++
			case '+':
				h.Lines = append(h.Lines, "+"+b[op.b])
				nb++
			}
		}
		la, lb := ops[start].a, ops[start].b
		if na > 0 {
			la++
		}
		if nb > 0 {
			lb++
		}
		h.Header = fmt.Sprintf("@@ -%s +%s @@", hunkRange(la, na), hunkRange(lb, nb))
		hunks = append(hunks, h)
		i = stop
	}
	return hunks
}

// hunkRange is a side's range in a hunk header: "l,n", or "l" for one line.
func hunkRange(line, n int) string {
	if n == 1 {
		return fmt.Sprint(line)
	}
	return fmt.Sprintf("%d,%d", line, n)
}

// splitLines splits text into lines without their "\n"; a last line
// without one gets the marker diff(1) prints, so that adding a final
// newline is a change.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if s, ok := strings.CutSuffix(l, "\n"); ok {
			lines[i] = s
		} else {
			lines[i] = l + "\n\\ No newline at end of file"
		}
	}
	return lines
}
