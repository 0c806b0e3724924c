package postgres

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
)

// The one-round-trip write's check (checkPut) and the path reads
// (selectPaths, selectPrevPaths) take parallel arrays, unnested together:
// one row per index, the shorter arrays padded with NULLs. These tests run
// the statements themselves on every array shape the saver sends, and on
// the hostile ones it never sends (NULL elements, arrays of unequal
// length), which must refuse, never pass by dropping or repeating rows.

// openInternal opens a Saver on a fresh schema, closed when the test ends.
func openInternal(t *testing.T, opts ...Option) (*Saver, string) {
	t.Helper()
	schema := pgdbtest.FreshSchema(t, "agt_test")
	return openOn(t, schema, opts...), schema
}

// openOn opens a Saver on schema, closed when the test ends.
func openOn(t *testing.T, schema string, opts ...Option) *Saver {
	t.Helper()
	s, err := Open(t.Context(), pgdbtest.URL(t), append([]Option{WithSchema(schema), WithMaxConns(4)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// storeBlob stores one blob of thread t, namespace "", as a Put would.
func storeBlob(t *testing.T, pool *pgxpool.Pool, channel string, version, depth int64, value string) {
	t.Helper()
	h := sha256.Sum256([]byte(value))
	_, err := pool.Exec(t.Context(), `INSERT INTO agentgraph_blobs (thread_id, ns, channel, version, depth, size, hash, data)
		VALUES ('t', '', $1, $2, $3, $4, $5, $6)`, channel, version, depth, len(value), h[:], []byte(value))
	require.NoError(t, err)
}

func hashOf(value string) []byte {
	h := sha256.Sum256([]byte(value))
	return h[:]
}

func TestCheckPutRefusesEveryArrayShapeThatDoesNotProveTheWrite(t *testing.T) {
	s, _ := openInternal(t)
	pool := s.pool
	_, err := pool.Exec(t.Context(), `INSERT INTO agentgraph_checkpoints (thread_id, ns, id, parent_id, metadata, versions, frontier, shape)
		VALUES ('t', '', '0001', '', '{}', '{}', '', '')`)
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `INSERT INTO agentgraph_leases (thread_id, holder, token, expires_at) VALUES
		('t', 'me', 'live', now() + interval '1 hour')`)
	require.NoError(t, err)
	storeBlob(t, pool, "a", 1, 0, "a1")
	storeBlob(t, pool, "b", 1, 0, "b1")
	storeBlob(t, pool, "b", 2, 1, "b2")
	storeBlob(t, pool, "c", 3, 2, "c3")

	type arrays struct {
		chans    []string
		versions []int64
		hashes   [][]byte
		depths   []int64
	}
	live, dead := "live", "dead"
	for _, tc := range []struct {
		name   string
		parent string  // the parent the write names
		token  *string // the fenced write's lease token
		w      arrays
		ok     bool
	}{
		{name: "nil arrays (sent as NULL), right parent", parent: "0001", ok: true},
		{name: "empty arrays, right parent", parent: "0001", w: arrays{[]string{}, []int64{}, [][]byte{}, []int64{}}, ok: true},
		{name: "nil arrays, stale parent", parent: "0000"},
		{name: "nil arrays, a new thread's write on a thread that has a checkpoint", parent: ""},
		{name: "one blob as stored", parent: "0001", w: arrays{[]string{"a"}, []int64{1}, [][]byte{hashOf("a1")}, []int64{-1}}, ok: true},
		{name: "one blob with its depth", parent: "0001", w: arrays{[]string{"b"}, []int64{2}, [][]byte{hashOf("b2")}, []int64{1}}, ok: true},
		{name: "one blob with another value", parent: "0001", w: arrays{[]string{"a"}, []int64{1}, [][]byte{hashOf("other")}, []int64{-1}}},
		{name: "one base at another depth", parent: "0001", w: arrays{[]string{"b"}, []int64{2}, [][]byte{hashOf("b2")}, []int64{0}}},
		{name: "one blob not stored", parent: "0001", w: arrays{[]string{"a"}, []int64{2}, [][]byte{hashOf("a1")}, []int64{-1}}},
		{name: "several channels as stored", parent: "0001", w: arrays{
			[]string{"a", "b", "b", "c"}, []int64{1, 2, 1, 3}, [][]byte{hashOf("a1"), hashOf("b2"), hashOf("b1"), hashOf("c3")}, []int64{-1, 1, 0, -1}}, ok: true},
		{name: "several channels, the first wrong", parent: "0001", w: arrays{
			[]string{"a", "b", "c"}, []int64{1, 2, 3}, [][]byte{hashOf("x"), hashOf("b2"), hashOf("c3")}, []int64{-1, -1, -1}}},
		{name: "several channels, a middle one wrong", parent: "0001", w: arrays{
			[]string{"a", "b", "c"}, []int64{1, 2, 3}, [][]byte{hashOf("a1"), hashOf("x"), hashOf("c3")}, []int64{-1, -1, -1}}},
		{name: "several channels, the last one's depth wrong", parent: "0001", w: arrays{
			[]string{"a", "b", "c"}, []int64{1, 2, 3}, [][]byte{hashOf("a1"), hashOf("b2"), hashOf("c3")}, []int64{-1, -1, 7}}},
		{name: "several channels as stored, stale parent", parent: "0000", w: arrays{
			[]string{"a", "b"}, []int64{1, 2}, [][]byte{hashOf("a1"), hashOf("b2")}, []int64{-1, -1}}},
		{name: "a NULL hash", parent: "0001", w: arrays{[]string{"a", "b"}, []int64{1, 2}, [][]byte{hashOf("a1"), nil}, []int64{-1, -1}}},
		{name: "hashes shorter than channels", parent: "0001", w: arrays{[]string{"a", "b"}, []int64{1, 2}, [][]byte{hashOf("a1")}, []int64{-1, -1}}},
		{name: "channels shorter than hashes", parent: "0001", w: arrays{[]string{"a"}, []int64{1, 1}, [][]byte{hashOf("a1"), hashOf("a1")}, []int64{-1, -1}}},
		{name: "no depths", parent: "0001", w: arrays{[]string{"a"}, []int64{1}, [][]byte{hashOf("a1")}, []int64{}}},
		{name: "fenced by the live lease", parent: "0001", token: &live, w: arrays{[]string{"a"}, []int64{1}, [][]byte{hashOf("a1")}, []int64{-1}}, ok: true},
		{name: "fenced by a lost lease", parent: "0001", token: &dead, w: arrays{[]string{"a"}, []int64{1}, [][]byte{hashOf("a1")}, []int64{-1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pool.Exec(t.Context(), checkPut, "t", "", "0002", tc.parent, tc.token, tc.w.chans, tc.w.versions, tc.w.hashes, tc.w.depths)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.True(t, isStale(err), "want the check's error, got %v", err)
		})
	}
}

func TestCheckParentRefusesWhatCheckPutWithNoBlobsRefuses(t *testing.T) {
	s, _ := openInternal(t)
	pool := s.pool
	_, err := pool.Exec(t.Context(), `INSERT INTO agentgraph_checkpoints (thread_id, ns, id, parent_id, metadata, versions, frontier, shape)
		VALUES ('t', '', '0001', '', '{}', '{}', '', ''), ('t', '', '0002', '0001', '{}', '{}', '', '')`)
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `INSERT INTO agentgraph_leases (thread_id, holder, token, expires_at) VALUES
		('t', 'me', 'live', now() + interval '1 hour'), ('u', '', '', to_timestamp(0))`)
	require.NoError(t, err)
	live, dead, empty := "live", "dead", ""
	for _, tc := range []struct {
		name       string
		thread, id string
		parent     string  // the parent the write names
		token      *string // the fenced write's lease token
		ok         bool
	}{
		{name: "the latest as parent", thread: "t", id: "0003", parent: "0002", ok: true},
		{name: "a stale parent", thread: "t", id: "0003", parent: "0001"},
		{name: "a new thread's write on a thread that has checkpoints", thread: "t", id: "0003", parent: ""},
		{name: "the write's own ID left out of the latest", thread: "t", id: "0002", parent: "0001", ok: true},
		{name: "a new thread", thread: "u", id: "0001", parent: "", ok: true},
		{name: "a parent on a new thread", thread: "u", id: "0001", parent: "0000"},
		{name: "fenced by the live lease", thread: "t", id: "0003", parent: "0002", token: &live, ok: true},
		{name: "fenced by a lost lease", thread: "t", id: "0003", parent: "0002", token: &dead},
		{name: "fenced by the empty token of a released lease", thread: "u", id: "0001", parent: "", token: &empty},
		{name: "fenced with no lease row", thread: "v", id: "0001", parent: "", token: &live},
		{name: "fenced by the live lease, a stale parent", thread: "t", id: "0003", parent: "0001", token: &live},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, q := range []struct {
				name string
				args []any
			}{
				{"checkParent", []any{tc.thread, "", tc.id, tc.parent, tc.token}},
				{"checkPut", []any{tc.thread, "", tc.id, tc.parent, tc.token, nil, nil, nil, nil}},
			} {
				sql := checkParent
				if q.name == "checkPut" {
					sql = checkPut
				}
				_, err := pool.Exec(t.Context(), sql, q.args...)
				if tc.ok {
					require.NoError(t, err, q.name)
					continue
				}
				require.Error(t, err, q.name)
				require.True(t, isStale(err), "%s: want the check's error, got %v", q.name, err)
			}
		})
	}
}

func TestPathReadsReturnOneChainPerChannelWhateverTheArrayShape(t *testing.T) {
	s, _ := openInternal(t)
	storeBlob(t, s.pool, "a", 1, 0, "a1")
	storeBlob(t, s.pool, "b", 1, 0, "b1")
	storeBlob(t, s.pool, "c", 3, 0, "c3")
	for _, tc := range []struct {
		name     string
		chans    []string
		versions []int64
		want     map[string][]int64 // channel: versions read
		prev     map[string][]int64 // the same from selectPrevPaths
	}{
		{name: "nil arrays", want: map[string][]int64{}, prev: map[string][]int64{}},
		{name: "empty arrays", chans: []string{}, versions: []int64{}, want: map[string][]int64{}, prev: map[string][]int64{}},
		{name: "one channel", chans: []string{"a"}, versions: []int64{1}, want: map[string][]int64{"a": {1}}, prev: map[string][]int64{"a": {1}}},
		{name: "several channels", chans: []string{"a", "b", "c"}, versions: []int64{1, 1, 3},
			want: map[string][]int64{"a": {1}, "b": {1}, "c": {3}}, prev: map[string][]int64{"a": {1}, "b": {1}, "c": {3}}},
		{name: "versions above the stored ones", chans: []string{"a", "c"}, versions: []int64{5, 4},
			want: map[string][]int64{}, prev: map[string][]int64{"a": {1}, "c": {3}}},
		{name: "fewer versions than channels", chans: []string{"a", "b"}, versions: []int64{1},
			want: map[string][]int64{"a": {1}}, prev: map[string][]int64{"a": {1}}},
		{name: "fewer channels than versions", chans: []string{"a"}, versions: []int64{1, 1},
			want: map[string][]int64{"a": {1}}, prev: map[string][]int64{"a": {1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			versionsOf := func(q string, withData bool) map[string][]int64 {
				rows, err := s.pool.Query(t.Context(), q, "t", "", tc.chans, tc.versions)
				require.NoError(t, err)
				paths, err := scanPaths(rows, withData)
				require.NoError(t, err)
				got := map[string][]int64{}
				for ch, path := range paths {
					for _, b := range path {
						got[ch] = append(got[ch], b.Version)
					}
				}
				return got
			}
			require.Equal(t, tc.want, versionsOf(selectPaths, true))
			require.Equal(t, tc.prev, versionsOf(selectPrevPaths, false))
		})
	}
}

// listCheckpoint returns checkpoint i (from 1) of a thread of three
// channels: "log", a list that grows every step (stored as skip deltas),
// "turn", a number changed every step, and "fixed", written at the first
// step only.
func listCheckpoint(thread string, i int, parent string) *checkpoint.Checkpoint {
	items := make([]string, i)
	for j := range items {
		items[j] = fmt.Sprintf(`"item %d %s"`, j, strings.Repeat("x", 40))
	}
	cp := &checkpoint.Checkpoint{ID: fmt.Sprintf("%04d", i), ThreadID: thread, ParentID: parent,
		Channels: []checkpoint.Channel{
			{Name: "fixed", Version: 1},
			{Name: "log", Version: int64(i), Value: []byte("[" + strings.Join(items, ",") + "]")},
			{Name: "turn", Version: int64(i), Value: []byte(fmt.Sprint(i))},
		}}
	if i == 1 {
		cp.Channels[0].Value = []byte(`"fixed"`)
	}
	return cp
}

// Multi-channel checkpoints whose growing list is stored as a chain of
// skip deltas round-trip, written in one round trip each, read back by
// another saver, and continued by it the long way (which reads the
// previous paths); a write with one conflicting channel among several is
// refused whole by the one-round-trip check and gets its typed error.
func TestMultiChannelDeltaChainsRoundTripAndAConflictAmongThemIsRefused(t *testing.T) {
	s, schema := openInternal(t, WithDeltaFanout(2))
	other := openOn(t, schema, WithDeltaFanout(2))

	const steps = 40
	parent := ""
	for i := 1; i <= steps; i++ {
		cp := listCheckpoint("t", i, parent)
		if i > 1 {
			row, changed, err := preparePut(cp)
			require.NoError(t, err)
			require.NotNil(t, s.planPut(t.Context(), cp, row, changed), "step %d goes in one round trip", i)
		}
		require.NoError(t, s.Put(t.Context(), cp), "step %d", i)
		parent = cp.ID
	}
	var deltas, maxDepth int
	require.NoError(t, s.pool.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE base IS NOT NULL), max(depth) FROM agentgraph_blobs WHERE channel = 'log'`).Scan(&deltas, &maxDepth))
	require.Greater(t, deltas, steps/2, "the list is stored as deltas")
	require.Greater(t, maxDepth, 1, "of several levels")

	for i := 1; i <= steps; i++ {
		want := listCheckpoint("t", i, "")
		got, err := other.Get(t.Context(), checkpoint.Ref{ThreadID: "t", ID: want.ID})
		require.NoError(t, err)
		require.JSONEq(t, string(want.Channels[1].Value), string(got.Value("log")), "log at %s", want.ID)
		require.JSONEq(t, string(want.Channels[2].Value), string(got.Value("turn")), "turn at %s", want.ID)
		require.JSONEq(t, `"fixed"`, string(got.Value("fixed")), "fixed at %s", want.ID)
	}

	// The other saver continues the thread the long way, then in one round trip.
	for i := steps + 1; i <= steps+2; i++ {
		cp := listCheckpoint("t", i, parent)
		require.NoError(t, other.Put(t.Context(), cp))
		parent = cp.ID
	}
	got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: "t"})
	require.NoError(t, err)
	require.JSONEq(t, string(listCheckpoint("t", steps+2, "").Channels[1].Value), string(got.Value("log")))

	// s's cache names an older checkpoint: it goes the long way and
	// finds the conflict of the parent.
	cp := listCheckpoint("t", steps+3, "0040")
	err = s.Put(t.Context(), cp)
	_, ok := errors.AsType[*checkpoint.ConflictError](err)
	require.True(t, ok, "want a *checkpoint.ConflictError, got %v", err)

	// A value of "turn" stored under the next version without a
	// checkpoint (as a fork of another process could): other's next write,
	// planned in one round trip, changes three channels, one of which
	// conflicts.
	next := listCheckpoint("t", steps+3, parent)
	storeBlob(t, s.pool, "turn", next.Channels[2].Version, 0, `"not the same"`)
	row, changed, err := preparePut(next)
	require.NoError(t, err)
	require.NotNil(t, other.planPut(t.Context(), next, row, changed), "the write goes in one round trip")
	err = other.Put(t.Context(), next)
	vc, ok := errors.AsType[*checkpoint.VersionConflictError](err)
	require.True(t, ok, "want a *checkpoint.VersionConflictError, got %v", err)
	require.Equal(t, "turn", vc.Channel)
	got, err = s.Get(t.Context(), checkpoint.Ref{ThreadID: "t"})
	require.NoError(t, err)
	require.Equal(t, parent, got.ID, "nothing of the refused write is stored")
	var n int
	require.NoError(t, s.pool.QueryRow(t.Context(), `SELECT count(*) FROM agentgraph_blobs WHERE channel = 'log' AND version = $1`, next.Channels[1].Version).Scan(&n))
	require.Zero(t, n, "the refused write's other blobs were rolled back")
}
