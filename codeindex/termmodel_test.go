package codeindex_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/codeindex"
)

// sluggishTree has four definitions whose doc comments say "sluggish"
// and whose bodies set a deadline, a fifth (armTimer) that sets a
// deadline and never says "sluggish", and unrelated definitions.
var sluggishTree = map[string]string{
	"netx/peers.go": `package netx

// Reap drops a sluggish peer.
func Reap(p *Peer) {
	p.SetDeadline(0)
}

// Evict closes sluggish clients.
func Evict(cl *Client) {
	cl.SetDeadline(0)
}

// Kick is for sluggish readers.
func Kick(r *Reader) {
	r.SetDeadline(0)
}

// Shed ends sluggish writers.
func Shed(w *Writer) {
	w.SetDeadline(0)
}

// armTimer arms the timer.
func armTimer(t *Timer) {
	t.SetDeadline(1)
}
`,
	"netx/misc.go": `package netx

// ParseColour reads a colour name.
func ParseColour(s string) Colour { return lookupColour(s) }

// SumPrices adds the prices of a basket.
func SumPrices(b Basket) int { return b.total() }

// Greet says hello to a guest.
func Greet(g Guest) string { return "hello " + g.name }

// Rotate turns an image a quarter.
func Rotate(img Image) Image { return img.turn() }

// CountWords counts the words of a text.
func CountWords(text string) int { return len(split(text)) }

// Brew makes coffee from beans.
func Brew(b Beans) Coffee { return grind(b) }

// Paint fills a canvas with a colour.
func Paint(c Canvas, col Colour) { c.fill(col) }

// Sort orders a list of names.
func Sort(names []string) { order(names) }
`,
}

// fillerWords make the unrelated definitions of withFiller.
var fillerWords = []string{"apple", "river", "stone", "cloud", "lamp", "garden", "violin", "rabbit", "copper", "meadow",
	"anchor", "pepper", "candle", "forest", "marble", "ribbon", "saddle", "tunnel", "walnut", "yellow",
	"basket", "cotton", "dragon", "harbor", "island", "jacket", "kettle", "lemon", "mirror", "needle"}

// withFiller returns tree and a file of 40 unrelated definitions, each
// saying three words of fillerWords in its doc comment and name: the
// term model needs a corpus of some size (see WithTermModel).
func withFiller(tree map[string]string) map[string]string {
	out := map[string]string{}
	for p, c := range tree {
		out[p] = c
	}
	var b strings.Builder
	b.WriteString("package filler\n")
	for i := range 40 {
		w := []string{fillerWords[i%30], fillerWords[(i*7+3)%30], fillerWords[(i*11+5)%30]}
		fmt.Fprintf(&b, "\n// F%d joins the %s and the %s with a %s.\nfunc F%d(%s, %s int) int { return %s }\n", i, w[0], w[1], w[2], i, w[0], w[1], w[2])
	}
	out["filler/filler.go"] = b.String()
	return out
}

func openIndexed(t *testing.T, root string, opts ...codeindex.Option) *codeindex.Index {
	t.Helper()
	ix, err := codeindex.Open(context.Background(), root, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	_, err = ix.Update(context.Background())
	require.NoError(t, err)
	return ix
}

func TestExpansionFindsTheDefinitionOfAnIdentifierTheQueryWordIsUsedBeside(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTree(t, root, withFiller(sluggishTree))
	ix := openIndexed(t, root)

	hits, err := ix.Search(ctx, "sluggish", codeindex.WithMode(codeindex.BM25), codeindex.WithExpansion(0))
	require.NoError(t, err)
	require.NotContains(t, symbols(hits), "netx.armTimer", "without expansion no word of the query is in armTimer")
	hits, err = ix.Search(ctx, "sluggish", codeindex.WithMode(codeindex.Vector), codeindex.WithLimit(4))
	require.NoError(t, err)
	require.NotContains(t, symbols(hits), "netx.armTimer", "the hashing embedder ranks the four definitions that say it first")

	for _, mode := range []codeindex.Mode{codeindex.BM25, codeindex.Hybrid} {
		hits, err = ix.Search(ctx, "sluggish", codeindex.WithMode(mode))
		require.NoError(t, err)
		require.Contains(t, symbols(hits), "netx.armTimer", "%v: the term model puts deadline beside sluggish", mode)
	}
}

func TestIndexWithoutTermModelDoesNotExpand(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, withFiller(sluggishTree))
	ix := openIndexed(t, root, codeindex.WithTermModel(0))
	hits, err := ix.Search(context.Background(), "sluggish", codeindex.WithMode(codeindex.BM25))
	require.NoError(t, err)
	require.NotContains(t, symbols(hits), "netx.armTimer")
	_, err = os.Stat(filepath.Join(ix.Dir(), "terms.bin"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestTermModelOptionsRejectBadValues(t *testing.T) {
	_, err := codeindex.Open(context.Background(), t.TempDir(), codeindex.WithTermModel(-1))
	var oe *codeindex.OptionError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "WithTermModel", oe.Option)

	root := t.TempDir()
	writeTree(t, root, withFiller(sluggishTree))
	ix := openIndexed(t, root)
	weights := []struct {
		option string
		with   func(float64) codeindex.SearchOption
	}{
		{"WithExpansion", codeindex.WithExpansion},
		{"WithLatentFileWeight", codeindex.WithLatentFileWeight},
		{"WithLatentChunkWeight", codeindex.WithLatentChunkWeight},
		{"WithCoverageWeight", codeindex.WithCoverageWeight},
		{"WithCommentWeight", codeindex.WithCommentWeight},
	}
	for _, w := range []float64{-1, math.NaN(), math.Inf(1)} {
		for _, o := range weights {
			_, err = ix.Search(context.Background(), "sluggish", o.with(w))
			require.ErrorAs(t, err, &oe)
			require.Equal(t, o.option, oe.Option, "%v", w)
		}
	}
}

func TestLatentWeightsZeroRankAsAnIndexWithoutTermModel(t *testing.T) {
	ctx := context.Background()
	tree := withFiller(sluggishTree)
	tree["netx/timer.go"] = "package netx\n\n// The deadline of a timer: a deadline set once is kept.\nfunc keep(t *Timer) { t.SetDeadline(2) }\n"
	with, without := t.TempDir(), t.TempDir()
	writeTree(t, with, tree)
	writeTree(t, without, tree)
	ixWith, ixWithout := openIndexed(t, with), openIndexed(t, without, codeindex.WithTermModel(0))
	for _, q := range []string{"sluggish", "sluggish timer", "deadline of a timer"} {
		for _, mode := range []codeindex.Mode{codeindex.BM25, codeindex.Hybrid} {
			a, err := ixWith.Search(ctx, q, codeindex.WithMode(mode), codeindex.WithExpansion(0), codeindex.WithLatentFileWeight(0), codeindex.WithLatentChunkWeight(0), codeindex.WithCoverageWeight(0), codeindex.WithCommentWeight(0))
			require.NoError(t, err)
			b, err := ixWithout.Search(ctx, q, codeindex.WithMode(mode))
			require.NoError(t, err)
			require.Equal(t, b, a, "%q, %v", q, mode)
		}
	}
}
