package codeindex

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"unsafe"
)

// manifestVersion changes whenever the layout of the index folder or the
// meaning of what it stores changes.
const manifestVersion = 8 // 2: the analyzer adds English stems; 3: the keyword index has a head field; 4: Python definitions have heads; 5: JavaScript and TypeScript files are chunked by definition; 6: every file has a file document (see fileDocID); 7: the manifest is manifestFile in the binary format of manifest.encode, no longer legacyManifestFile (gob); 8: file documents have a comments field (see commentText) and the manifest counts its terms

// errOldVersion is loadManifest's error for a manifest of another version:
// Open then rebuilds the folder (its keyword index was analysed another
// way).
var errOldVersion = errors.New("codeindex: index folder written by another version")

// manifest records what the index holds: per file, its content hash and its
// chunks. It is written last by Update, so it never claims more than the
// keyword and vector indexes hold.
type manifest struct {
	Version  int
	Embedder string // the vector space (see embedderID); "" before any vector
	Files    map[string]*fileEntry
	// TermModel names the term model in termModelFile (see termModelID);
	// "" when there is none. TermsChanged counts the files added, changed
	// or removed since it was trained.
	TermModel    string
	TermsChanged int
}

type fileEntry struct {
	Hash   [32]byte // SHA-256 of the content
	Chunks []chunkMeta
	Terms  int // how many terms the analyzer makes of the file's document (see fileText), for the file ranking's BM25
	// CommentTerms is how many terms the analyzer makes of the file's
	// comment text (see commentText), for the comment ranking's BM25 (see
	// WithCommentWeight).
	CommentTerms int
}

// chunkMeta is a chunk without its content, enough to answer a hit. The
// chunk's ID is not stored: the n-th chunk of the file rel has the ID
// chunkID(rel, n).
type chunkMeta struct {
	Symbol             string
	Kind               Kind
	StartLine, EndLine int
}

// chunkID is the ID of the n-th chunk (from 0) of the file rel, in both
// the keyword and the vector index: "rel#n".
func chunkID(rel string, n int) string { return rel + "#" + strconv.Itoa(n) }

// manifestMagic starts the manifest file (see manifest.encode).
const manifestMagic = "CIMAN\n"

