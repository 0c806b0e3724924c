package codeindex

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFilePriorAddsTheWeightedNormalisedScoreOfTheChunksFile(t *testing.T) {
	ranked := []scored{{"a.go#0", 4}, {"b.go#0", 3}, {"b.go#1", 2}, {"c.go#0", 1}}
	files := []scored{{"b.go", 10}, {"a.go", 5}}
	tests := []struct {
		name   string
		weight float64
		want   []scored
	}{
		// a.go#0: 4/4 + w*5/10; b.go#0: 3/4 + w*10/10; b.go#1: 2/4 + w; c.go#0: 1/4 + 0.
		{"weight 0 keeps the order", 0, []scored{{"a.go#0", 1}, {"b.go#0", 0.75}, {"b.go#1", 0.5}, {"c.go#0", 0.25}}},
		{"weight 1", 1, []scored{{"b.go#0", 1.75}, {"a.go#0", 1.5}, {"b.go#1", 1.5}, {"c.go#0", 0.25}}},
		{"weight 4", 4, []scored{{"b.go#0", 4.75}, {"b.go#1", 4.5}, {"a.go#0", 3}, {"c.go#0", 0.25}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, filePrior(ranked, files, tt.weight))
		})
	}
}

// openTree writes files under a temporary root and indexes them.
func openTree(t *testing.T, files map[string]string) (*Index, string) {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		abs := filepath.Join(root, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(abs), 0o755))
		require.NoError(t, os.WriteFile(abs, []byte(content), 0o644))
	}
	ix, err := Open(context.Background(), root)
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	_, err = ix.Update(context.Background())
	require.NoError(t, err)
	return ix, root
}

func fileIDs(s []scored) []string {
	var out []string
	for _, f := range s {
		out = append(out, f.id)
	}
	return out
}

