package sqlite_test

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/groupcommit/groupcommittest"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
)

// The Puts of a batch are made set-based (set.go): these tests queue
// Puts behind a held transaction, so that they are committed as one
// batch, and check each Put's own outcome, the stored data, and the
// set-based runs the batch was made in.

// outcome is what a Put of a batch must return: nil for "", else an
// error of that kind.
func requireOutcome(t *testing.T, want string, err error, what string) {
	t.Helper()
	switch want {
	case "":
		require.NoError(t, err, what)
	case "conflict":
		_, ok := errors.AsType[*checkpoint.ConflictError](err)
		require.True(t, ok, "%s: want a *checkpoint.ConflictError, got %v", what, err)
	case "fenced":
		_, ok := errors.AsType[*checkpoint.FencedError](err)
		require.True(t, ok, "%s: want a *checkpoint.FencedError, got %v", what, err)
	case "version":
		_, ok := errors.AsType[*checkpoint.VersionConflictError](err)
		require.True(t, ok, "%s: want a *checkpoint.VersionConflictError, got %v", what, err)
	default:
		require.ErrorContains(t, err, want, what)
	}
}

// batchPut is a Put of a test's batch.
type batchPut struct {
	cp    *checkpoint.Checkpoint
	lease *checkpoint.Lease // the lease it is made under, if any
	want  string            // its outcome (requireOutcome)
}

