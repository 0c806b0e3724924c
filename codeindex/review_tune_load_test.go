//go:build unix

package codeindex

// Review attacks on loadTermModel, which now maps terms.bin: damaged and
// truncated files, lying length fields, a file changed after the load, a
// symlink or a directory at its path.

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// reviewTunedModelFile writes a small tuned model to a temporary
// terms.bin and returns its path, content and id.
func reviewTunedModelFile(t *testing.T) (string, []byte, string) {
	t.Helper()
	defs := append(reviewFiller(200), reviewDocumented(150)...)
	var c termCounter
	var pc pairCounter
	var fc fileTermCounter
	for i, d := range defs {
		c.add(d.symbol + "\n" + d.content)
		pc.add(&c, d.symbol, d.content)
		if i%10 == 0 {
			fc.add(filepath.ToSlash(filepath.Join("dir", d.symbol+".go")), []byte(d.content))
		}
	}
	docs := len(c.docs)
	m, err := c.train(context.Background(), defaultTermTraining(DefaultTermModelDim))
	require.NoError(t, err)
	m.Tuned, err = m.tune(context.Background(), &c, &pc, docs, defaultTuning())
	require.NoError(t, err)
	require.NotNil(t, m.Tuned)
	m.setFiles(&fc)
	require.NotEmpty(t, m.Files)
	data, id := m.encode(DefaultTermModelDim)
	path := filepath.Join(t.TempDir(), termModelFile)
	require.NoError(t, saveTermModel(path, data))
	return path, data, id
}

// reviewTunedCountAt returns the offset of the tuned block's length field
// in data, a model file of id (see termLayoutOf).
func reviewTunedCountAt(t *testing.T, path, id string, data []byte) int {
	t.Helper()
	at := termLayoutOf(t, path, id, data).tunedCount
	require.Equal(t, uint32(termLayoutOf(t, path, id, data).tuned), binary.LittleEndian.Uint32(data[at:]))
	return at
}

func TestReviewTuneModelFileCutAtEveryByteIsRefused(t *testing.T) {
	path, data, id := reviewTunedModelFile(t)
	// Every byte near the ends and around the tuned block's length; every
	// 7th between (each write and map costs).
	at := reviewTunedCountAt(t, path, id, data)
	for n := 0; n < len(data); n++ {
		if n > 256 && n < len(data)-256 && (n < at-16 || n > at+16) && n%7 != 0 {
			continue
		}
		require.NoError(t, os.WriteFile(path, data[:n], 0o644))
		m, err := loadTermModel(path, id)
		require.ErrorIs(t, err, errStaleTermModel, "cut at %d of %d", n, len(data))
		require.Nil(t, m)
	}
	require.NoError(t, os.WriteFile(path, append(append([]byte(nil), data...), 0), 0o644))
	_, err := loadTermModel(path, id)
	require.ErrorIs(t, err, errStaleTermModel, "a byte too many")
}

func TestReviewTuneLyingTunedLengthIsRefusedWithoutAGiantAllocation(t *testing.T) {
	path, data, id := reviewTunedModelFile(t)
	at := reviewTunedCountAt(t, path, id, data)
	tuned := binary.LittleEndian.Uint32(data[at:])
	for _, lie := range []uint32{math.MaxUint32, math.MaxUint32 / 4, 1 << 30, tuned + 1, tuned - 1, 1} {
		bad := append([]byte(nil), data...)
		binary.LittleEndian.PutUint32(bad[at:], lie)
		require.NoError(t, os.WriteFile(path, bad, 0o644))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := loadTermModel(path, id)
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, errStaleTermModel, "tuned length %d", lie)
		require.Nil(t, m)
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4*len(data)+1<<20), "allocated for tuned length %d", lie)
	}
}

func TestReviewTuneLyingCountsAreRefusedWithoutAGiantAllocation(t *testing.T) {
	path, data, id := reviewTunedModelFile(t)
	// The dimension, the number of terms; the number of files follows the
	// IDF, whose offset the loaded model tells.
	lay := termLayoutOf(t, path, id, data)
	head, filesAt := lay.head, lay.files
	require.Equal(t, uint32(lay.nFiles), binary.LittleEndian.Uint32(data[filesAt:]))
	for _, field := range []struct {
		name string
		at   int
	}{{"dim", head}, {"terms", head + 4}, {"files", filesAt}} {
		for _, lie := range []uint32{math.MaxUint32, 1 << 31, 1 << 28, 0} {
			bad := append([]byte(nil), data...)
			binary.LittleEndian.PutUint32(bad[field.at:], lie)
			require.NoError(t, os.WriteFile(path, bad, 0o644))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			m, err := loadTermModel(path, id)
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, errStaleTermModel, "%s %d", field.name, lie)
			require.Nil(t, m)
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4*len(data)+1<<20), "allocated for %s %d", field.name, lie)
		}
	}
}

