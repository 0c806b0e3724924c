package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
)

// Review of the lone write's plain-insert first try (group.go,
// commitAlone; pipeline.go, putPlan.queue), attacked as a second process
// would: each Put here takes the one-round-trip path (its parent is the
// checkpoint its saver last wrote) and meets, or does not meet, a row
// another saver stored. Whatever the first try met, the caller gets what
// the write made one by one returns, and a refused write leaves the
// tables as they were. These tests pass on the package before the change
// (3455b29) too: only the speed of the path differs.

// rvpgTwo opens two savers (two pools, as two processes) on one schema.
func rvpgTwo(t *testing.T) (schema string, a, b *postgres.Saver) {
	t.Helper()
	schema = freshSchema(t)
	return schema, open(t, schema), open(t, schema)
}

// rvpgCP is a checkpoint of thread with the channels given as name,
// version, value triples (a value "" is an unchanged channel).
func rvpgCP(thread, id, parent string, chans ...any) *checkpoint.Checkpoint {
	cp := &checkpoint.Checkpoint{ID: id, ThreadID: thread, ParentID: parent}
	for i := 0; i < len(chans); i += 3 {
		ch := checkpoint.Channel{Name: chans[i].(string), Version: int64(chans[i+1].(int))}
		if v := chans[i+2].(string); v != "" {
			ch.Value = []byte(v)
		}
		cp.Channels = append(cp.Channels, ch)
	}
	return cp
}

// rvpgNoUniqueViolation fails when err is (or wraps) a unique violation.
func rvpgNoUniqueViolation(t *testing.T, err error) {
	t.Helper()
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok {
		require.NotEqual(t, "23505", pe.Code, "a unique violation leaked to the caller: %v", err)
	}
}

// rvpgValues reads every checkpoint of thread with List and GetTuple,
// which must agree, and returns "id: channel=value ..." lines, newest
// first.
func rvpgValues(t *testing.T, s checkpoint.Saver, thread string) []string {
	t.Helper()
	var out []string
	for tup, err := range s.List(t.Context(), thread, checkpoint.ListOptions{}) {
		require.NoError(t, err)
		got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: thread, ID: tup.Checkpoint.ID})
		require.NoError(t, err)
		require.Equal(t, tup.Checkpoint.Channels, got.Checkpoint.Channels, "List and Get of %s", tup.Checkpoint.ID)
		line := tup.Checkpoint.ID + ":"
		for _, ch := range tup.Checkpoint.Channels {
			line += fmt.Sprintf(" %s@%d=%s", ch.Name, ch.Version, ch.Value)
		}
		out = append(out, line)
	}
	return out
}

func TestReviewRvpgFencedPutOfALostLeaseThatMeetsAStoredRowGetsTheFenceErrorAndWritesNothing(t *testing.T) {
	// The stale holder (saver a) last wrote 0001; the new holder (saver b)
	// wrote 0002 on it. a's Put of its own 0002 meets b's rows — a blob
	// of the same version with another value, with the same value, or
	// only the checkpoint row — so its first try fails on a unique
	// violation before its check: the write sent again must still be
	// refused by the fence.
	cases := []struct {
		name string
		mine *checkpoint.Checkpoint // a's 0002
	}{
		{"a-blob-with-another-value", rvpgCP("t", "0002", "0001", "a", 2, `["x","stale"]`)},
		{"a-blob-with-the-same-value", rvpgCP("t", "0002", "0001", "a", 2, `["x","y"]`)},
		{"the-checkpoint-row-only", rvpgCP("t", "0002", "0001", "a", 1, "", "c", 1, `"mine"`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			schema, a, b := rvpgTwo(t)
			old, err := a.AcquireLease(t.Context(), "t", "old", time.Minute)
			require.NoError(t, err)
			require.NoError(t, checkpoint.Fenced(a, old).Put(t.Context(), rvpgCP("t", "0001", "", "a", 1, `["x"]`)))
			require.NoError(t, a.ReleaseLease(t.Context(), old))
			cur, err := b.AcquireLease(t.Context(), "t", "new", time.Minute)
			require.NoError(t, err)
			require.NoError(t, checkpoint.Fenced(b, cur).Put(t.Context(), rvpgCP("t", "0002", "0001", "a", 2, `["x","y"]`)))
			before := reviewDump(t, schema)

			err = checkpoint.Fenced(a, old).Put(t.Context(), c.mine)
			rvpgNoUniqueViolation(t, err)
			require.ErrorIs(t, err, checkpoint.ErrLeaseLost)
			reviewAs[*checkpoint.FencedError](t, err, "the stale holder's Put")
			require.Equal(t, before, reviewDump(t, schema), "the refused Put wrote nothing")
			require.Equal(t, []string{`0002: a@2=["x","y"]`, `0001: a@1=["x"]`}, rvpgValues(t, b, "t"))
		})
	}
}

