package llm

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// DefaultHashingDim is the dimension of [HashingEmbedder] vectors when
// none is given.
const DefaultHashingDim = 512

// HashingEmbedder is the offline [Embedder]: it needs no model, no network
// and no key, and embeds a text the same way on every machine and every
// run. It lower-cases the text, splits it into words (runs of letters and
// digits), and hashes each word and each character trigram of the word
// (with its boundaries marked, so "cat" yields "^ca", "cat", "at$") into
// one of Dims buckets with a sign taken from the hash; words weigh 1,
// trigrams 0.5. The vector is then L2-normalised, so a dot product is a
// cosine similarity; a text without words embeds as all zeros.
//
// Texts sharing words are close, and so, through the trigrams, are texts
// sharing word stems ("embedding", "embeddings") or with a typo. It does
// not know synonyms or meaning: use it for tests, examples and programs
// that must run offline, and a model's embedder ([NewEmbedder]) for real
// semantic search. The zero value embeds with [DefaultHashingDim]
// dimensions; it is safe for concurrent use.
type HashingEmbedder struct {
	dim int
}

var _ Embedder = (*HashingEmbedder)(nil)

// NewHashingEmbedder returns the offline hashing embedder with vectors of
// dim dimensions, or [DefaultHashingDim] if dim < 1.
func NewHashingEmbedder(dim int) *HashingEmbedder {
	return &HashingEmbedder{dim: dim}
}

// Dims returns the dimension of the vectors e returns.
func (e *HashingEmbedder) Dims() int {
	if e == nil || e.dim < 1 {
		return DefaultHashingDim
	}
	return e.dim
}

// Embed implements [Embedder]. It fails only if ctx is done.
func (e *HashingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	dim := e.Dims()
	out := make([][]float32, len(texts))
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("llm: hashing embedder: %w", err)
		}
		out[i] = hashText(text, dim)
	}
	return out, nil
}

// The weights of the features; "w:" and "g:" prefixes keep a word and a
// trigram with the same letters apart.
const (
	wordWeight    = 1.0
	trigramWeight = 0.5
)

func hashText(text string, dim int) []float32 {
	acc := make([]float64, dim)
	add := func(feature string, w float64) {
		h := fnv.New64a()
		h.Write([]byte(feature))
		sum := h.Sum64()
		if sum>>63 == 1 {
			w = -w
		}
		acc[(sum&(1<<63-1))%uint64(dim)] += w
	}
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		add("w:"+w, wordWeight)
		runes := []rune("^" + w + "$")
		for j := 0; j+3 <= len(runes); j++ {
			add("g:"+string(runes[j:j+3]), trigramWeight)
		}
	}
	var norm float64
	for _, x := range acc {
		norm += x * x
	}
	v := make([]float32, dim)
	if norm == 0 {
		return v
	}
	norm = math.Sqrt(norm)
	for j, x := range acc {
		v[j] = float32(x / norm)
	}
	return v
}
