package postgres_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
)

// TestReviewRvpgHostileScriptsGiveTypedErrorsAndRefusedWritesWriteNothing
// runs seeded scripts of hostile writes made one after another by two
// savers (two pools, as two processes) on two threads: next steps on what
// each saver believes is the latest (often stale), replays of the other
// saver's last Put (the same, or with one value changed), forks, Puts
// again of a stored ID, PutBatches over both threads, pending writes,
// blobs stored by a third process that left no checkpoint, and fenced
// writes of a lease taken over. Each write is lone in its group-commit
// batch, so every Put on the one-round-trip path tries its plain inserts
// first. Every refused write leaves the tables as they were, no error is
// a unique violation, and every stored checkpoint reads back the value its
// Put gave.
//
// With REVIEW_RVPG_TRANSCRIPT=path, the test writes each write's outcome
// and the final tables to path: the transcripts of the package before the
// change (3455b29) and after it are the same (the review diffed them).
func TestReviewRvpgHostileScriptsGiveTypedErrorsAndRefusedWritesWriteNothing(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4}
	if s := os.Getenv("REVIEW_RVPG_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		seeds = []uint64{n}
	}
	var transcript strings.Builder
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			fmt.Fprintf(&transcript, "seed %d\n", seed)
			rvpgScript(t, seed, 300, &transcript)
		})
	}
	if path := os.Getenv("REVIEW_RVPG_TRANSCRIPT"); path != "" {
		require.NoError(t, os.WriteFile(path, []byte(transcript.String()), 0o644))
	}
}

// rvpgKnown is what a saver believes of a thread: its latest checkpoint.
type rvpgKnown struct {
	cp  *checkpoint.Checkpoint
	ids []string // the thread's checkpoints it saw, oldest first
}