func TestReviewRvpgFencedPutBatchOfALostLeaseThatMeetsAStoredRowGetsTheFenceError(t *testing.T) {
	// The same for a PutBatch of the stale holder whose first Put meets
	// the new holder's row and whose second would be new.
	schema, a, b := rvpgTwo(t)
	old, err := a.AcquireLease(t.Context(), "t", "old", time.Minute)
	require.NoError(t, err)
	stale := checkpoint.Fenced(a, old).(checkpoint.Batcher)
	require.NoError(t, stale.PutBatch(t.Context(), []checkpoint.Op{{Checkpoint: rvpgCP("t", "0001", "", "a", 1, `["x"]`)}}))
	require.NoError(t, a.ReleaseLease(t.Context(), old))
	cur, err := b.AcquireLease(t.Context(), "t", "new", time.Minute)
	require.NoError(t, err)
	require.NoError(t, checkpoint.Fenced(b, cur).Put(t.Context(), rvpgCP("t", "0002", "0001", "a", 2, `["x","y"]`)))
	before := reviewDump(t, schema)

	err = stale.PutBatch(t.Context(), []checkpoint.Op{
		{Checkpoint: rvpgCP("t", "0002", "0001", "a", 2, `["x","y"]`)},
		{Checkpoint: rvpgCP("t", "0003", "0002", "a", 3, `["x","y","z"]`)},
	})
	rvpgNoUniqueViolation(t, err)
	require.ErrorIs(t, err, checkpoint.ErrLeaseLost)
	require.Equal(t, before, reviewDump(t, schema), "the refused PutBatch wrote nothing")
}

func TestReviewRvpgPutAgainWithTheSameIDAndAnotherValueIsAVersionConflictAndWritesNothing(t *testing.T) {
	// Savers a and b both wrote 0001. a writes 0002 (channels a and c);
	// b writes 0002 again with the same value of a and another of c: its
	// first try fails on a's blob of a, and the write sent again must be
	// refused for c, with nothing of it stored (not even its new
	// channel d, nor the checkpoint row's new metadata).
	for _, order := range []string{"the-conflict-after-a-same-blob", "the-conflict-first"} {
		t.Run(order, func(t *testing.T) {
			schema, a, b := rvpgTwo(t)
			first := rvpgCP("t", "0001", "", "a", 1, `["x"]`)
			require.NoError(t, a.Put(t.Context(), first))
			require.NoError(t, b.Put(t.Context(), first))
			c := "c"
			if order == "the-conflict-first" {
				c = "0c" // sorted before a: its insert is the first to fail
			}
			require.NoError(t, a.Put(t.Context(), rvpgCP("t", "0002", "0001", "a", 2, `["x","y"]`, c, 1, `"a's"`)))
			before := reviewDump(t, schema)

			again := rvpgCP("t", "0002", "0001", "a", 2, `["x","y"]`, c, 1, `"b's"`, "d", 1, `"new"`)
			again.Metadata.Step = 7
			err := b.Put(t.Context(), again)
			rvpgNoUniqueViolation(t, err)
			conflict := reviewAs[*checkpoint.VersionConflictError](t, err, "b's Put again")
			require.Equal(t, c, conflict.Channel)
			require.Equal(t, before, reviewDump(t, schema), "the refused Put wrote nothing")

			// b goes on from what is stored.
			require.NoError(t, b.Put(t.Context(), rvpgCP("t", "0003", "0002", "a", 3, `["x","y","z"]`, c, 1, "")))
			line := func(id, a string) string {
				if c == "0c" {
					return id + `: 0c@1="a's" ` + a
				}
				return id + ": " + a + ` c@1="a's"`
			}
			require.Equal(t, []string{line("0003", `a@3=["x","y","z"]`), line("0002", `a@2=["x","y"]`), `0001: a@1=["x"]`}, rvpgValues(t, a, "t"))
		})
	}
}

