package codeindex

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tuneTopics are the tuning test's topics: a word only the doc comments
// use and the identifier part the code they document uses for it.
var tuneTopics = []struct{ prose, code string }{
	{"sluggish", "Deadline"}, {"vanished", "Tombstone"}, {"garbled", "Checksum"},
	{"throttled", "Backoff"}, {"stale", "Expiry"}, {"orphaned", "Parent"},
}

// tuneTree is a corpus of eight documented definitions a topic, whose doc
// comments say the topic's prose word and whose code uses its identifier
// part, each with other words at random; and, twice as many, undocumented
// definitions that use the next topic's identifier part under a line
// comment of the topic's word. Counted over whole definitions, as LSA
// counts, a topic's word goes more often with the next topic's
// identifier part than with its own.
func tuneTree() map[string]string {
	var words []string
	for _, a := range []string{"amber", "brisk", "coral", "dusky", "ember", "frost", "gleam", "hazel", "ivory", "jolly"} {
		for _, b := range []string{"apple", "river", "stone", "cloud", "lamp", "garden"} {
			words = append(words, a+b)
		}
	}
	tree := map[string]string{}
	n := 0
	for t, topic := range tuneTopics {
		src := "package topics\n"
		for range 8 {
			n++
			a, b, c := words[n*7%60], words[(n*11+3)%60], words[(n*13+5)%60]
			src += fmt.Sprintf("\n// Do%d finds the %s %s beside the %s and the %s.\nfunc Do%d(x *Thing) { x.Set%s(x.%s, x.%s) }\n",
				n, topic.prose, a, b, c, n, topic.code, capital(b), capital(c))
			u := tuneTopics[(t+1)%len(tuneTopics)]
			for j := range 2 {
				src += fmt.Sprintf("\nfunc plain%d_%d(y *Thing) {\n\t// %s\n\ty.Get%s(y.%s)\n}\n", n, j, topic.prose, u.code, capital(words[(n*5+j*17)%60]))
			}
		}
		tree[fmt.Sprintf("topics/t%d.go", t)] = src
	}
	return tree
}

func capital(s string) string { return string(s[0]-'a'+'A') + s[1:] }

// cosine returns the cosine of the vectors of the terms a and b in vecs.
func (m *termModel) cosine(vecs []float32, a, b string) float32 {
	i, j := int(m.index[a]), int(m.index[b])
	return dot(vecs[i*m.Dim:(i+1)*m.Dim], vecs[j*m.Dim:(j+1)*m.Dim])
}

func TestTuningPutsAProseWordBesideTheIdentifierPartItDocuments(t *testing.T) {
	root := t.TempDir()
	tree := tuneTree()
	writeTermTree(t, root, tree)
	ix := openUpdated(t, root)
	require.NotNil(t, ix.termModel().Tuned, "the doc comments make pairs: the model is tuned")
	// A corpus this small is one batch an epoch: more epochs and smaller
	// batches than GOROOT needs.
	paths := slices.Sorted(maps.Keys(tree))
	m, err := ix.trainTermModelWith(context.Background(), paths, tuneConfig{epochs: 60, batch: 8, scale: 20, rate: 0.05, seed: 1})
	require.NoError(t, err)
	nearest := func(vecs []float32, prose string) string {
		best, bestCos := "", float32(-2)
		for _, other := range tuneTopics {
			c := stem(strings.ToLower(other.code))
			if cos := m.cosine(vecs, prose, c); cos > bestCos {
				best, bestCos = c, cos
			}
		}
		return best
	}
	lsaWrong := 0
	for _, topic := range tuneTopics {
		t.Run(topic.prose, func(t *testing.T) {
			prose, code := stem(topic.prose), stem(strings.ToLower(topic.code))
			require.Contains(t, m.index, prose)
			require.Contains(t, m.index, code)
			require.Equal(t, code, nearest(m.Tuned, prose), "of the identifier parts, the one %q documents", topic.prose)
		})
		if nearest(m.Vecs, stem(topic.prose)) != stem(strings.ToLower(topic.code)) {
			lsaWrong++
		}
	}
	require.NotZero(t, lsaWrong, "the LSA vectors, counting whole definitions, put some word nearer another topic's identifier part")
}

func TestSplitDoc(t *testing.T) {
	for _, tt := range []struct{ name, content, doc, code string }{
		{"go", "// Reap drops a peer.\n// It waits.\nfunc Reap() {\n\t// inside\n}", "// Reap drops a peer.\n// It waits.\n", "func Reap() {\n\t// inside\n}"},
		{"block", "/**\n * Adds.\n */\nfunction add() {}", "/**\n * Adds.\n */\n", "function add() {}"},
		{"python", "# Adds.\ndef add():\n    pass", "# Adds.\n", "def add():\n    pass"},
		{"none", "func F() {}", "", "func F() {}"},
		{"all comment", "// only\n", "// only\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc, code := splitDoc(tt.content)
			require.Equal(t, tt.doc, doc)
			require.Equal(t, tt.code, code)
		})
	}
}

func TestTuningNeedsPairs(t *testing.T) {
	root := t.TempDir()
	tree := termTree()
	for p, src := range tree { // no doc comment of four terms is left
		tree[p] = strings.NewReplacer("// Reap drops a sluggish peer.", "// Reap.", "// Evict closes sluggish clients.", "// Evict.",
			"// Kick is for sluggish readers.", "// Kick.", "// Shed ends sluggish writers.", "// Shed.", "// armTimer arms the timer.", "// armTimer.").Replace(src)
		tree[p] = regexp.MustCompile(`// F\d+ joins[^\n]*`).ReplaceAllString(tree[p], "")
	}
	writeTermTree(t, root, tree)
	m := openUpdated(t, root).termModel()
	require.NotNil(t, m)
	require.NotZero(t, m.Dim)
	require.Nil(t, m.Tuned, "no pairs, no tuned vectors")
	require.Nil(t, m.tuned())
}

func TestSearchWithTunedChunks(t *testing.T) {
	ix, _ := latentIndex(t)
	require.NotNil(t, ix.termModel().tuned())
	timer, bell := stopRanks(t, ix, WithLatentFileWeight(0), WithTunedChunks(true))
	require.Less(t, timer, bell, "the tuned vectors too put the definition beside the deadlines first")

	off, err := ix.Search(context.Background(), "halt sluggish", WithMode(BM25), WithTunedChunks(false))
	require.NoError(t, err)
	ix.termModel().Tuned = nil // a model that could not be tuned
	on, err := ix.Search(context.Background(), "halt sluggish", WithMode(BM25), WithTunedChunks(true))
	require.NoError(t, err)
	require.Equal(t, off, on, "without tuned vectors: the LSA ones")
}

func TestAModelTrainedBeforeTuningIsTrainedAgain(t *testing.T) {
	require.False(t, trainsAs("lsa-v2/128/0123456789abcdef", 128), "the fourth round's model")
	require.True(t, trainsAs(termModelID(128, nil), 128))
}
