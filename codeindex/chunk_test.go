package codeindex_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/codeindex"
)

const sampleGo = `// Package shop sells things.
package shop

import (
	"fmt"
)

// MaxItems bounds a cart.
const MaxItems = 10

var (
	_       = fmt.Sprint
	Default = Cart{}
)

// Cart holds items.
type Cart struct {
	Items []string
}

type (
	// ID names an item.
	ID string
	Price int
)

// Add puts an item in the cart.
func (c *Cart) Add(id ID) {
	c.Items = append(c.Items, string(id))
}

func (c Cart) Len() int { return len(c.Items) }

// Pair is generic.
type Pair[K comparable, V any] struct{ K K; V V }

func (p *Pair[K, V]) Swap() {}

// NewCart returns an empty cart.
//
// It never fails.
func NewCart() *Cart {
	return &Cart{}
}
`

type span struct {
	Symbol     string
	Kind       codeindex.Kind
	Start, End int
}

func spans(cs []codeindex.Chunk) []span {
	var out []span
	for _, c := range cs {
		out = append(out, span{c.Symbol, c.Kind, c.StartLine, c.EndLine})
	}
	return out
}

func TestChunkGoSplitsByDeclarationWithDocComments(t *testing.T) {
	chunks, err := codeindex.ChunkGo("shop/cart.go", []byte(sampleGo))
	require.NoError(t, err)
	want := []span{
		{"shop", codeindex.KindPackage, 1, 6},
		{"shop.MaxItems", codeindex.KindConst, 8, 9},
		{"shop.Default", codeindex.KindVar, 11, 14},
		{"shop.Cart", codeindex.KindType, 16, 19},
		{"shop.ID", codeindex.KindType, 22, 23},
		{"shop.Price", codeindex.KindType, 24, 24},
		{"shop.(*Cart).Add", codeindex.KindMethod, 27, 30},
		{"shop.Cart.Len", codeindex.KindMethod, 32, 32},
		{"shop.Pair", codeindex.KindType, 34, 35},
		{"shop.(*Pair).Swap", codeindex.KindMethod, 37, 37},
		{"shop.NewCart", codeindex.KindFunc, 39, 44},
	}
	require.Empty(t, cmp.Diff(want, spans(chunks)))
}

func TestChunkGoContentIsTheSpannedLines(t *testing.T) {
	chunks, err := codeindex.ChunkGo("shop/cart.go", []byte(sampleGo))
	require.NoError(t, err)
	lines := strings.Split(sampleGo, "\n")
	for _, c := range chunks {
		require.Equal(t, strings.Join(lines[c.StartLine-1:c.EndLine], "\n"), c.Content, c.Symbol)
		require.Equal(t, "shop/cart.go", c.Path)
	}
	require.True(t, strings.HasPrefix(chunks[len(chunks)-1].Content, "// NewCart returns an empty cart."))
}

func TestChunkGoReportsParseError(t *testing.T) {
	_, err := codeindex.ChunkGo("bad.go", []byte("package x\nfunc {"))
	var pe *codeindex.ParseError
	require.True(t, errors.As(err, &pe))
	require.Equal(t, "bad.go", pe.Path)
}

func TestChunkLinesWindows(t *testing.T) {
	type window struct{ Start, End int }
	tests := []struct {
		name            string
		lines           int
		window, overlap int
		want            []window
	}{
		{"empty file has no chunk", 0, 4, 1, nil},
		{"short file is one chunk", 3, 4, 1, []window{{1, 3}}},
		{"exact fit is one chunk", 4, 4, 1, []window{{1, 4}}},
		{"overlapping windows end at the last line", 10, 4, 1, []window{{1, 4}, {4, 7}, {7, 10}}},
		{"last window may be short", 11, 4, 1, []window{{1, 4}, {4, 7}, {7, 10}, {10, 11}}},
		{"no overlap", 6, 3, 0, []window{{1, 3}, {4, 6}}},
		{"overlap clamped below window", 3, 2, 5, []window{{1, 2}, {2, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			for i := range tt.lines {
				b.WriteString("line ")
				b.WriteString(strings.Repeat("x", i))
				b.WriteString("\n")
			}
			chunks := codeindex.ChunkLines("notes.txt", []byte(b.String()), tt.window, tt.overlap)
			var got []window
			for _, c := range chunks {
				require.Equal(t, codeindex.KindLines, c.Kind)
				require.Equal(t, c.EndLine-c.StartLine+1, strings.Count(c.Content, "\n")+1)
				got = append(got, window{c.StartLine, c.EndLine})
			}
			require.Empty(t, cmp.Diff(tt.want, got, cmpopts.EquateEmpty()))
		})
	}
}

func TestChunkGoHeadsAreDefinitionsDocCommentsAndDeclarations(t *testing.T) {
	chunks, err := codeindex.ChunkGo("shop/cart.go", []byte(sampleGo))
	require.NoError(t, err)
	got := map[string]string{}
	for _, c := range chunks {
		got[c.Symbol] = c.Head
		require.True(t, strings.HasPrefix(c.Content, c.Head), c.Symbol)
	}
	want := map[string]string{
		"shop":              "",
		"shop.MaxItems":     "",
		"shop.Default":      "",
		"shop.Cart":         "// Cart holds items.\ntype Cart struct {",
		"shop.ID":           "\t// ID names an item.\n\tID string",
		"shop.Price":        "\tPrice int",
		"shop.(*Cart).Add":  "// Add puts an item in the cart.\nfunc (c *Cart) Add(id ID) {",
		"shop.Cart.Len":     "func (c Cart) Len() int { return len(c.Items) }",
		"shop.Pair":         "// Pair is generic.\ntype Pair[K comparable, V any] struct{ K K; V V }",
		"shop.(*Pair).Swap": "func (p *Pair[K, V]) Swap() {}",
		"shop.NewCart":      "// NewCart returns an empty cart.\n//\n// It never fails.\nfunc NewCart() *Cart {",
	}
	require.Empty(t, cmp.Diff(want, got))
}