func TestReviewRvpgPutOfAForkOnAStoredVersionIsAConflictAndWritesNothing(t *testing.T) {
	// a last wrote 0001; b wrote 0002 on it. a's 0003 on 0001 (a fork it
	// did not mark) is refused with a ConflictError naming b's 0002,
	// whether it meets b's blob (the same version of a) or not (a new
	// channel only).
	for _, name := range []string{"meets-a-stored-blob", "meets-no-stored-row"} {
		t.Run(name, func(t *testing.T) {
			schema, a, b := rvpgTwo(t)
			first := rvpgCP("t", "0001", "", "a", 1, `["x"]`)
			require.NoError(t, a.Put(t.Context(), first))
			require.NoError(t, b.Put(t.Context(), first))
			require.NoError(t, b.Put(t.Context(), rvpgCP("t", "0002", "0001", "a", 2, `["x","b"]`)))
			before := reviewDump(t, schema)
			fork := rvpgCP("t", "0003", "0001", "a", 2, `["x","a"]`)
			if name == "meets-no-stored-row" {
				fork = rvpgCP("t", "0003", "0001", "a", 1, "", "e", 1, `"e"`)
			}
			err := a.Put(t.Context(), fork)
			rvpgNoUniqueViolation(t, err)
			conflict := reviewAs[*checkpoint.ConflictError](t, err, "a's fork")
			require.Equal(t, "0002", conflict.LatestID)
			require.Equal(t, before, reviewDump(t, schema), "the refused Put wrote nothing")
		})
	}
}

func TestReviewRvpgPutBatchSpanningThreadsWhereOneRowIsStoredIsAllOrNothing(t *testing.T) {
	// A PutBatch of threads t1 (new) and t2, whose checkpoint another
	// saver stored already: with the same value, both are stored (the
	// batch sent again upserted); with another value of the same
	// version, the batch is refused and t1 is not written either.
	for _, same := range []bool{true, false} {
		t.Run(fmt.Sprintf("same-value=%v", same), func(t *testing.T) {
			schema, a, b := rvpgTwo(t)
			v := `"t2"`
			if !same {
				v = `"other"`
			}
			require.NoError(t, b.Put(t.Context(), rvpgCP("t2", "0001", "", "a", 1, v)))
			before := reviewDump(t, schema)
			err := a.PutBatch(t.Context(), []checkpoint.Op{
				{Checkpoint: rvpgCP("t1", "0001", "", "a", 1, `"t1"`)},
				{Checkpoint: rvpgCP("t2", "0001", "", "a", 1, `"t2"`)},
			})
			rvpgNoUniqueViolation(t, err)
			if !same {
				reviewAs[*checkpoint.VersionConflictError](t, err, "the PutBatch")
				require.Equal(t, before, reviewDump(t, schema), "the refused PutBatch wrote nothing")
				return
			}
			require.NoError(t, err)
			require.Equal(t, []string{`0001: a@1="t1"`}, rvpgValues(t, a, "t1"))
			require.Equal(t, []string{`0001: a@1="t2"`}, rvpgValues(t, a, "t2"))
			// Each thread's next Put finds its base.
			require.NoError(t, a.Put(t.Context(), rvpgCP("t1", "0002", "0001", "a", 2, `"t1 2"`)))
			require.NoError(t, a.Put(t.Context(), rvpgCP("t2", "0002", "0001", "a", 2, `"t2 2"`)))
			require.Equal(t, []string{`0002: a@2="t2 2"`, `0001: a@1="t2"`}, rvpgValues(t, b, "t2"))
		})
	}
}