func TestReviewTuneNaNOrInfInTheTunedBlockIsRefused(t *testing.T) {
	path, data, id := reviewTunedModelFile(t)
	at := termLayoutOf(t, path, id, data).tunedAt
	for _, bits := range []uint32{0x7fc00000, 0xffc00001, 0x7f800000, 0xff800000, 0x7f800001} {
		bad := append([]byte(nil), data...)
		binary.LittleEndian.PutUint32(bad[len(bad)-4:], bits)
		binary.LittleEndian.PutUint32(bad[at:], bits)
		require.NoError(t, os.WriteFile(path, bad, 0o644))
		_, err := loadTermModel(path, id)
		require.ErrorIs(t, err, errStaleTermModel, "bits %#x", bits)
	}
	// Subnormals, zeros and the largest finite float are numbers.
	for _, bits := range []uint32{0x00000001, 0x80000000, 0x7f7fffff, 0xff7fffff} {
		bad := append([]byte(nil), data...)
		binary.LittleEndian.PutUint32(bad[at:], bits)
		require.NoError(t, os.WriteFile(path, bad, 0o644))
		_, err := loadTermModel(path, id)
		require.NoError(t, err, "bits %#x", bits)
	}
}

func TestReviewTuneLoadedModelOutlivesItsFile(t *testing.T) {
	// Nothing of a model loaded from a version 2 file may point into the
	// mapping: the file is overwritten in place (a MAP_SHARED mapping would
	// show it), then truncated (touching a mapped page past the end raises
	// SIGBUS). A version 3 file's floats are used in place (see
	// loadTermModel), so it is only ever replaced by a rename: see
	// TestTermModelInPlaceOutlivesItsFileReplaced.
	path, data3, id3 := reviewTunedModelFile(t)
	m3, err := loadTermModel(path, id3)
	require.NoError(t, err)
	data, id := encodeTermModelV2(m3, DefaultTermModelDim)
	require.NoError(t, m3.close())
	require.NoError(t, os.WriteFile(path, data, 0o644))
	m, err := loadTermModel(path, id)
	require.NoError(t, err)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(make([]byte, len(data)), 0)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(0))
	require.NoError(t, f.Close())
	again, _ := encodeTermModelV2(m, DefaultTermModelDim)
	require.Equal(t, data, again, "the model is the file as it was loaded")
	again3, _ := m.encode(DefaultTermModelDim)
	require.Equal(t, data3, again3, "and the version 3 file of the same model")
	for _, term := range m.Terms {
		require.NotEmpty(t, term)
	}
}

func TestReviewTuneModelFileIsUnmappedAfterTheLoad(t *testing.T) {
	// A version 2 file's floats are copied: no mapping is left after the
	// load. A version 3 file's are used in place until the model's close.
	path, _, id := reviewTunedModelFile(t)
	maps := func() string {
		b, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Skip("no /proc/self/maps")
		}
		return string(b)
	}
	m, err := loadTermModel(path, id)
	require.NoError(t, err)
	if littleEndian {
		require.Contains(t, maps(), path, "the version 3 model is mapped")
	}
	data, id2 := encodeTermModelV2(m, DefaultTermModelDim)
	require.NoError(t, m.close())
	require.NotContains(t, maps(), path, "no mapping of the model file is left after its close")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, err = loadTermModel(path, id2)
	require.NoError(t, err)
	require.NotContains(t, maps(), path, "no mapping of the version 2 file is left after the load")
}

func TestReviewTuneSymlinkedModelFileLoads(t *testing.T) {
	path, _, id := reviewTunedModelFile(t)
	link := filepath.Join(t.TempDir(), termModelFile)
	require.NoError(t, os.Symlink(path, link))
	m, err := loadTermModel(link, id)
	require.NoError(t, err)
	require.NotNil(t, m.Tuned)
}

func TestReviewTuneDirectoryAtTheModelPathIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), termModelFile)
	require.NoError(t, os.Mkdir(dir, 0o755))
	_, err := loadTermModel(dir, "lsa-tuned-v1/128/0123456789abcdef")
	require.Error(t, err)
}
