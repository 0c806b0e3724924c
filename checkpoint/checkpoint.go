package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint/internal/jsonstring"
)

// Ref names a checkpoint: a thread, a namespace inside it ("" for the root
// graph, a path of subgraph nodes otherwise) and optionally a checkpoint ID.
// An empty ID means the latest checkpoint of the thread and namespace.
type Ref struct {
	ThreadID  string
	Namespace string
	ID        string
}

// Metadata describes how a checkpoint came to be. It is stored as one flat
// JSON object: source, step, parents, run_id, and every entry of Extra.
type Metadata struct {
	// Source is "input", "loop", "update" or "fork".
	Source string
	// Step is -1 for an input checkpoint, 0 after the first superstep, and
	// grows by one per checkpoint of a thread.
	Step int
	// Parents maps each ancestor graph's namespace to its checkpoint ID.
	Parents map[string]string
	// RunID is the run that wrote the checkpoint, if any.
	RunID string
	// Extra holds user metadata (scalars), matched by List filters.
	Extra map[string]any
}

// MarshalJSON flattens m into one object.
func (m Metadata) MarshalJSON() ([]byte, error) {
	if len(m.Extra) == 0 {
		return m.appendJSON(make([]byte, 0, 128)), nil
	}
	out := make(map[string]any, len(m.Extra)+4)
	for k, v := range m.Extra {
		out[k] = v
	}
	out["source"] = m.Source
	out["step"] = m.Step
	if m.Parents == nil {
		out["parents"] = map[string]string{}
	} else {
		out["parents"] = m.Parents
	}
	if m.RunID != "" {
		out["run_id"] = m.RunID
	}
	return json.Marshal(out)
}

// appendJSON appends m, which has no Extra, as MarshalJSON's map would be
// marshalled: the same bytes, keys sorted, without reflection (a run
// writes such metadata at every step).
func (m Metadata) appendJSON(b []byte) []byte {
	b = append(b, `{"parents":{`...)
	for i, k := range slices.Sorted(maps.Keys(m.Parents)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstring.Append(b, k)
		b = append(b, ':')
		b = jsonstring.Append(b, m.Parents[k])
	}
	b = append(b, '}')
	if m.RunID != "" {
		b = append(b, `,"run_id":`...)
		b = jsonstring.Append(b, m.RunID)
	}
	b = append(b, `,"source":`...)
	b = jsonstring.Append(b, m.Source)
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(m.Step), 10)
	return append(b, '}')
}

// UnmarshalJSON reads the flat form written by MarshalJSON.
func (m *Metadata) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*m = Metadata{}
	for k, v := range raw {
		var err error
		switch k {
		case "source":
			err = json.Unmarshal(v, &m.Source)
		case "step":
			err = json.Unmarshal(v, &m.Step)
		case "parents":
			err = json.Unmarshal(v, &m.Parents)
			if len(m.Parents) == 0 {
				m.Parents = nil
			}
		case "run_id":
			err = json.Unmarshal(v, &m.RunID)
		default:
			var x any
			err = json.Unmarshal(v, &x)
			if m.Extra == nil {
				m.Extra = make(map[string]any)
			}
			m.Extra[k] = x
		}
		if err != nil {
			return fmt.Errorf("checkpoint: metadata key %q: %w", k, err)
		}
	}
	return nil
}