func TestSetBatchGivesEachPutItsOwnOutcome(t *testing.T) {
	cases := []struct {
		name string
		// setup stores what the batch needs and returns it; path is the
		// saver's file.
		setup func(t *testing.T, s *sqlite.Saver, path string) []batchPut
		// runs are the sizes of the set-based runs the batch is made
		// in, attempts included.
		runs []int
		// latest are the latest checkpoint IDs of threads afterwards.
		latest map[string]string
	}{
		{
			// Refusals at the first, a middle and the last place of one
			// run: each refused alone, the run goes on.
			name: "refused-at-every-place",
			setup: func(t *testing.T, s *sqlite.Saver, _ string) []batchPut {
				old, err := s.AcquireLease(t.Context(), "f", "old", time.Minute)
				require.NoError(t, err)
				require.NoError(t, s.ReleaseLease(t.Context(), old))
				cur, err := s.AcquireLease(t.Context(), "f", "new", time.Minute)
				require.NoError(t, err)
				require.NoError(t, checkpoint.Fenced(s, cur).Put(t.Context(), cpOf("f", "0001", "", 1, `1`)))
				require.NoError(t, s.Put(t.Context(), cpOf("c", "0001", "", 1, `1`)))
				require.NoError(t, s.Put(t.Context(), cpOf("d", "0001", "", 1, `1`)))
				return []batchPut{
					{cp: cpOf("f", "0002", "0001", 2, `2`), lease: &old, want: "fenced"},
					{cp: cpOf("g0", "0001", "", 1, `1`), lease: nil},
					{cp: cpOf("c", "0002", "", 2, `2`), want: "conflict"},
					{cp: cpOf("g1", "0001", "", 1, `1`)},
					{cp: cpOf("g2", "0001", "", 1, `1`)},
					{cp: cpOf("d", "0002", "0000", 2, `2`), want: "conflict"},
				}
			},
			runs:   []int{6},
			latest: map[string]string{"f": "0001", "c": "0001", "d": "0001", "g0": "0001", "g1": "0001", "g2": "0001"},
		},
		{
			// A thread's second Put starts a new run: its check must see
			// the first's row.
			name: "one-thread-thrice",
			setup: func(*testing.T, *sqlite.Saver, string) []batchPut {
				return []batchPut{
					{cp: cpOf("a", "0001", "", 1, `1`)},
					{cp: cpOf("b", "0001", "", 1, `1`)},
					{cp: cpOf("a", "0002", "0001", 2, `2`)},
					{cp: cpOf("c", "0001", "", 1, `1`)},
					{cp: cpOf("a", "0003", "0002", 3, `3`)},
				}
			},
			runs:   []int{2, 2}, // the last Put alone is made as statements
			latest: map[string]string{"a": "0003", "b": "0001", "c": "0001"},
		},
		{
			// A stored version with another value, found by the path read
			// of a value that may be a delta: its Put's row was written,
			// so the batch is made again without it.
			name: "version-conflict-of-a-list",
			setup: func(t *testing.T, s *sqlite.Saver, _ string) []batchPut {
				require.NoError(t, s.Put(t.Context(), cpOf("v", "0001", "", 1, `[1]`)))
				return []batchPut{
					{cp: cpOf("g0", "0001", "", 1, `[1]`)},
					{cp: cpOf("v", "0002", "0001", 1, `[1,2]`), want: "version"},
					{cp: cpOf("g1", "0001", "", 1, `[1]`)},
				}
			},
			runs:   []int{3, 2},
			latest: map[string]string{"v": "0001", "g0": "0001", "g1": "0001"},
		},
		{
			// The same, found because the blobs' insert stored fewer rows
			// than it was given.
			name: "version-conflict-of-a-whole-value",
			setup: func(t *testing.T, s *sqlite.Saver, _ string) []batchPut {
				require.NoError(t, s.Put(t.Context(), cpOf("v", "0001", "", 1, `1`)))
				return []batchPut{
					{cp: cpOf("g0", "0001", "", 1, `1`)},
					{cp: cpOf("g1", "0001", "", 1, `1`)},
					{cp: cpOf("v", "0002", "0001", 1, `"other"`), want: "version"},
				}
			},
			runs:   []int{3, 2},
			latest: map[string]string{"v": "0001", "g0": "0001", "g1": "0001"},
		},
		{
			// A checkpoint put again with the same values: its blob is
			// stored already, with the same hash.
			name: "a-put-made-again",
			setup: func(t *testing.T, s *sqlite.Saver, _ string) []batchPut {
				require.NoError(t, s.Put(t.Context(), cpOf("r", "0001", "", 1, `1`)))
				return []batchPut{
					{cp: cpOf("g0", "0001", "", 1, `1`)},
					{cp: cpOf("r", "0001", "", 1, `1`)},
					{cp: cpOf("g1", "0001", "", 1, `1`)},
				}
			},
			runs:   []int{3},
			latest: map[string]string{"r": "0001", "g0": "0001", "g1": "0001"},
		},
		{
			// A statement the database refuses cannot be told by Put: the
			// batch is made again Put by Put, which gives the error to its
			// Put alone.
			name: "a-statement-the-database-refuses",
			setup: func(t *testing.T, _ *sqlite.Saver, path string) []batchPut {
				db, err := sql.Open("sqlite", path)
				require.NoError(t, err)
				defer db.Close()
				_, err = db.ExecContext(t.Context(), `CREATE TRIGGER refuse BEFORE INSERT ON blobs WHEN NEW.thread_id = 'x'
					BEGIN SELECT RAISE(ABORT, 'refused by the test''s trigger'); END`)
				require.NoError(t, err)
				return []batchPut{
					{cp: cpOf("g0", "0001", "", 1, `1`)},
					{cp: cpOf("g1", "0001", "", 1, `1`)},
					{cp: cpOf("x", "0001", "", 1, `1`), want: "refused by the test's trigger"},
					{cp: cpOf("g2", "0001", "", 1, `1`)},
				}
			},
			runs:   []int{4}, // then Put by Put
			latest: map[string]string{"g0": "0001", "g1": "0001", "g2": "0001"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoints.db")
			s := open(t, path)
			var mu sync.Mutex
			var runs []int
			s.OnSetRun(func(n int) {
				mu.Lock()
				defer mu.Unlock()
				runs = append(runs, n)
			})
			puts := c.setup(t, s, path)
			mu.Lock()
			runs = nil // the setup's
			mu.Unlock()
			writes := make([]func() error, len(puts))
			for i, p := range puts {
				writes[i] = func() error {
					if p.lease != nil {
						return checkpoint.Fenced(s, *p.lease).Put(t.Context(), p.cp)
					}
					return s.Put(t.Context(), p.cp)
				}
			}
			h := hold(t, s)
			errs := groupcommittest.InOneBatch(t, s, func() { h.end(t) }, writes...)
			for i, p := range puts {
				requireOutcome(t, p.want, errs[i], "put "+p.cp.ThreadID+"/"+p.cp.ID)
			}
			mu.Lock()
			require.Equal(t, c.runs, runs, "set-based runs")
			mu.Unlock()
			for thread, id := range c.latest {
				requireLatest(t, s, thread, id)
			}
			_, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: "x"})
			require.ErrorIs(t, err, checkpoint.ErrNotFound)
			for _, p := range puts {
				if p.want != "" {
					continue
				}
				got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: p.cp.ThreadID, ID: p.cp.ID})
				require.NoError(t, err)
				require.Equal(t, p.cp.ParentID, got.ParentID)
				require.Equal(t, string(p.cp.Channels[0].Value), string(got.Channels[0].Value), "value of %s/%s", p.cp.ThreadID, p.cp.ID)
			}
		})
	}
}

