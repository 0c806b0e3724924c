package deltas

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
)

// DefaultFanout is the fanout used when a saver is not configured
// otherwise.
const DefaultFanout = 16

// Blob is one stored version of a channel value.
type Blob struct {
	// Version is the channel version the blob stores.
	Version int64
	// Delta reports whether Data is a delta against Base; otherwise Data is
	// the whole value.
	Delta bool
	// Base is the version Data applies to (0 for a whole value).
	Base int64
	// Depth is the number of appends since the last whole value of the run
	// (0 for a whole value).
	Depth int64
	// Size is the length of the whole value in bytes.
	Size int64
	// Hash is the SHA-256 of the whole value. It lets [Encode] check that
	// a new value extends this one without reading this one back.
	Hash [sha256.Size]byte
	// Data is the whole value, or the bytes that replace the base's closing
	// bracket.
	Data []byte
}

// ErrCorrupt is wrapped by [Decode] errors for a chain of blobs that does not
// lead from a whole value to the requested version, or that does not
// rebuild the value its sizes and hash record.
var ErrCorrupt = errors.New("deltas: corrupt blob chain")

// Decode returns the value of the deepest blob of path, which must hold that
// blob and every blob its chain of bases leads to, down to a whole value, in
// any order.
//
// Decode trusts nothing it is given: it checks the chain's links, and that
// each version rebuilds to its recorded size, before it allocates (so it
// never allocates more than the blobs' data can produce), and that the
// value it rebuilds has the deepest blob's hash.
func Decode(path []Blob) ([]byte, error) {
	if len(path) == 0 {
		return nil, fmt.Errorf("%w: empty path", ErrCorrupt)
	}
	path = sortPath(path)
	root := path[0]
	if root.Delta || root.Depth != 0 {
		return nil, fmt.Errorf("%w: version %d: chain does not start at a whole value", ErrCorrupt, root.Version)
	}
	size := int64(len(root.Data))
	if size != root.Size {
		return nil, fmt.Errorf("%w: version %d: %d bytes, want %d", ErrCorrupt, root.Version, size, root.Size)
	}
	for i := 1; i < len(path); i++ {
		b, base := path[i], path[i-1]
		if !b.Delta || b.Base != base.Version {
			return nil, fmt.Errorf("%w: version %d does not follow version %d", ErrCorrupt, b.Version, base.Version)
		}
		// The base's value ends with the last byte of its blob's data
		// (a delta's data is never empty).
		if len(base.Data) == 0 || base.Data[len(base.Data)-1] != ']' {
			return nil, fmt.Errorf("%w: version %d: base is not a JSON array", ErrCorrupt, b.Base)
		}
		if len(b.Data) == 0 {
			return nil, fmt.Errorf("%w: version %d: empty delta", ErrCorrupt, b.Version)
		}
		size += int64(len(b.Data)) - 1
		if size != b.Size {
			return nil, fmt.Errorf("%w: version %d: rebuilds %d bytes, want %d", ErrCorrupt, b.Version, size, b.Size)
		}
	}
	out := make([]byte, 0, size)
	out = append(out, root.Data...)
	for _, b := range path[1:] {
		out = append(out[:len(out)-1], b.Data...)
	}
	if leaf := path[len(path)-1]; sha256.Sum256(out) != leaf.Hash {
		return nil, fmt.Errorf("%w: version %d: value does not match its hash", ErrCorrupt, leaf.Version)
	}
	return out, nil
}

// AlwaysWhole reports whether [Encode] stores value whole whatever the
// channel's previous versions are: value is not a JSON array (its first
// byte is not '[' or its last not ']'), so it appends to no earlier value.
// A saver need not read the previous version's path to encode it.
func AlwaysWhole(value []byte) bool {
	return len(value) < 2 || value[0] != '[' || value[len(value)-1] != ']'
}

// Encode returns the blob that stores value as version, given prev, the
// decoding path (as for [Decode]) of the channel's previous stored version,
// or nil if there is none. Only the Version, Depth, Size and Hash of the
// blobs of prev are used, not their Data. Encode returns a delta when value
// appends to the previous value (see [Appends]) and a whole value
// otherwise. fanout < 2 disables deltas.
func Encode(version int64, value []byte, prev []Blob, fanout int) Blob {
	return EncodeFrom(Whole(version, value), value, prev, fanout)
}

// Whole returns the blob that stores value whole as version: what [Encode]
// returns when there is no previous version.
func Whole(version int64, value []byte) Blob {
	return Blob{Version: version, Size: int64(len(value)), Hash: sha256.Sum256(value), Data: value}
}

// EncodeFrom is [Encode] given whole, [Whole](version, value): a saver may
// hash a value before its write transaction, which then only encodes it
// against the path it reads.
func EncodeFrom(whole Blob, value []byte, prev []Blob, fanout int) Blob {
	version := whole.Version
	if len(prev) == 0 || fanout < 2 {
		return whole
	}
	prev = sortPath(prev)
	last := prev[len(prev)-1]
	if !extends(last.Size, last.Hash, value) {
		return whole
	}
	depth := last.Depth + 1
	target := BaseDepth(last.Depth, fanout)
	i := slices.IndexFunc(prev, func(b Blob) bool { return b.Depth == target })
	if i < 0 {
		return whole
	}
	base := prev[i]
	if base.Size < 2 || base.Size > int64(len(value)) {
		return whole
	}
	return Blob{
		Version: version,
		Delta:   true,
		Base:    base.Version,
		Depth:   depth,
		Size:    whole.Size,
		Hash:    whole.Hash,
		Data:    value[base.Size-1:],
	}
}

// Appends reports whether next is old with zero or more elements appended:
// old is a JSON array, next starts with old's bytes up to its closing
// bracket, and then either ends the same way or continues with a comma (or,
// for an empty old array, with anything) up to a closing bracket.
func Appends(old, next []byte) bool {
	return extends(int64(len(old)), sha256.Sum256(old), next)
}

// extends is [Appends] for an old value known by its size and hash.
func extends(size int64, hash [sha256.Size]byte, next []byte) bool {
	n := int(size)
	if n < 2 || int64(n) != size || len(next) < n || next[0] != '[' || next[len(next)-1] != ']' {
		return false
	}
	if len(next) != n && n != 2 && next[n-1] != ',' {
		return false
	}
	h := sha256.New()
	h.Write(next[:n-1])
	h.Write([]byte{']'})
	return bytes.Equal(h.Sum(nil), hash[:])
}

// BaseDepth returns the depth of the blob that the delta following a blob
// at depth d is taken against. When it is d itself, [Encode] needs only
// that blob, not its whole path.
func BaseDepth(d int64, fanout int) int64 {
	if fanout < 2 {
		return d
	}
	return d + 1 - jump(d+1, int64(fanout))
}

// jump returns the largest power of fanout dividing depth (depth > 0).
func jump(depth, fanout int64) int64 {
	j := int64(1)
	for j <= depth/fanout && depth%(j*fanout) == 0 {
		j *= fanout
	}
	return j
}

func sortPath(path []Blob) []Blob {
	if slices.IsSortedFunc(path, cmpDepth) {
		return path
	}
	path = slices.Clone(path)
	slices.SortFunc(path, cmpDepth)
	return path
}

func cmpDepth(a, b Blob) int {
	switch {
	case a.Depth < b.Depth:
		return -1
	case a.Depth > b.Depth:
		return 1
	}
	return 0
}
