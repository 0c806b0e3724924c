package sqlsaver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/deltas"
	"github.com/agentgraph/agentgraph/checkpoint/internal/jsonstring"
)

// EncodeColumns returns the metadata and versions columns of cp, as JSON:
// the bytes json.Marshal writes for cp.Metadata and for
// VersionMap(cp.Channels).
func EncodeColumns(cp *checkpoint.Checkpoint) (meta, versions []byte, err error) {
	meta, err = cp.Metadata.MarshalJSON()
	if err != nil {
		return nil, nil, fmt.Errorf("metadata: %w", err)
	}
	return meta, appendVersions(make([]byte, 0, 16+24*len(cp.Channels)), cp.Channels), nil
}

// appendVersions appends the JSON object of VersionMap(chs) to b, keys
// sorted as json.Marshal sorts a map's, without building the map: a
// channel named twice keeps its last version.
func appendVersions(b []byte, chs []checkpoint.Channel) []byte {
	var small [16]int
	order := small[:0]
	for i := range chs {
		order = append(order, i)
	}
	// Stable, so that of a name's entries the last stays last.
	slices.SortStableFunc(order, func(i, j int) int { return strings.Compare(chs[i].Name, chs[j].Name) })
	b = append(b, '{')
	first := true
	for k, i := range order {
		if k+1 < len(order) && chs[order[k+1]].Name == chs[i].Name {
			continue // a later entry of the same name wins
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = jsonstring.Append(b, chs[i].Name)
		b = append(b, ':')
		b = strconv.AppendInt(b, chs[i].Version, 10)
	}
	return append(b, '}')
}

// DecodeColumns completes t, scanned from a checkpoint row, with its
// metadata and versions columns. It also makes an empty frontier nil.
// Columns that do not decode as what [EncodeColumns] writes give a
// [*checkpoint.CorruptError] naming t.
func DecodeColumns(t *checkpoint.Tuple, meta, versions []byte) error {
	if len(t.Frontier) == 0 {
		t.Frontier = nil
	}
	if err := unmarshalObject(meta, &t.Metadata); err != nil {
		return Corrupt(t, fmt.Errorf("metadata: %w", err))
	}
	var vs map[string]int64
	if err := unmarshalObject(versions, &vs); err != nil {
		return Corrupt(t, fmt.Errorf("versions: %w", err))
	}
	t.Channels = channelsOf(vs)
	return nil
}

// unmarshalObject decodes b, which must be a JSON object, into v.
func unmarshalObject(b []byte, v any) error {
	if i := slices.IndexFunc(b, func(c byte) bool { return c != ' ' && c != '\t' && c != '\n' && c != '\r' }); i < 0 || b[i] != '{' {
		return errors.New("not a JSON object")
	}
	return json.Unmarshal(b, v)
}

// SetValues sets the value of every channel of t from paths (channel →
// blobs, as for [deltas.Decode]). A channel without a path, or whose path
// does not decode, gives a [*checkpoint.CorruptError] naming t.
func SetValues(t *checkpoint.Tuple, paths map[string][]deltas.Blob) error {
	for i := range t.Channels {
		ch := &t.Channels[i]
		path := paths[ch.Name]
		if len(path) == 0 {
			return Corrupt(t, fmt.Errorf("channel %q: value of version %d is missing", ch.Name, ch.Version))
		}
		leaf := path[0]
		for _, b := range path[1:] {
			if b.Depth > leaf.Depth {
				leaf = b
			}
		}
		if leaf.Version != ch.Version {
			return Corrupt(t, fmt.Errorf("channel %q: the blobs read for version %d end at version %d", ch.Name, ch.Version, leaf.Version))
		}
		v, err := deltas.Decode(path)
		if err != nil {
			return Corrupt(t, fmt.Errorf("channel %q version %d: %w", ch.Name, ch.Version, err))
		}
		ch.Value = v
	}
	return nil
}

// Corrupt returns a [*checkpoint.CorruptError] naming t's checkpoint, for
// stored data of it that cannot be read back.
func Corrupt(t *checkpoint.Tuple, err error) *checkpoint.CorruptError {
	return CorruptRef(checkpoint.Ref{ThreadID: t.ThreadID, Namespace: t.Namespace, ID: t.ID}, err)
}

// CorruptRef returns a [*checkpoint.CorruptError] naming the checkpoint
// ref, for stored data of it that cannot be read back.
func CorruptRef(ref checkpoint.Ref, err error) *checkpoint.CorruptError {
	return &checkpoint.CorruptError{ThreadID: ref.ThreadID, Namespace: ref.Namespace, CheckpointID: ref.ID, Err: err}
}

// NotNull returns b, or an empty slice for nil, which a driver would bind
// as NULL.
func NotNull(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Filter returns filter with its values as [checkpoint.Metadata.Matches]
// compares them: decoded from their JSON encoding. It reports false if a
// value has no JSON encoding, so that no metadata matches.
func Filter(filter map[string]any) (map[string]any, bool) {
	out := make(map[string]any, len(filter))
	for k, v := range filter {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, false
		}
		var want any
		if err := json.Unmarshal(b, &want); err != nil {
			return nil, false
		}
		out[k] = want
	}
	return out, true
}

// Matches reports whether meta, the metadata column of checkpoint ref,
// matches filter (see [checkpoint.Metadata.Matches]). A saver's SQL
// translation of a filter is necessary, not sufficient: Matches decides.
// Metadata that does not decode gives a [*checkpoint.CorruptError] naming
// ref.
func Matches(meta []byte, ref checkpoint.Ref, filter map[string]any) (bool, error) {
	var m checkpoint.Metadata
	if err := unmarshalObject(meta, &m); err != nil {
		return false, CorruptRef(ref, fmt.Errorf("metadata: %w", err))
	}
	return m.Matches(filter), nil
}

// List returns what a saver's List returns: when iteration starts, it
// calls refs for the checkpoints to yield, then reads each with get as it
// is yielded, so the caller may use the saver while ranging. A checkpoint
// get no longer finds ([checkpoint.ErrNotFound]) was deleted since the
// listing and is skipped. Errors start with prefix, the saver's package
// path.
func List(ctx context.Context, prefix string, refs func() ([]checkpoint.Ref, error), get func(checkpoint.Ref) (*checkpoint.Tuple, error)) iter.Seq2[*checkpoint.Tuple, error] {
	return func(yield func(*checkpoint.Tuple, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, fmt.Errorf("%s: list: %w", prefix, err))
			return
		}
		rs, err := refs()
		if err != nil {
			yield(nil, fmt.Errorf("%s: list: %w", prefix, err))
			return
		}
		for _, ref := range rs {
			t, err := get(ref)
			if errors.Is(err, checkpoint.ErrNotFound) {
				continue // deleted since the listing
			}
			if err != nil {
				yield(nil, fmt.Errorf("%s: list: thread %q namespace %q id %q: %w", prefix, ref.ThreadID, ref.Namespace, ref.ID, err))
				return
			}
			if !yield(t, nil) {
				return
			}
		}
	}
}

// VersionMap returns the version of every channel of chs, by name (never
// nil): the stored form of a checkpoint's channels.
func VersionMap(chs []checkpoint.Channel) map[string]int64 {
	m := make(map[string]int64, len(chs))
	for _, ch := range chs {
		m[ch.Name] = ch.Version
	}
	return m
}

// channelsOf lists the channels of m sorted by name, without values.
func channelsOf(m map[string]int64) []checkpoint.Channel {
	if len(m) == 0 {
		return nil
	}
	out := make([]checkpoint.Channel, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, checkpoint.Channel{Name: name, Version: m[name]})
	}
	return out
}
