package codeindex

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
)

// An Embedder turns texts into vectors, one per text and all of the same
// dimension. Implementations must be safe for concurrent use.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// An EmbedderIdentifier is an [Embedder] that names its vector space. The
// index records the name and re-embeds every chunk when it changes; an
// embedder without a name is identified by its Go type.
type EmbedderIdentifier interface {
	EmbedderID() string
}

// DefaultHashingDim is the dimension of [HashingEmbedder] vectors when none
// is given.
const DefaultHashingDim = 256

// HashingEmbedder is the offline embedder: it needs no model and no network.
// It hashes the analyzer's [Tokens] of a text, and the character trigrams of
// each token, into a fixed-dimension vector (the hashing trick, with a hashed
// sign), then L2-normalises it. Texts that share identifiers or parts of
// identifiers land close together; it knows no synonyms, so it is a lexical
// baseline, not a semantic model. The zero value uses [DefaultHashingDim].
type HashingEmbedder struct {
	// Dim is the vector dimension; zero means DefaultHashingDim.
	Dim int
}

// NewHashingEmbedder returns the offline hashing embedder with vectors of
// dimension dim (DefaultHashingDim if dim is not positive).
func NewHashingEmbedder(dim int) HashingEmbedder {
	if dim <= 0 {
		dim = DefaultHashingDim
	}
	return HashingEmbedder{Dim: dim}
}

func (e HashingEmbedder) dim() int {
	if e.Dim <= 0 {
		return DefaultHashingDim
	}
	return e.Dim
}

// EmbedderID names the vector space: the scheme and the dimension.
func (e HashingEmbedder) EmbedderID() string {
	return fmt.Sprintf("offline-hashing-trigram-v2/%d", e.dim()) // v2: tokens carry English stems
}

// Embed returns one L2-normalised vector per text; a text without tokens
// gives the zero vector. It fails only when ctx is done.
func (e HashingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("codeindex: hashing embedder: %w", err)
			}
		}
		out[i] = e.embedOne(t)
	}
	return out, nil
}

func (e HashingEmbedder) embedOne(text string) []float32 {
	dim := e.dim()
	v := make([]float32, dim)
	h := fnv.New64a()
	addFeature := func(f string, w float32) {
		h.Reset()
		h.Write([]byte(f))
		sum := h.Sum64()
		idx := int(sum % uint64(dim))
		if sum>>63 == 1 {
			w = -w
		}
		v[idx] += w
	}
	for _, tok := range Tokens(text) {
		addFeature("w:"+tok, 1)
		padded := []rune("^" + tok + "$")
		for k := 0; k+3 <= len(padded); k++ {
			addFeature("g:"+string(padded[k:k+3]), 0.5)
		}
	}
	normalize(v)
	return v
}

// normalize scales v to unit length in place; the zero vector stays zero.
func normalize(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(ss))
	for i := range v {
		v[i] *= inv
	}
}

// embedderID names the vector space of e (see [EmbedderIdentifier]).
func embedderID(e Embedder) string {
	if id, ok := e.(EmbedderIdentifier); ok {
		return id.EmbedderID()
	}
	return fmt.Sprintf("%T", e)
}