func rvpgScript(t *testing.T, seed uint64, steps int, out *strings.Builder) {
	schema := freshSchema(t)
	savers := []*postgres.Saver{open(t, schema), open(t, schema)}
	threads := []string{"t1", "t2"}
	rng := rand.New(rand.NewPCG(seed, 0))
	known := [2]map[string]*rvpgKnown{{}, {}}
	last := [2]map[string]*checkpoint.Checkpoint{{}, {}} // each saver's last Put per thread
	leases := [2]map[string]*checkpoint.Lease{{}, {}}    // each saver's last lease per thread
	holder := map[string]int{}                           // the saver holding each thread's lease
	stored := map[string]string{}                        // thread/id -> the values its last successful Put gave
	counter := 0
	newID := func() string { counter++; return fmt.Sprintf("%05d", counter) }
	conn := connect(t, schema)
	dump := func() []string { return dumpRows(t, conn) } // every row but the leases', in key order

	view := func(k int, th string) checkpoint.Saver {
		if l := leases[k][th]; l != nil {
			return checkpoint.Fenced(savers[k], *l)
		}
		return savers[k]
	}
	values := func(cp *checkpoint.Checkpoint, prev *checkpoint.Checkpoint) string {
		var parts []string
		for _, ch := range cp.Channels {
			v := ch.Value
			if v == nil && prev != nil {
				for _, p := range prev.Channels {
					if p.Name == ch.Name && p.Version == ch.Version {
						v = p.Value
					}
				}
			}
			parts = append(parts, fmt.Sprintf("%s@%d=%s", ch.Name, ch.Version, v))
		}
		return strings.Join(parts, " ")
	}
	// next returns a child of base with a appended to and b sometimes
	// changed; base's values are full (read back or put).
	next := func(th string, base *checkpoint.Checkpoint, id string) *checkpoint.Checkpoint {
		cp := &checkpoint.Checkpoint{ID: id, ThreadID: th, Metadata: checkpoint.Metadata{Step: rng.IntN(5)}}
		a, av, b, bv := "[", int64(0), "", int64(0)
		if base != nil {
			cp.ParentID = base.ID
			for _, ch := range base.Channels {
				switch ch.Name {
				case "a":
					a, av = string(ch.Value[:len(ch.Value)-1])+",", ch.Version
				case "b":
					b, bv = string(ch.Value), ch.Version
				}
			}
		}
		cp.Channels = append(cp.Channels, checkpoint.Channel{Name: "a", Version: av + 1 + int64(rng.IntN(2)),
			Value: []byte(a + fmt.Sprintf(`"%s-%d"`, id, rng.IntN(3)) + "]")})
		if b == "" || rng.IntN(2) == 0 {
			cp.Channels = append(cp.Channels, checkpoint.Channel{Name: "b", Version: bv + 1, Value: []byte(strconv.Itoa(rng.IntN(3)))})
		} else {
			cp.Channels = append(cp.Channels, checkpoint.Channel{Name: "b", Version: bv, Value: []byte(b)})
		}
		return cp
	}
	full := func(cp *checkpoint.Checkpoint) *checkpoint.Checkpoint { // cp with every value (for next)
		c := *cp
		c.Channels = append([]checkpoint.Channel(nil), cp.Channels...)
		return &c
	}
	// unchanged returns cp with the channels whose value equals base's
	// at the same version sent without a value, as a runner does.
	unchanged := func(cp, base *checkpoint.Checkpoint) *checkpoint.Checkpoint {
		c := full(cp)
		if base == nil {
			return c
		}
		for i, ch := range c.Channels {
			for _, p := range base.Channels {
				if p.Name == ch.Name && p.Version == ch.Version && string(p.Value) == string(ch.Value) {
					c.Channels[i].Value = nil
				}
			}
		}
		return c
	}
	refresh := func(k int, th string) {
		got, err := savers[k].Get(t.Context(), checkpoint.Ref{ThreadID: th})
		if errors.Is(err, checkpoint.ErrNotFound) {
			known[k][th] = nil
			return
		}
		require.NoError(t, err)
		kn := &rvpgKnown{cp: &got.Checkpoint}
		if old := known[k][th]; old != nil {
			kn.ids = old.ids
		}
		kn.ids = append(kn.ids, got.ID)
		known[k][th] = kn
	}

	for step := range steps {
		k := rng.IntN(2)
		th := threads[rng.IntN(2)]
		s := view(k, th)
		kn := known[k][th]
		var base *checkpoint.Checkpoint
		if kn != nil {
			base = kn.cp
		}
		var desc string
		var puts []*checkpoint.Checkpoint // with full values, for the model
		var err error
		before := dump()
		switch op := rng.IntN(20); {
		case op < 7: // a next step on what k believes
			cp := next(th, base, newID())
			desc, puts = "next "+cp.ID, []*checkpoint.Checkpoint{cp}
			err = s.Put(t.Context(), unchanged(cp, base))
		case op < 10: // the other saver's last Put again, maybe altered
			o := last[1-k][th]
			if o == nil {
				continue
			}
			cp := full(o)
			desc = "replay " + cp.ID
			if rng.IntN(2) == 0 {
				i := rng.IntN(len(cp.Channels))
				cp.Channels[i].Value = []byte(`"altered"`)
				desc += " altered " + cp.Channels[i].Name
			}
			puts = []*checkpoint.Checkpoint{cp}
			err = s.Put(t.Context(), cp)
		case op < 11: // k's own last Put again
			o := last[k][th]
			if o == nil {
				continue
			}
			desc, puts = "again "+o.ID, []*checkpoint.Checkpoint{o}
			err = s.Put(t.Context(), full(o))
		case op < 12: // a fork on an older checkpoint k saw, not marked
			if kn == nil || len(kn.ids) < 2 {
				continue
			}
			older, err2 := savers[k].Get(t.Context(), checkpoint.Ref{ThreadID: th, ID: kn.ids[rng.IntN(len(kn.ids)-1)]})
			require.NoError(t, err2)
			cp := next(th, &older.Checkpoint, newID())
			desc, puts = "fork "+cp.ID+" on "+older.ID, []*checkpoint.Checkpoint{cp}
			err = s.Put(t.Context(), unchanged(cp, &older.Checkpoint))
		case op < 14: // a PutBatch of both threads' next steps
			var ops []checkpoint.Op
			for _, th2 := range threads {
				var b2 *checkpoint.Checkpoint
				if kn2 := known[k][th2]; kn2 != nil {
					b2 = kn2.cp
				}
				cp := next(th2, b2, newID())
				puts = append(puts, cp)
				ops = append(ops, checkpoint.Op{Checkpoint: unchanged(cp, b2)})
			}
			desc = "batch " + puts[0].ID + " " + puts[1].ID
			bs := savers[k]
			if leases[k]["t1"] != nil || leases[k]["t2"] != nil {
				// A fenced view writes one thread: the batch is made
				// unfenced, leases aside.
				desc += " unfenced"
			}
			err = bs.PutBatch(t.Context(), ops)
		case op < 15: // pending writes on what k believes is latest
			if base == nil {
				continue
			}
			desc = "writes " + base.ID
			err = s.PutWrites(t.Context(), checkpoint.Ref{ThreadID: th, ID: base.ID},
				[]checkpoint.Write{{TaskID: "t", Idx: rng.IntN(2) - 1, Channel: "a", Value: []byte(strconv.Itoa(step))}})
		case op < 17: // a blob a third process stored, with no checkpoint
			v := int64(1)
			if base != nil {
				v = base.Channels[0].Version + 1
			}
			value := fmt.Sprintf(`"stray-%d"`, rng.IntN(2))
			desc = fmt.Sprintf("stray blob a@%d", v)
			_, err = conn.Exec(t.Context(), `INSERT INTO agentgraph_blobs (thread_id, ns, channel, version, depth, size, hash, data)
				VALUES ($1, '', 'a', $2, 0, length($3::bytea), sha256($3::bytea), $3::bytea) ON CONFLICT DO NOTHING`, th, v, []byte(value))
			require.NoError(t, err)
			fmt.Fprintf(out, "%d saver %d %s %s\n", step, k, th, desc)
			continue
		default: // k takes the thread's lease over from whoever holds it
			if h, ok := holder[th]; ok {
				if h == k {
					continue
				}
				// The other keeps its lease, stale now.
				require.NoError(t, savers[h].ReleaseLease(t.Context(), *leases[h][th]))
			}
			holder[th] = k
			l, err2 := savers[k].AcquireLease(t.Context(), th, fmt.Sprintf("saver%d", k), time.Hour)
			require.NoError(t, err2)
			leases[k][th] = &l
			fmt.Fprintf(out, "%d saver %d %s lease fence %d\n", step, k, th, l.Fence)
			continue
		}
		outcome := "ok"
		if err != nil {
			outcome = err.Error()
		}
		fmt.Fprintf(out, "%d saver %d %s %s: %s\n", step, k, th, desc, outcome)
		rvpgNoUniqueViolation(t, err)
		if err != nil {
			_, c1 := errors.AsType[*checkpoint.ConflictError](err)
			_, c2 := errors.AsType[*checkpoint.VersionConflictError](err)
			require.True(t, c1 || c2 || errors.Is(err, checkpoint.ErrLeaseLost), "step %d %s: an untyped error: %v", step, desc, err)
			require.Equal(t, before, dump(), "step %d %s: the refused write wrote nothing", step, desc)
			if errors.Is(err, checkpoint.ErrLeaseLost) && rng.IntN(2) == 0 {
				leases[k][th] = nil // it goes on unfenced
			}
			for _, th2 := range threads {
				if rng.IntN(3) > 0 {
					refresh(k, th2)
				}
			}
			continue
		}
		for _, cp := range puts {
			last[k][cp.ThreadID] = cp
			kn := known[k][cp.ThreadID]
			if kn == nil {
				kn = &rvpgKnown{}
				known[k][cp.ThreadID] = kn
			}
			kn.cp = full(cp)
			kn.ids = append(kn.ids, cp.ID)
			// The stored value of each channel: cp's, or, for one stored
			// already at its version, the stored one (the first is kept).
			got, err := savers[1-k].Get(t.Context(), checkpoint.Ref{ThreadID: cp.ThreadID, ID: cp.ID})
			require.NoError(t, err)
			require.Equal(t, values(cp, nil), values(&got.Checkpoint, nil), "step %d %s: %s reads back", step, desc, cp.ID)
			stored[cp.ThreadID+"/"+cp.ID] = values(cp, nil)
		}
	}
	// Every checkpoint reads back the values of its last successful Put,
	// through List and Get, on either saver.
	for _, th := range threads {
		for tup, err := range savers[0].List(t.Context(), th, checkpoint.ListOptions{}) {
			require.NoError(t, err)
			want, ok := stored[th+"/"+tup.Checkpoint.ID]
			require.True(t, ok, "%s/%s stored by no successful Put", th, tup.Checkpoint.ID)
			require.Equal(t, want, values(&tup.Checkpoint, nil), "%s/%s", th, tup.Checkpoint.ID)
		}
	}
	for _, row := range dump() {
		fmt.Fprintln(out, row)
	}
}