func TestReviewRvpgTwoSaversRacingOnOneThreadLetOneWinEachStepWithTypedErrors(t *testing.T) {
	// Savers a and b, each from its own goroutine, write the same thread
	// step after step, each on the latest checkpoint it knows, with the
	// same channel versions and their own values. At each step either
	// writer may win; the loser gets a ConflictError or a
	// VersionConflictError (never a raw database error), reads the latest
	// back and goes on. The stored chain reads back whole.
	_, a, b := rvpgTwo(t)
	const steps = 40
	var mu sync.Mutex
	won := map[string]string{} // id -> value of a, as stored
	run := func(s *postgres.Saver, who string) error {
		parent, list, version := "", "[", 0
		for range steps {
			version++
			item := fmt.Sprintf(`"%s%d"`, who, version)
			if version > 1 {
				item = "," + item
			}
			value := list + item + "]"
			id := fmt.Sprintf("%04d-%s", version, who)
			err := s.Put(t.Context(), rvpgCP("t", id, parent, "a", version, value))
			if err == nil {
				mu.Lock()
				won[id] = value
				mu.Unlock()
				parent, list = id, value[:len(value)-1]
				continue
			}
			_, conflict := errors.AsType[*checkpoint.ConflictError](err)
			_, version2 := errors.AsType[*checkpoint.VersionConflictError](err)
			if !conflict && !version2 {
				return fmt.Errorf("%s step %d: %w", who, version, err)
			}
			latest, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: "t"})
			if err != nil {
				return err
			}
			parent, version = latest.ID, int(latest.Checkpoint.Channels[0].Version)
			list = string(latest.Value("a"))
			list = list[:len(list)-1]
		}
		return nil
	}
	errs := make(chan error, 2)
	go func() { errs <- run(a, "a") }()
	go func() { errs <- run(b, "b") }()
	for range 2 {
		err := <-errs
		rvpgNoUniqueViolation(t, err)
		require.NoError(t, err)
	}
	got := rvpgValues(t, a, "t")
	require.Len(t, got, len(won))
	for _, line := range got {
		id := line[:strings.Index(line, ":")]
		require.Equal(t, fmt.Sprintf("%s: a@%s=%s", id, strings.TrimLeft(id[:4], "0"), won[id]), line)
	}
	// Each stored checkpoint's parent is the one before it.
	var prev *checkpoint.Tuple
	for tup, err := range a.List(t.Context(), "t", checkpoint.ListOptions{}) {
		require.NoError(t, err)
		if prev != nil {
			require.Equal(t, tup.Checkpoint.ID, prev.Checkpoint.ParentID)
		}
		prev = tup
	}
}

