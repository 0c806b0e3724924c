package codeindex_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/codeindex"
)

// fileRankTree has a question's words spread over one file, a.go — in the
// comments between its definitions and in the doc of the one that does
// the work — and gathered in one definition of another, b.go, about
// something else.
var fileRankTree = map[string]string{
	"srv/a.go": `package srv

// A client that is slow to send its headers is cut off.

// readRequest reads the next request of a connection.
func readRequest() {}

// The deadline is armed before reading.
func arm() {}
`,
	"other/b.go": `package other

// slowHeaders lists slow client headers and a deadline.
func slowHeaders() {}
`,
}

func TestSearchRanksADefinitionOfTheFileThatMatchesTheQueryFirst(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, fileRankTree)
	ctx := context.Background()
	ix, err := codeindex.Open(ctx, root)
	require.NoError(t, err)
	defer ix.Close()
	_, err = ix.Update(ctx)
	require.NoError(t, err)

	const q = "where is a client cut off that is slow to send the headers of its next request before the deadline"
	for _, m := range []codeindex.Mode{codeindex.BM25, codeindex.Hybrid} {
		t.Run(m.String(), func(t *testing.T) {
			off, err := ix.Search(ctx, q, codeindex.WithMode(m), codeindex.WithFileWeight(0), codeindex.WithLimit(1))
			require.NoError(t, err)
			require.Equal(t, []string{"other/b.go"}, paths(off), "without the file ranking")
			on, err := ix.Search(ctx, q, codeindex.WithMode(m), codeindex.WithLimit(1))
			require.NoError(t, err)
			require.Equal(t, []string{"srv/a.go"}, paths(on))
		})
	}
}

func TestSearchWithFileRankingLeavesVectorSearchAlone(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, fileRankTree)
	ctx := context.Background()
	ix, err := codeindex.Open(ctx, root)
	require.NoError(t, err)
	defer ix.Close()
	_, err = ix.Update(ctx)
	require.NoError(t, err)

	const q = "slow client headers deadline"
	off, err := ix.Search(ctx, q, codeindex.WithMode(codeindex.Vector), codeindex.WithFileWeight(0))
	require.NoError(t, err)
	on, err := ix.Search(ctx, q, codeindex.WithMode(codeindex.Vector), codeindex.WithFileWeight(5))
	require.NoError(t, err)
	require.Equal(t, off, on)
}
