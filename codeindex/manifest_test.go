package codeindex

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"
)

// sampleManifest has files with and without chunks, a path and a symbol
// outside ASCII, an empty symbol and numbers of every size and sign.
func sampleManifest() *manifest {
	m := newManifest()
	m.Embedder = "hashing-256+text-v3"
	m.TermModel = "terms-64-abcdef"
	m.TermsChanged = 3
	m.Files["a.go"] = &fileEntry{Hash: [32]byte{1, 2, 3}, Terms: 42, CommentTerms: 7, Chunks: []chunkMeta{
		{Symbol: "a", Kind: KindPackage, StartLine: 1, EndLine: 3},
		{Symbol: "a.Hello", Kind: KindFunc, StartLine: 5, EndLine: 1 << 30},
	}}
	m.Files["dir/ünï.py"] = &fileEntry{Hash: [32]byte{31: 0xff}, Terms: 0, Chunks: []chunkMeta{
		{Symbol: "", Kind: KindLines, StartLine: -1, EndLine: math.MaxInt},
		{Symbol: "ünï.Größe", Kind: KindMethod, StartLine: math.MinInt, EndLine: 0},
	}}
	m.Files["empty.txt"] = &fileEntry{Terms: 1, Chunks: []chunkMeta{}}
	return m
}

func TestManifestSavedIsLoadedTheSame(t *testing.T) {
	for name, m := range map[string]*manifest{"sample": sampleManifest(), "empty": newManifest()} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), manifestFile)
			require.NoError(t, m.save(path))
			got, err := loadManifest(path)
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(m, got, cmpopts.EquateEmpty()))
			require.Equal(t, m.encode(), got.encode(), "one manifest, one encoding")
			for rel, e := range got.Files {
				require.Equal(t, len(e.Chunks), cap(e.Chunks), "%s: an append to its chunks would write over another file's", rel)
			}
			entries, err := os.ReadDir(filepath.Dir(path))
			require.NoError(t, err)
			require.Len(t, entries, 1, "no temporary file is left")
		})
	}
}

func TestLoadManifestOfNoFileIsEmpty(t *testing.T) {
	m, err := loadManifest(filepath.Join(t.TempDir(), manifestFile))
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(newManifest(), m))
}

func TestLoadManifestOfAnotherVersionIsOld(t *testing.T) {
	m := sampleManifest()
	m.Version = manifestVersion - 1
	path := filepath.Join(t.TempDir(), manifestFile)
	require.NoError(t, m.save(path))
	_, err := loadManifest(path)
	require.ErrorIs(t, err, errOldVersion)
	var ce *CorruptError
	require.NotErrorAs(t, err, &ce, "a folder of another version is rebuilt, not refused")
}

// manifestBody builds the bytes of a manifest file by hand, up to its
// checksum: the header of the current version, then fields.
type manifestBody []byte

func newManifestBody(embedder, termModel string, termsChanged int) manifestBody {
	b := manifestBody(manifestMagic)
	return b.int(manifestVersion).str(embedder).str(termModel).int(termsChanged)
}

func (b manifestBody) uint(v uint64) manifestBody { return binary.AppendUvarint(b, v) }
func (b manifestBody) int(v int) manifestBody     { return binary.AppendVarint(b, int64(v)) }
func (b manifestBody) str(s string) manifestBody  { return append(b.uint(uint64(len(s))), s...) }
func (b manifestBody) raw(p ...byte) manifestBody { return append(b, p...) }

// file appends a file's path, hash, terms and comment terms (as many as
// terms), and its chunk count.
func (b manifestBody) file(rel string, terms int, chunks uint64) manifestBody {
	return b.str(rel).raw(make([]byte, sha256.Size)...).int(terms).int(terms).uint(chunks)
}

func (b manifestBody) chunk(sym string, kind Kind, from, to int) manifestBody {
	return b.str(sym).str(string(kind)).int(from).int(to)
}

