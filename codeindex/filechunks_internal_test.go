package codeindex

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFileChunksAddsTheChunksOfHighestLatentCosine(t *testing.T) {
	ctx := context.Background()
	// Every function says "table"; the question's "checksum" is "crc"
	// in the code of one, "sum" in another's, and the third speaks of
	// neither.
	ix, _ := openTree(t, map[string]string{
		"a.go": "package a\n\n" +
			"// Names lists the table.\nfunc Names(table []string) []string { return table }\n\n" +
			"// Update adds to the table.\nfunc Update(table []uint32, crc uint32) uint32 { return crc }\n\n" +
			"// Total of the table.\nfunc Total(table []uint32, sum uint32) uint32 { return sum }\n",
		"b.go": "package b\n\n// Crc of nothing.\nfunc Other(crc uint32) uint32 { return crc }\n",
	})
	// "checksum" and "crc" along the first axis, "sum" near it, "table"
	// and "names" along the second.
	m := vecModel(t, 2, []string{"checksum", "crc", "sum", "table", "names"}, [][]float32{{1, 0}, {1, 0}, {0.8, 0.6}, {0, 1}, {0, 1}}, []float32{1, 1, 1, 1, 1})
	lq := &latentQuery{m: m, v: m.termsVector(modelTerms("checksum")), terms: map[int32]float32{0: 1}, idf: 1}
	kq := keywordQ{text: "checksum table"}
	names, update, total := "a.go#1", "a.go#2", "a.go#3"
	files := []scored{{"a.go", 1}}
	all, err := ix.fileMatches(ctx, kq, []scored{{"b.go", 2}, {"a.go", 1}})
	require.NoError(t, err)
	for _, tt := range []struct {
		name string
		lq   *latentQuery
		seen []string
		per  int
		want []string
	}{
		{"the chunk nearest the question", lq, nil, 1, []string{update}},
		{"two, nearest first", lq, nil, 2, []string{update, total}},
		{"all three, the chunk of no near term last", lq, nil, 5, []string{update, total, names}},
		{"a candidate already is left out", lq, []string{update}, 1, []string{total}},
		{"no latent query, nothing", nil, nil, 2, nil},
		{"none asked, nothing", lq, nil, 0, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[string]bool{}
			for _, id := range tt.seen {
				seen[id] = true
			}
			got := ix.fileChunks(all, fileChunkConfig{lq: tt.lq, memo: termMemo{}}, files, seen, tt.per) // b.go's chunk is not among files'
			require.Equal(t, tt.want, fileIDs(got))
			for _, s := range got {
				require.Positive(t, s.score, "the keyword score")
			}
		})
	}
}