// Matches reports whether every key of filter has an equal value in m's
// flat JSON form (numbers compare by value).
func (m Metadata) Matches(filter map[string]any) bool {
	if len(filter) == 0 {
		return true
	}
	b, err := json.Marshal(m)
	if err != nil {
		return false
	}
	var flat map[string]any
	if json.Unmarshal(b, &flat) != nil {
		return false
	}
	for k, want := range filter {
		got, ok := flat[k]
		if !ok {
			return false
		}
		wb, err1 := json.Marshal(want)
		gb, err2 := json.Marshal(got)
		if err1 != nil || err2 != nil {
			return false
		}
		var w any
		if json.Unmarshal(wb, &w) != nil || string(mustJSON(w)) != string(gb) {
			return false
		}
	}
	return true
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// Checkpoint is the state of a graph between two supersteps, as bytes.
//
// Channels lists every channel that has a value, with its version. A
// checkpoint given to [Saver.Put] carries the JSON of only the channels
// whose version it introduced; savers keep each value keyed by (channel,
// version), so a channel that does not change is stored once, not once per
// step. A [Tuple] read back from a saver carries the value of every channel.
type Checkpoint struct {
	// ID is time-ordered: lexicographic order is creation order.
	ID       string
	ThreadID string
	// Namespace is "" for the root graph.
	Namespace string
	// ParentID is the checkpoint this one follows, "" for the first.
	ParentID string
	// CreatedAt is when the checkpoint was made.
	CreatedAt time.Time
	Metadata  Metadata
	// Channels are the channels that have a value, sorted by name.
	Channels []Channel
	// Frontier is the runtime's opaque bookkeeping: what runs next.
	Frontier []byte
	// Shape fingerprints the graph that wrote the checkpoint.
	Shape string
	// Fork marks a checkpoint that deliberately branches from ParentID,
	// which need not be the latest checkpoint of its thread and namespace
	// (time travel: a replay or an update from an older checkpoint). It is
	// not stored: a checkpoint read back has Fork false.
	Fork bool
}

// Channel is one state channel of a checkpoint.
type Channel struct {
	// Name is the channel's name.
	Name string
	// Version identifies the channel's value: a new value gets a new,
	// larger version.
	Version int64
	// Value is the channel's JSON. In a checkpoint given to [Saver.Put] it
	// is set only for the channels whose version that checkpoint
	// introduced, and nil for the others (the saver has their value from
	// an earlier checkpoint); in a [Tuple] it is set for every channel.
	Value []byte
}

// Lookup returns the channel named name.
func (c *Checkpoint) Lookup(name string) (Channel, bool) {
	i, ok := slices.BinarySearchFunc(c.Channels, name, func(ch Channel, name string) int { return strings.Compare(ch.Name, name) })
	if !ok {
		return Channel{}, false
	}
	return c.Channels[i], true
}

// Value returns the JSON value of the channel named name, or nil.
func (c *Checkpoint) Value(name string) []byte {
	ch, _ := c.Lookup(name)
	return ch.Value
}

// Version returns the version of the channel named name, or 0.
func (c *Checkpoint) Version(name string) int64 {
	ch, _ := c.Lookup(name)
	return ch.Version
}

// sortChannels sorts channels by name unless they already are.
func sortChannels(chs []Channel) {
	cmp := func(a, b Channel) int { return strings.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(chs, cmp) {
		slices.SortFunc(chs, cmp)
	}
}

// Clone returns a deep copy of c.
func (c *Checkpoint) Clone() *Checkpoint {
	out := *c
	out.Metadata.Parents = maps.Clone(c.Metadata.Parents)
	out.Metadata.Extra = maps.Clone(c.Metadata.Extra)
	out.Channels = slices.Clone(c.Channels)
	for i := range out.Channels {
		out.Channels[i].Value = slices.Clone(out.Channels[i].Value)
	}
	out.Frontier = slices.Clone(c.Frontier)
	return &out
}

// Write is one pending write of a task, recorded against the checkpoint the
// task started from.
type Write struct {
	TaskID   string
	TaskPath string
	// Idx orders a task's writes; special channels use the negative
	// indexes of [WriteIndex].
	Idx     int
	Channel string
	Value   []byte
}

// Special write channels.
const (
	ChannelError     = "__error__"
	ChannelInterrupt = "__interrupt__"
	ChannelResume    = "__resume__"
	ChannelNoWrites  = "__no_writes__"
)

// WriteIndex returns the index a write to channel gets at position pos of
// its task's writes: the special channels have fixed negative indexes (so a
// retry replaces them), the others their position (so a repeated write is
// ignored: first write wins).
func WriteIndex(channel string, pos int) int {
	switch channel {
	case ChannelError:
		return -1
	case ChannelInterrupt:
		return -3
	case ChannelResume:
		return -4
	}
	return pos
}

// Tuple is a checkpoint read back from a saver with its pending writes.
type Tuple struct {
	Checkpoint
	// PendingWrites are the writes recorded against this checkpoint,
	// ordered by task ID then index.
	PendingWrites []Write
}

// ListOptions narrows [Saver.List].
type ListOptions struct {
	// Namespace selects one namespace; nil means all of them.
	Namespace *string
	// Before keeps checkpoints whose ID is strictly smaller.
	Before string
	// Limit caps the number returned (0 = no limit), applied after the
	// filter.
	Limit int
	// Filter keeps checkpoints whose metadata matches every key (see
	// [Metadata.Matches]).
	Filter map[string]any
}

// Saver stores checkpoints. Implementations must be safe for concurrent use.
// Optional capabilities are further interfaces a Saver may implement, such
// as [ThreadDeleter]; [checkpointtest.Run] checks any implementation.
type Saver interface {
	// Get returns the checkpoint ref names (the latest of the thread and
	// namespace when ref.ID is empty) with its pending writes, or an error
	// wrapping [ErrNotFound].
	Get(ctx context.Context, ref Ref) (*Tuple, error)
	// Put stores cp with its changed channel values, atomically. Put takes
	// ownership of cp: the saver may keep it and change its fields, so the
	// caller must not use it afterwards. The saver must not modify the
	// bytes of cp.Frontier and of the channel values, which the caller may
	// share between checkpoints.
	//
	// Put refuses, with an error wrapping [ErrConflict], to store a value
	// under a channel version that is already stored with different bytes
	// ([*VersionConflictError]), and a checkpoint that is not a Fork whose
	// ParentID is not the latest checkpoint of its thread and namespace
	// ([*ConflictError]). "Latest" is the checkpoint with the greatest ID
	// among the thread and namespace's checkpoints other than cp.ID itself
	// (none: ParentID must be ""), so storing a checkpoint again under its
	// own ID replaces it.
	Put(ctx context.Context, cp *Checkpoint) error
	// PutWrites stores writes of one task against the checkpoint ref (the
	// saver may keep the Value slices, as with Put).
	// A write whose (task, index) already exists is kept when the index is
	// non-negative and replaced when it is negative.
	PutWrites(ctx context.Context, ref Ref, writes []Write) error
	// List yields a thread's checkpoints newest first. An empty threadID
	// lists every thread.
	List(ctx context.Context, threadID string, opts ListOptions) iter.Seq2[*Tuple, error]
}

// ThreadDeleter is implemented by savers that can delete a thread's
// checkpoints and writes in every namespace.
type ThreadDeleter interface {
	DeleteThread(ctx context.Context, threadID string) error
}

// Batcher is implemented by savers that can make several writes as one
// transaction. A run that saves in the background
// (graph.DurabilityAsync) hands it the checkpoints and pending writes that
// queued up while the previous ones were being saved, so that they share
// one commit (one fsync) instead of paying one each.
type Batcher interface {
	// PutBatch makes ops in order, each as Put or PutWrites would (the
	// later ops see the earlier ones: a checkpoint's parent may be the
	// checkpoint before it in the batch), all of them or none: an op that
	// Put or PutWrites would refuse refuses the whole batch, and its error
	// is returned (matching the same errors, [ErrConflict] or
	// [ErrLeaseLost] among them). PutBatch takes ownership of the ops'
	// checkpoints as Put does.
	PutBatch(ctx context.Context, ops []Op) error
}

// Op is one write of a batch (see [Batcher]): the checkpoint to Put when
// Checkpoint is set, else Writes to put against Ref, as PutWrites does.
type Op struct {
	Checkpoint *Checkpoint
	Ref        Ref
	Writes     []Write
}

// ThreadID returns the thread op writes to.
func (op Op) ThreadID() string {
	if op.Checkpoint != nil {
		return op.Checkpoint.ThreadID
	}
	return op.Ref.ThreadID
}

// ErrNotFound is wrapped by errors of savers for a missing checkpoint.
var ErrNotFound = errors.New("checkpoint not found")

// lastID is the timestamp of the latest ID made by this process.
var lastID atomic.Uint64

// idSuffix makes IDs of different processes differ.
var idSuffix = func() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

// NewID returns a new checkpoint ID: 32 lowercase hex digits whose first 16
// are a nanosecond timestamp strictly increasing within the process (so IDs
// sort in creation order) and whose last 16 are random per process.
func NewID() string { return NewIDAt(time.Now()) }

// NewIDAt is [NewID] for a checkpoint made at t: its timestamp is t, or
// just past the process's latest ID when that is not earlier than t.
func NewIDAt(t time.Time) string {
	now := uint64(t.UnixNano())
	for {
		last := lastID.Load()
		ts := max(now, last+1)
		if lastID.CompareAndSwap(last, ts) {
			const digits = "0123456789abcdef"
			var b [32]byte
			for i := 15; i >= 0; i-- {
				b[i] = digits[ts&15]
				ts >>= 4
			}
			copy(b[16:], idSuffix)
			return string(b[:])
		}
	}
}