// sealed appends the checksum: the file then passes it, and what is
// wrong in it must be found by the decoding.
func (b manifestBody) sealed() []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func TestLoadManifestReportsADamagedFile(t *testing.T) {
	good := sampleManifest().encode()
	var legacy []byte
	{
		path := filepath.Join(t.TempDir(), "gob")
		f, err := os.Create(path)
		require.NoError(t, err)
		require.NoError(t, gob.NewEncoder(f).Encode(sampleManifest()))
		require.NoError(t, f.Close())
		legacy, err = os.ReadFile(path)
		require.NoError(t, err)
	}
	huge := uint64(math.MaxUint64)
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"magic only", []byte(manifestMagic)},
		{"gob of the version before", legacy},
		{"header without checksum", newManifestBody("e", "t", 0)},
		{"half", good[:len(good)/2]},
		{"checksum cut", good[:len(good)-1]},
		{"a byte more", append(good[:len(good):len(good)], 0)},
		{"garbled in the middle", func() []byte {
			b := append([]byte(nil), good...)
			b[len(b)/2] ^= 0x40
			return b
		}()},
		{"garbled checksum", func() []byte {
			b := append([]byte(nil), good...)
			b[len(b)-1] ^= 1
			return b
		}()},
		{"version overflows", manifestBody(manifestMagic).raw(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)},
		{"huge string length", manifestBody(manifestMagic).int(manifestVersion).uint(huge).sealed()},
		{"string longer than the file", manifestBody(manifestMagic).int(manifestVersion).uint(1000).raw('x').sealed()},
		{"huge file count", newManifestBody("e", "t", 0).uint(huge).uint(0).sealed()},
		{"file count beyond the end", newManifestBody("e", "t", 0).uint(3).uint(0).file("a", 0, 0).sealed()},
		{"huge chunk count", newManifestBody("e", "t", 0).uint(1).uint(huge).file("a", 0, 0).sealed()},
		{"file with more chunks than the total", newManifestBody("e", "t", 0).uint(1).uint(1).
			file("a", 0, 2).chunk("x", KindFunc, 1, 2).chunk("y", KindFunc, 3, 4).sealed()},
		{"fewer chunks than the total", newManifestBody("e", "t", 0).uint(1).uint(2).
			file("a", 0, 1).chunk("x", KindFunc, 1, 2).raw(0, 0, 0, 0).sealed()},
		{"line overflows", newManifestBody("e", "t", 0).uint(1).uint(1).
			file("a", 0, 1).str("x").str("func").raw(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01).raw(0).sealed()},
		{"hash cut", newManifestBody("e", "t", 0).uint(1).uint(0).str("a").raw(1, 2, 3).sealed()},
		{"file listed twice", newManifestBody("e", "t", 0).uint(2).uint(0).file("a", 0, 0).file("a", 0, 0).sealed()},
		{"bytes after the last file", newManifestBody("e", "t", 0).uint(1).uint(0).file("a", 0, 0).raw(7).sealed()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), manifestFile)
			require.NoError(t, os.WriteFile(path, tt.data, 0o644))
			_, err := loadManifest(path)
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, path, ce.File)
		})
	}
}

// Every cut of a manifest file, and every flipped bit after its version,
// is refused with an error other than errOldVersion (which loadManifest
// turns into a *CorruptError): never a panic, never a manifest. A garbled
// version reads as another version, and the folder is rebuilt.
func TestDecodeManifestRefusesEveryCutAndGarbledByte(t *testing.T) {
	good := sampleManifest().encode()
	header := len(manifestMagic) + 1 // the version is one byte
	for n := range len(good) {
		_, err := decodeManifest(good[:n])
		require.Error(t, err, "cut at %d of %d", n, len(good))
		require.NotErrorIs(t, err, errOldVersion, "cut at %d", n)
	}
	for i := header; i < len(good); i++ {
		for _, bit := range []byte{0x01, 0x80} {
			b := append([]byte(nil), good...)
			b[i] ^= bit
			_, err := decodeManifest(b)
			require.Error(t, err, "byte %d ^ %#x", i, bit)
			require.NotErrorIs(t, err, errOldVersion, "byte %d ^ %#x", i, bit)
		}
	}
}

// An index folder of a version whose manifest was legacyManifestFile (gob)
// is rebuilt by the next Update, and the old file is removed.
func TestAFolderWithAGobManifestIsRebuilt(t *testing.T) {
	root, ix := helloIndex(t)
	dir := ix.dir
	require.NoError(t, ix.Close())
	legacy := filepath.Join(dir, legacyManifestFile)
	f, err := os.Create(legacy)
	require.NoError(t, err)
	require.NoError(t, gob.NewEncoder(f).Encode(ix.man))
	require.NoError(t, f.Close())
	require.NoError(t, os.Remove(filepath.Join(dir, manifestFile)))

	ix, err = Open(t.Context(), root)
	require.NoError(t, err)
	defer ix.Close()
	require.NoFileExists(t, legacy)
	st, err := ix.Update(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, st.Added, "every file is indexed again")
	hits, err := ix.Search(t.Context(), "greets", WithMode(BM25))
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	require.Equal(t, "a.Hello", hits[0].Symbol)
}

// FuzzDecodeManifest checks that no input makes the decoding panic, and
// that what it accepts is decoded the same from its own encoding. Each
// input is decoded as it is and with its checksum appended, so that the
// fuzzing reaches the fields behind the checksum.
func FuzzDecodeManifest(f *testing.F) {
	body := func(m *manifest) []byte { b := m.encode(); return b[:len(b)-crcSize] }
	f.Add(body(sampleManifest()))
	f.Add(body(newManifest()))
	f.Add([]byte(newManifestBody("e", "t", 0).uint(1).uint(1).file("a", 0, 1).chunk("x", KindFunc, 1, 2)))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, manifestBody(slices.Clone(data)).sealed()} {
			m, err := decodeManifest(in)
			if err != nil {
				continue
			}
			again, err := decodeManifest(m.encode())
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(m, again, cmpopts.EquateEmpty()))
		}
	})
}

func TestADecodedManifestIsTheManifestOfAnyCopyOfItsData(t *testing.T) {
	data := sampleManifest().encode()
	want, err := decodeManifest(slices.Clone(data))
	require.NoError(t, err)
	got, err := decodeManifest(data)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, data, got.encode())
}