func TestUpdateKeepsTheFileDocumentsInStepWithTheFiles(t *testing.T) {
	ctx := context.Background()
	ix, root := openTree(t, map[string]string{
		"a.go": "package a\n\n// Walrus counts.\nfunc A() {}\n",
		"b.go": "package a\n\n// Narwhal counts.\nfunc B() {}\n",
	})
	files, err := ix.searchFiles(ctx, "walrus narwhal", 10)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a.go", "b.go"}, fileIDs(files))

	require.NoError(t, os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\n\n// Otter counts.\nfunc A() {}\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(root, "b.go")))
	_, err = ix.Update(ctx)
	require.NoError(t, err)
	files, err = ix.searchFiles(ctx, "walrus narwhal", 10)
	require.NoError(t, err)
	require.Empty(t, files, "the changed file's old text and the deleted file are gone")
	files, err = ix.searchFiles(ctx, "otter", 10)
	require.NoError(t, err)
	require.Equal(t, []string{"a.go"}, fileIDs(files))
}

func TestChunkStatisticsCountChunksNotFileDocuments(t *testing.T) {
	ix, _ := openTree(t, map[string]string{
		"a.go": "package a\n\nfunc A() {}\n\nfunc B() {}\n",
		"b.go": "package a\n\nfunc C() {}\n",
	})
	chunks := 0
	for _, e := range ix.man.Files {
		chunks += len(e.Chunks)
	}
	st, err := ix.bm25Stats(context.Background())
	require.NoError(t, err)
	require.Equal(t, float64(chunks), st.DocCount)
	fs := ix.fileStats()
	require.Equal(t, float64(2), fs.DocCount)
	require.Equal(t, len(Tokens(fileText("a.go", []byte("package a\n\nfunc A() {}\n\nfunc B() {}\n"))))+len(Tokens(fileText("b.go", []byte("package a\n\nfunc C() {}\n")))), fs.FieldCardinality[fileField])
}

func TestKeywordRankingLooksIntoTheRankedFilesBelowItsCut(t *testing.T) {
	ctx := context.Background()
	ix, _ := openTree(t, map[string]string{
		"a.go": "package a\n\n// Gannet gannet gannet.\nfunc A() {}\n",
		"b.go": "package a\n\n// Gannet.\nfunc B() {}\n",
	})
	kq := ix.keywordQueryOf("gannet", 0)
	kw, err := ix.keywordRanking(ctx, kq, nil, 0, 1, fileChunkConfig{})
	require.NoError(t, err)
	require.Equal(t, []string{"a.go#1"}, fileIDs(kw))
	kw, err = ix.keywordRanking(ctx, kq, []scored{{"b.go", 1}}, 0, 1, fileChunkConfig{})
	require.NoError(t, err)
	require.Equal(t, []string{"a.go#1", "b.go#1"}, fileIDs(kw))
	all, err := ix.searchKeyword(ctx, kq, 10)
	require.NoError(t, err)
	require.Equal(t, all, kw, "scored as the whole index's ranking scores them")
}

func TestSpreadTopHoldsBackAFilesChunksBeyondItsShareOfTheFirstHits(t *testing.T) {
	r := func(ids ...string) []scored {
		var out []scored
		for _, id := range ids {
			out = append(out, scored{id: id})
		}
		return out
	}
	tests := []struct {
		name      string
		in        []string
		testsLast bool
		want      []string
	}{
		{"one file's fourth chunk waits for the fifth hit", []string{"a#0", "a#1", "a#2", "a#3", "b#0", "c#0", "a#4"}, false,
			[]string{"a#0", "a#1", "a#2", "b#0", "c#0", "a#3", "a#4"}},
		{"nothing else to place: the waiting chunks come next", []string{"a#0", "a#1", "a#2", "a#3", "a#4"}, false,
			[]string{"a#0", "a#1", "a#2", "a#3", "a#4"}},
		{"already spread", []string{"a#0", "b#0", "a#1", "c#0", "a#2", "a#3"}, false,
			[]string{"a#0", "b#0", "a#1", "c#0", "a#2", "a#3"}},
		{"a test chunk does not pass a waiting chunk", []string{"a#0", "a#1", "a#2", "a#3", "a_test.go#0", "b#0"}, true,
			[]string{"a#0", "a#1", "a#2", "a#3", "a_test.go#0", "b#0"}},
		{"without tests last it may", []string{"a#0", "a#1", "a#2", "a#3", "a_test.go#0", "b#0"}, false,
			[]string{"a#0", "a#1", "a#2", "a_test.go#0", "b#0", "a#3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, fileIDs(spreadTop(r(tt.in...), 5, 3, tt.testsLast)))
		})
	}
}

func TestKeywordRankingAddsTheBestChunkOfEachTopFileWithoutOne(t *testing.T) {
	ctx := context.Background()
	ix, _ := openTree(t, map[string]string{
		"a.go": "package a\n\n// Gannet gannet gannet.\nfunc A() {}\n",
		"b.go": "package a\n\n// Gannet, petrel, tern and skua.\nfunc B() {}\n\n// Gannet gannet.\nfunc B2() {}\n",
		"c.go": "package a\n\n// Petrel.\nfunc C() {}\n",
	})
	kq := ix.keywordQueryOf("gannet", 0)
	files := []scored{{"a.go", 3}, {"c.go", 2}, {"b.go", 1}}
	tests := []struct {
		top  int
		want []string
	}{
		{0, []string{"a.go#1"}},
		{1, []string{"a.go#1"}},            // a.go has its chunk already
		{2, []string{"a.go#1"}},            // no chunk of c.go matches
		{3, []string{"a.go#1", "b.go#2"}},  // b.go's best chunk, not its other one
		{10, []string{"a.go#1", "b.go#2"}}, // more than there are files
	}
	for _, tt := range tests {
		kw, err := ix.keywordRanking(ctx, kq, files, tt.top, 1, fileChunkConfig{})
		require.NoError(t, err)
		require.Equal(t, tt.want, fileIDs(kw), "top %d", tt.top)
	}
}

func TestSearchRejectsANegativeNumberOfTopFiles(t *testing.T) {
	ix, _ := openTree(t, map[string]string{"a.go": "package a\n\n// Gannet.\nfunc A() {}\n"})
	_, err := ix.Search(context.Background(), "gannet", WithTopFiles(-1))
	var oe *OptionError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "WithTopFiles", oe.Option)
	hits, err := ix.Search(context.Background(), "gannet", WithTopFiles(0))
	require.NoError(t, err)
	require.NotEmpty(t, hits)
}

func TestFileMatchesHoldsEachFileSetsOwnKeywordRanking(t *testing.T) {
	ctx := context.Background()
	ix, _ := openTree(t, map[string]string{
		"a.go": "package a\n\n// Gannet gannet gannet.\nfunc A() {}\n\n// Gannet and tern.\nfunc A2() {}\n",
		"b.go": "package a\n\n// Gannet, petrel, tern and skua.\nfunc B() {}\n\n// Gannet gannet.\nfunc B2() {}\n",
		"c.go": "package a\n\n// Petrel.\nfunc C() {}\n\n// Tern.\nfunc C2() {}\n",
	})
	kq := ix.keywordQueryOf("gannet tern", 0)
	files := []scored{{"a.go", 3}, {"c.go", 2}, {"b.go", 1}}
	all, err := ix.fileMatches(ctx, kq, files)
	require.NoError(t, err)
	require.Len(t, all, 5, "every matching chunk")
	// The matches of any of the files, in all's order, are what a query
	// over their chunks alone returns.
	for _, sub := range [][]scored{files, files[:1], files[1:], {files[2]}} {
		in := map[string]bool{}
		for _, f := range sub {
			in[f.id] = true
		}
		var cut []scored
		for _, s := range all {
			if in[chunkPath(s.id)] {
				cut = append(cut, s)
			}
		}
		want, err := ix.searchKeywordIn(ctx, kq, sub, 100)
		require.NoError(t, err)
		require.Equal(t, want, cut, "files %v", sub)
	}
	none, err := ix.fileMatches(ctx, kq, []scored{{"gone.go", 1}})
	require.NoError(t, err)
	require.Empty(t, none)
}
