package codeindex

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFuseCommentsAddsTheWeightedNormalisedCommentScore(t *testing.T) {
	files := []scored{{"a.go", 4}, {"b.go", 2}, {"c.go", 1}}
	tests := []struct {
		name   string
		notes  []scored
		weight float64
		n      int
		want   []scored
	}{
		{"no comment ranking", nil, 1, 50, files},
		{"weight 0", []scored{{"c.go", 3}}, 0, 50, files},
		{"a file's comments lift it", []scored{{"c.go", 3}, {"a.go", 1}}, 1, 50,
			[]scored{{"a.go", 4 * (1 + 1.0/3)}, {"c.go", 4 * (0.25 + 1)}, {"b.go", 2}}},
		{"a file only the comments rank comes in", []scored{{"d.go", 2}}, 0.5, 50,
			[]scored{{"a.go", 4}, {"b.go", 2}, {"d.go", 2}, {"c.go", 1}}},
		{"the n best", []scored{{"d.go", 2}}, 2, 2,
			[]scored{{"d.go", 8}, {"a.go", 4}}},
	}
	for _, tt := range tests {
		got := fuseComments(files, tt.notes, tt.weight, tt.n)
		require.Len(t, got, len(tt.want), tt.name)
		for i := range tt.want {
			require.Equal(t, tt.want[i].id, got[i].id, "%s: rank %d", tt.name, i+1)
			require.InDelta(t, tt.want[i].score, got[i].score, 1e-9, "%s: %s", tt.name, got[i].id)
		}
	}
}

// commentIndex returns the updated index of latentTree with two more
// files, prose.go in directory prose and code.go in directory code:
// prose.go says every coverage word once, in a comment in the body of its
// function, and code.go repeats them in strings, never in a comment.
func commentIndex(t *testing.T) *Index {
	t.Helper()
	tree := latentTree()
	tree["prose/prose.go"] = "package prose\n\nfunc Prose() {\n\t// " + strings.Join(coverageWords, ", ") + ".\n}\n"
	var code strings.Builder
	code.WriteString("package code\n\nvar words = []string{")
	for range 3 {
		for _, w := range coverageWords {
			code.WriteString("\"" + w + "\", ")
		}
	}
	code.WriteString("}\n\nfunc Code() {}\n")
	tree["code/code.go"] = code.String()
	root := t.TempDir()
	writeTermTree(t, root, tree)
	return openUpdated(t, root)
}

func TestSearchCommentsRanksTheFilesByTheirCommentsAlone(t *testing.T) {
	ix := commentIndex(t)
	ctx := context.Background()
	q := strings.Join(coverageWords, " ")
	files, err := ix.searchFiles(ctx, q, fileCandidates)
	require.NoError(t, err)
	require.Equal(t, "code/code.go", files[0].id, "the whole text: the file that repeats the words")
	notes, err := ix.searchComments(ctx, q, fileCandidates)
	require.NoError(t, err)
	require.Equal(t, "prose/prose.go", notes[0].id, "the comments: the file that says them")
	require.NotContains(t, fileIDs(notes), "code/code.go", "it has no comment")
	var n int
	eachToken(commentText("prose/prose.go", []byte("// "+strings.Join(coverageWords, ", ")+".\n")), func(string, int, int) { n++ })
	require.Equal(t, n, ix.man.Files["prose/prose.go"].CommentTerms, "the manifest counts the comment text's terms")
	require.Equal(t, 3, ix.man.Files["code/code.go"].CommentTerms, "a file without comments: its path alone (code, code, go)")
}

func TestCommentRankingPutsTheFileThatSaysALongQuerysWordsFirst(t *testing.T) {
	ix := commentIndex(t)
	q := strings.Join(coverageWords, " ")
	for _, mode := range []Mode{BM25, Hybrid} {
		without, err := ix.Search(context.Background(), q, WithMode(mode), WithCommentWeight(0))
		require.NoError(t, err)
		require.Equal(t, "code/code.go", without[0].Path, "%v without the comment ranking", mode)
		with, err := ix.Search(context.Background(), q, WithMode(mode), WithCommentWeight(DefaultCommentWeight))
		require.NoError(t, err)
		require.Equal(t, "prose/prose.go", with[0].Path, "%v with it", mode)
	}
}

func TestSearchOfAShortQueryIsTheSameWithAndWithoutTheCommentRanking(t *testing.T) {
	ix := commentIndex(t)
	for _, mode := range []Mode{BM25, Hybrid} {
		for _, q := range []string{"apple river", strings.Join(coverageWords[:6], " ")} {
			with, err := ix.Search(context.Background(), q, WithMode(mode), WithCommentWeight(DefaultCommentWeight))
			require.NoError(t, err)
			without, err := ix.Search(context.Background(), q, WithMode(mode), WithCommentWeight(0))
			require.NoError(t, err)
			require.Equal(t, without, with, "%q, %v", q, mode)
		}
	}
}
