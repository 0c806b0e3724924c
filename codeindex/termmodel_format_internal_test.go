package codeindex

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// encodeTermModelV2 is the version 2 encoding of m (see encode): the
// format before the floats were aligned, which is still read.
func encodeTermModelV2(m *termModel, dim int) (data []byte, id string) {
	payload := binary.LittleEndian.AppendUint32(nil, uint32(m.Dim))
	payload = binary.LittleEndian.AppendUint32(payload, uint32(len(m.Terms)))
	for _, t := range m.Terms {
		payload = binary.AppendUvarint(payload, uint64(len(t)))
		payload = append(payload, t...)
	}
	payload = appendFloats(payload, m.Vecs)
	payload = appendFloats(payload, m.IDF)
	payload = binary.LittleEndian.AppendUint32(payload, uint32(len(m.Files)))
	for _, f := range m.Files {
		payload = binary.AppendUvarint(payload, uint64(len(f.Path)))
		payload = append(payload, f.Path...)
		payload = append(payload, f.Hash[:]...)
	}
	payload = appendFloats(payload, m.FileVecs)
	payload = binary.LittleEndian.AppendUint32(payload, uint32(len(m.Tuned)))
	payload = appendFloats(payload, m.Tuned)
	id = termModelID(dim, payload)
	return append([]byte(termMagicV2+id+"\n"), payload...), id
}

// A termLayout is where the fields of a term model file are.
type termLayout struct {
	head       int // the payload: the dimension, then the number of terms
	files      int // the number of files
	nFiles     int
	tunedCount int // the number of tuned floats
	tuned      int
	tunedAt    int // the tuned floats
}

// termLayoutOf returns the layout of data, the model file at path of id,
// of either version.
func termLayoutOf(t *testing.T, path, id string, data []byte) termLayout {
	t.Helper()
	m, err := loadTermModel(path, id)
	require.NoError(t, err)
	defer m.close()
	v3 := string(data[:len(termMagic)]) == termMagic
	align := func(n int) int {
		if v3 {
			return alignUp(n, termAlign)
		}
		return n
	}
	var l termLayout
	l.head = align(len(termMagic) + len(id) + 1)
	p := l.head + 8
	for _, term := range m.Terms {
		p += len(binary.AppendUvarint(nil, uint64(len(term)))) + len(term)
	}
	p = align(p) + 4*len(m.Vecs)
	l.files = align(p) + 4*len(m.IDF)
	l.nFiles = len(m.Files)
	p = l.files + 4
	for _, f := range m.Files {
		p += len(binary.AppendUvarint(nil, uint64(len(f.Path)))) + len(f.Path) + 32
	}
	l.tunedCount = align(p) + 4*len(m.FileVecs)
	l.tuned = len(m.Tuned)
	l.tunedAt = align(l.tunedCount + 4)
	return l
}

func TestTermModelFormatV3BlocksAreAligned(t *testing.T) {
	path, data, id := reviewTunedModelFile(t)
	require.Equal(t, termMagic, string(data[:len(termMagic)]))
	l := termLayoutOf(t, path, id, data)
	require.Zero(t, l.head%termAlign, "the payload")
	require.Zero(t, l.tunedAt%termAlign, "the tuned floats")
	require.Len(t, data, l.tunedAt+4*l.tuned)
}