func TestReviewRvpgTwoSaversWritingTheSameCheckpointsConcurrentlyBothSucceed(t *testing.T) {
	// Two processes replaying one run (the same IDs and values) at once,
	// step by step: whichever stores a row first, the other's write meets
	// it, and both succeed at every step; the chain reads back whole, and each saver
	// can go on alone from its cache.
	_, a, b := rvpgTwo(t)
	const steps = 40
	cps := make([]*checkpoint.Checkpoint, steps)
	list, parent := "[", ""
	for i := range steps {
		if i > 0 {
			list += ","
		}
		list += fmt.Sprintf(`"%d"`, i)
		id := fmt.Sprintf("%04d", i+1)
		cps[i] = rvpgCP("t", id, parent, "a", i+1, list+"]", "b", 1, map[bool]string{true: `"b"`, false: ""}[i == 0])
		parent = id
	}
	errs := make([][]error, 2)
	for _, cp := range cps { // in lockstep: a step again once the thread moved on is a conflict
		var wg sync.WaitGroup
		for k, s := range []*postgres.Saver{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := *cp
				errs[k] = append(errs[k], s.Put(t.Context(), &c))
			}()
		}
		wg.Wait()
	}
	for k := range errs {
		for i, err := range errs[k] {
			rvpgNoUniqueViolation(t, err)
			require.NoError(t, err, "saver %d step %d", k, i)
		}
	}
	got := rvpgValues(t, b, "t")
	require.Len(t, got, steps)
	require.Equal(t, fmt.Sprintf(`%04d: a@%d=%s b@1="b"`, steps, steps, list+"]"), got[0])
	for k, s := range []*postgres.Saver{a, b} {
		next := rvpgCP("t", fmt.Sprintf("%04d-%d", steps+1, k), fmt.Sprintf("%04d", steps), "a", steps+1+k, list+`,"next"]`, "b", 1, "")
		if k == 1 {
			next.ParentID = fmt.Sprintf("%04d-0", steps+1)
		}
		require.NoError(t, s.Put(t.Context(), next))
	}
	require.Equal(t, fmt.Sprintf(`%04d-1: a@%d=%s b@1="b"`, steps+1, steps+2, list+`,"next"]`), rvpgValues(t, a, "t")[0])
}

func TestReviewRvpgAFailedFirstTryThenASuccessfulResendLeavesTheCacheRight(t *testing.T) {
	// b stored the checkpoint row 0002 (channel z only). a's 0002 — a
	// delta of a on 0001 — inserts its blob in the first try, then meets
	// b's row: that batch rolls back, and the write sent again inserts
	// the blob again and replaces the row. a's later deltas must find
	// their bases (the cache records what was stored), and every value
	// reads back.
	_, a, b := rvpgTwo(t)
	long := `["` + strings.Repeat("x", 300) + `"`
	require.NoError(t, a.Put(t.Context(), rvpgCP("t", "0001", "", "a", 1, long+"]")))
	require.NoError(t, b.Put(t.Context(), rvpgCP("t", "0001", "", "a", 1, long+"]")))
	require.NoError(t, b.Put(t.Context(), rvpgCP("t", "0002", "0001", "a", 1, "", "z", 1, `"b's"`)))

	require.NoError(t, a.Put(t.Context(), rvpgCP("t", "0002", "0001", "a", 2, long+`,"2"]`)))
	require.NoError(t, a.Put(t.Context(), rvpgCP("t", "0003", "0002", "a", 3, long+`,"2","3"]`)))
	require.NoError(t, a.Put(t.Context(), rvpgCP("t", "0004", "0003", "a", 4, long+`,"2","3","4"]`)))
	want := []string{
		`0004: a@4=` + long + `,"2","3","4"]`,
		`0003: a@3=` + long + `,"2","3"]`,
		`0002: a@2=` + long + `,"2"]`,
		`0001: a@1=` + long + `]`,
	}
	require.Equal(t, want, rvpgValues(t, a, "t"))
	require.Equal(t, want, rvpgValues(t, b, "t"))
}

func TestReviewRvpgAResendAfterABlobStoredWithTheSameValueLeavesTheCacheRight(t *testing.T) {
	// b wrote a's next step first (the same ID and value): a's 0002 meets
	// b's blob (kept: stored already, possibly encoded otherwise) and is
	// sent again; a's next deltas are encoded against what is stored.
	_, a, b := rvpgTwo(t)
	long := `["` + strings.Repeat("y", 300) + `"`
	first := rvpgCP("t", "0001", "", "a", 1, long+"]")
	require.NoError(t, a.Put(t.Context(), first))
	require.NoError(t, b.Put(t.Context(), first))
	second := rvpgCP("t", "0002", "0001", "a", 2, long+`,"2"]`)
	require.NoError(t, b.Put(t.Context(), second))
	require.NoError(t, a.Put(t.Context(), second))
	for i := 3; i <= 6; i++ {
		list := long
		for j := 2; j <= i; j++ {
			list += fmt.Sprintf(`,"%d"`, j)
		}
		require.NoError(t, a.Put(t.Context(), rvpgCP("t", fmt.Sprintf("%04d", i), fmt.Sprintf("%04d", i-1), "a", i, list+"]")))
	}
	got := rvpgValues(t, b, "t")
	require.Len(t, got, 6)
	require.Equal(t, `0006: a@6=`+long+`,"2","3","4","5","6"]`, got[0])
	require.Equal(t, `0002: a@2=`+long+`,"2"]`, got[4])
}