// Least sizes in the manifest file, which bound the counts it declares
// before anything is allocated for them: a file's entry is at least its
// path's length, its hash, its terms and its chunk count; a chunk's is at
// least its symbol's and kind's lengths and its two lines.
const (
	minFileBytes  = 1 + sha256.Size + 1 + 1 + 1
	minChunkBytes = 4
	crcSize       = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func newManifest() *manifest {
	return &manifest{Version: manifestVersion, Files: map[string]*fileEntry{}}
}

// loadManifest reads the manifest at path: an empty one when there is no
// file, errOldVersion for a file of another version, a *CorruptError for
// one that cannot be decoded. The file is read at once and decoded in
// one pass (see decodeManifest).
func loadManifest(path string) (*manifest, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newManifest(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("codeindex: load manifest: %w", err)
	}
	m, err := decodeManifest(data) // data is read for it alone
	if err != nil && !errors.Is(err, errOldVersion) {
		return nil, &CorruptError{File: path, Err: err}
	}
	return m, err
}

// encode returns the manifest in its file format. Integers are varints
// (encoding/binary: lengths and counts unsigned, other numbers signed),
// strings a length then their bytes:
//
//	"CIMAN\n" version
//	embedder termModel termsChanged
//	files chunks                      (the totals)
//	files × (path hash[32] terms commentTerms chunks
//	         chunks × (symbol kind startLine endLine))
//	CRC-32C of all the bytes before it, 4 bytes little-endian
//
// Files come in the order of their paths, chunks in their own order, so
// one manifest always encodes to the same bytes.
func (m *manifest) encode() []byte {
	paths := make([]string, 0, len(m.Files))
	chunks := 0
	size := len(manifestMagic) + 64 + len(m.Embedder) + len(m.TermModel)
	for rel, e := range m.Files {
		paths = append(paths, rel)
		chunks += len(e.Chunks)
		size += len(rel) + sha256.Size + 20
		for _, c := range e.Chunks {
			size += len(c.Symbol) + len(c.Kind) + 8
		}
	}
	slices.Sort(paths)
	b := make([]byte, 0, size+crcSize)
	str := func(s string) { b = append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	b = append(b, manifestMagic...)
	b = binary.AppendVarint(b, int64(m.Version))
	str(m.Embedder)
	str(m.TermModel)
	b = binary.AppendVarint(b, int64(m.TermsChanged))
	b = binary.AppendUvarint(b, uint64(len(paths)))
	b = binary.AppendUvarint(b, uint64(chunks))
	for _, rel := range paths {
		e := m.Files[rel]
		str(rel)
		b = append(b, e.Hash[:]...)
		b = binary.AppendVarint(b, int64(e.Terms))
		b = binary.AppendVarint(b, int64(e.CommentTerms))
		b = binary.AppendUvarint(b, uint64(len(e.Chunks)))
		for _, c := range e.Chunks {
			str(c.Symbol)
			str(string(c.Kind))
			b = binary.AppendVarint(b, int64(c.StartLine))
			b = binary.AppendVarint(b, int64(c.EndLine))
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeManifest decodes a manifest file (see manifest.encode), or
// returns errOldVersion when it is of another version, and another error
// when it is damaged: too short, of another format, its checksum wrong,
// a length or count beyond its end. It takes data, which nothing may
// change afterwards: every string of the manifest is a slice of it (a
// cold search's Open spent ~10 ms copying a large one), the chunks of
// all files are one slice, the file entries another.
func decodeManifest(data []byte) (*manifest, error) {
	if len(data) < len(manifestMagic) || string(data[:len(manifestMagic)]) != manifestMagic {
		return nil, errors.New("not a manifest file")
	}
	r := manifestReader{b: data, off: len(manifestMagic)}
	version := r.int()
	if r.err != nil {
		return nil, r.err
	}
	if version != manifestVersion {
		return nil, errOldVersion
	}
	if len(data) < r.off+crcSize {
		return nil, errTruncated
	}
	end := len(data) - crcSize
	if crc32.Checksum(data[:end], castagnoli) != binary.LittleEndian.Uint32(data[end:]) {
		return nil, errors.New("checksum mismatch")
	}
	r.b, r.s = data[:end], unsafe.String(unsafe.SliceData(data), end)
	m := &manifest{Version: version}
	m.Embedder = r.str()
	m.TermModel = r.str()
	m.TermsChanged = r.int()
	nFiles := r.count(minFileBytes)
	nChunks := r.count(minChunkBytes)
	if r.err != nil {
		return nil, r.err
	}
	m.Files = make(map[string]*fileEntry, nFiles)
	entries := make([]fileEntry, nFiles)
	all := make([]chunkMeta, nChunks)
	used := 0
	for i := range entries {
		e := &entries[i]
		rel := r.str()
		r.hash(&e.Hash)
		e.Terms = r.int()
		e.CommentTerms = r.int()
		n := r.count(minChunkBytes)
		if r.err != nil {
			return nil, r.err
		}
		if n > nChunks-used {
			return nil, fmt.Errorf("file %q: %d chunks, more than the %d left of the total", rel, n, nChunks-used)
		}
		// Capped: an append to one file's chunks never writes over the next file's.
		e.Chunks = all[used : used+n : used+n]
		used += n
		for j := range e.Chunks {
			c := &e.Chunks[j]
			c.Symbol = r.str()
			c.Kind = Kind(r.str())
			c.StartLine = r.int()
			c.EndLine = r.int()
		}
		if r.err != nil {
			return nil, r.err
		}
		if _, dup := m.Files[rel]; dup {
			return nil, fmt.Errorf("file %q listed twice", rel)
		}
		m.Files[rel] = e
	}
	switch {
	case used != nChunks:
		return nil, fmt.Errorf("%d chunks in the files, %d in the total", used, nChunks)
	case r.off != end:
		return nil, fmt.Errorf("%d bytes after the last file", end-r.off)
	}
	return m, nil
}

// errTruncated is decodeManifest's error for a file that ends too soon.
var errTruncated = errors.New("truncated")

// manifestReader reads the fields of a manifest file from b, whose copy
// s the strings it reads are slices of. Its first error stops it: every
// later read returns a zero value, and err keeps that error.
type manifestReader struct {
	b   []byte
	s   string
	off int
	err error
}

func (r *manifestReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.err = errTruncated
		return 0
	case n < 0:
		r.err = fmt.Errorf("varint at byte %d overflows", r.off)
		return 0
	}
	r.off += n
	return v
}

// int reads a signed varint that fits an int.
func (r *manifestReader) int() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	switch {
	case n == 0:
		r.err = errTruncated
		return 0
	case n < 0 || v < math.MinInt || v > math.MaxInt:
		r.err = fmt.Errorf("varint at byte %d overflows", r.off)
		return 0
	}
	r.off += n
	return int(v)
}

// count reads a length or count of things at least least bytes each,
// which must fit in the bytes left.
func (r *manifestReader) count(least int) int {
	at := r.off
	v := r.uvarint()
	if r.err != nil {
		return 0
	}
	if v > uint64(len(r.b)-r.off)/uint64(least) {
		r.err = fmt.Errorf("count %d at byte %d is beyond the end of the file", v, at)
		return 0
	}
	return int(v)
}

func (r *manifestReader) str() string {
	n := r.count(1)
	if r.err != nil {
		return ""
	}
	s := r.s[r.off : r.off+n]
	r.off += n
	return s
}

func (r *manifestReader) hash(h *[32]byte) {
	if r.err != nil {
		return
	}
	if len(r.b)-r.off < len(h) {
		r.err = errTruncated
		return
	}
	r.off += copy(h[:], r.b[r.off:])
}

// save writes the manifest to path atomically: to a temporary file in the
// same folder, renamed over path.
func (m *manifest) save(path string) error {
	err := writeFileAtomic(path, ".manifest-*", func(f *os.File) error {
		_, err := f.Write(m.encode())
		return err
	})
	if err != nil {
		return fmt.Errorf("codeindex: save manifest: %w", err)
	}
	return nil
}