// recordRuns records the sizes of s's set-based runs.
func recordRuns(s *sqlite.Saver) func() []int {
	var mu sync.Mutex
	var runs []int
	s.OnSetRun(func(n int) {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, n)
	})
	return func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(runs)
	}
}

// A set-based statement binds about 4 MiB of values at most: the driver
// holds a copy of each bound value until the statement ends, so twelve
// Puts of 1 MiB go in runs of three, not in one run of twelve.
func TestSetRunsBindAtMostFourMiBOfValues(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "checkpoints.db"))
	runs := recordRuns(s)
	value := `"` + strings.Repeat("x", 1<<20-2) + `"`
	writes := make([]func() error, 12)
	for i := range writes {
		cp := cpOf(fmt.Sprintf("t%02d", i), "0001", "", 1, value)
		writes[i] = func() error { return s.Put(t.Context(), cp) }
	}
	h := hold(t, s)
	for i, err := range groupcommittest.InOneBatch(t, s, func() { h.end(t) }, writes...) {
		require.NoError(t, err, "put %d", i)
	}
	require.Equal(t, []int{3, 3, 3, 3}, runs())
	for i := range writes {
		got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: fmt.Sprintf("t%02d", i)})
		require.NoError(t, err)
		require.Equal(t, value, string(got.Checkpoint.Channels[0].Value))
	}
}

// A Put that names a channel twice, the second version appending to the
// first, stores the second as a delta of the first in a batch as it does
// alone: it is made outside the set-based run, which encodes every value
// before it stores any.
func TestSetBatchStoresTheDeltaOfAChannelNamedTwiceInOnePut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	s := open(t, path)
	runs := recordRuns(s)
	twice := &checkpoint.Checkpoint{ThreadID: "twice", ID: "0001", Channels: []checkpoint.Channel{
		{Name: "a", Version: 1, Value: []byte(`[1]`)},
		{Name: "a", Version: 2, Value: []byte(`[1,2]`)},
	}}
	h := hold(t, s)
	errs := groupcommittest.InOneBatch(t, s, func() { h.end(t) },
		func() error { return s.Put(t.Context(), cpOf("g0", "0001", "", 1, `1`)) },
		func() error { return s.Put(t.Context(), cpOf("g1", "0001", "", 1, `1`)) },
		func() error { return s.Put(t.Context(), twice) })
	for i, err := range errs {
		require.NoError(t, err, "put %d", i)
	}
	require.Equal(t, []int{2}, runs(), "g0 and g1 in a run, the Put naming a channel twice alone")
	var base sql.NullInt64
	require.NoError(t, rawDB(t, path).QueryRowContext(t.Context(),
		`SELECT base FROM blobs WHERE thread_id = 'twice' AND version = 2`).Scan(&base))
	require.True(t, base.Valid, "version 2 stored as a delta of version 1")
}