func TestReviewRvpgNULAndLargeValuesOnThePlainInsertPathReadBack(t *testing.T) {
	// A next step (one round trip, plain inserts) whose metadata holds
	// U+0000 and a large string, and whose values are large and hold NUL
	// bytes: stored as a Put made the long way stores them.
	s := open(t, freshSchema(t))
	require.NoError(t, s.Put(t.Context(), rvpgCP("t", "0001", "", "a", 1, `["x"]`)))
	big := strings.Repeat("0123456789abcdef", 1<<18) // 4 MiB
	cp := rvpgCP("t", "0002", "0001", "a", 2, `["x","`+big+`"]`, "n", 1, "\x00\x01\x00", "w", 1, `"`+big+`"`)
	cp.Metadata = checkpoint.Metadata{Source: "loop", Step: 1, RunID: "r\x00",
		Extra: map[string]any{"who": "a\x00b", "big": big}}
	require.NoError(t, s.Put(t.Context(), cp))
	tup, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: "t"})
	require.NoError(t, err)
	require.Equal(t, "0002", tup.ID)
	require.Equal(t, "r\uFFFD", tup.Checkpoint.Metadata.RunID)
	require.Equal(t, map[string]any{"who": "a\uFFFDb", "big": big}, tup.Checkpoint.Metadata.Extra)
	require.Equal(t, `["x","`+big+`"]`, string(tup.Value("a")))
	require.Equal(t, "\x00\x01\x00", string(tup.Value("n")))
	require.Equal(t, `"`+big+`"`, string(tup.Value("w")))
	// The next step is a delta on the large value.
	require.NoError(t, s.Put(t.Context(), rvpgCP("t", "0003", "0002", "a", 3, `["x","`+big+`","y"]`, "n", 1, "", "w", 1, "")))
	tup, err = s.Get(t.Context(), checkpoint.Ref{ThreadID: "t"})
	require.NoError(t, err)
	require.Equal(t, `["x","`+big+`","y"]`, string(tup.Value("a")))
}

func TestReviewRvpgAChannelNameWithNULIsRefusedWithoutAUniqueViolationAndWritesNothing(t *testing.T) {
	// A text column cannot hold U+0000: the Put fails (as the long way
	// fails), with the server's error, whether or not its first try also
	// met a stored row; the saver goes on.
	schema := freshSchema(t)
	s := open(t, schema)
	require.NoError(t, s.Put(t.Context(), rvpgCP("t", "0001", "", "a", 1, `["x"]`)))
	before := reviewDump(t, schema)
	for _, cp := range []*checkpoint.Checkpoint{
		rvpgCP("t", "0002", "0001", "a", 2, `["x","y"]`, "b\x00", 1, `1`),
		rvpgCP("t", "0001", "", "a", 1, `["x"]`, "b\x00", 1, `1`), // meets 0001's rows too
	} {
		err := s.Put(t.Context(), cp)
		require.Error(t, err)
		rvpgNoUniqueViolation(t, err)
		require.Equal(t, before, reviewDump(t, schema))
	}
	require.NoError(t, s.Put(t.Context(), rvpgCP("t", "0002", "0001", "a", 2, `["x","y"]`)))
	require.Equal(t, []string{`0002: a@2=["x","y"]`, `0001: a@1=["x"]`}, rvpgValues(t, s, "t"))
}
