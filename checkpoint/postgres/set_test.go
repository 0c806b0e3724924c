package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
)

// Set-based batches (set.go): a batch of the saver's own writes is sent
// as a few statements over arrays. Each case puts hostile writes in one
// batch between two plain Puts (threads before and after) and checks what
// landed against what the writes made one by one leave.

func TestSetBatchKeepsTheSemanticsOfWritesMadeOneByOne(t *testing.T) {
	list := func(thread, id, parent string, version int64, value string) *checkpoint.Checkpoint {
		return &checkpoint.Checkpoint{ID: id, ThreadID: thread, ParentID: parent,
			Channels: []checkpoint.Channel{{Name: "a", Version: version, Value: []byte(value)}}}
	}
	cases := []struct {
		name string
		// setup stores what the case needs and returns its writes.
		setup func(t *testing.T, s *postgres.Saver, schema, th string) []func() error
		// check checks the writes' errors and what they stored.
		check func(t *testing.T, s *postgres.Saver, th string, errs []error)
		// refused is how many writes the batch refuses at its check
		// (each is then made the long way), upserts how many times the
		// batch is sent again with ON CONFLICT, fallbacks how many times
		// as statements.
		refused, upserts, fallbacks int64
	}{
		{
			name: "one-thread-chain-of-deltas-in-one-put-batch",
			setup: func(t *testing.T, s *postgres.Saver, _, th string) []func() error {
				require.NoError(t, s.Put(t.Context(), list(th, "0001", "", 1, `["a"]`)))
				return []func() error{func() error {
					return s.PutBatch(t.Context(), []checkpoint.Op{
						{Checkpoint: list(th, "0002", "0001", 2, `["a","b"]`)},
						{Checkpoint: list(th, "0003", "0002", 3, `["a","b","c"]`)},
						{Ref: checkpoint.Ref{ThreadID: th, ID: "0003"}, Writes: []checkpoint.Write{{TaskID: "t", Channel: "a", Value: []byte(`1`)}}},
						{Checkpoint: list(th, "0004", "0003", 4, `["a","b","c","d"]`)},
					})
				}}
			},
			check: func(t *testing.T, s *postgres.Saver, th string, errs []error) {
				require.NoError(t, errs[0])
				for i, want := range []string{`["a","b"]`, `["a","b","c"]`, `["a","b","c","d"]`} {
					reviewValue(t, s, th, fmt.Sprintf("%04d", i+2), want)
				}
				requireLatest(t, s, th, "0004")
				got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: th, ID: "0003"})
				require.NoError(t, err)
				require.Len(t, got.PendingWrites, 1)
			},
		},
		{
			name: "one-key-twice-in-one-put-writes",
			setup: func(t *testing.T, s *postgres.Saver, _, th string) []func() error {
				require.NoError(t, s.Put(t.Context(), cpOf(th, "0001", "", 1, `1`)))
				return []func() error{func() error {
					return s.PutWrites(t.Context(), checkpoint.Ref{ThreadID: th, ID: "0001"}, []checkpoint.Write{
						{TaskID: "r", Idx: -1, Channel: "a", Value: []byte(`"first"`)},
						{TaskID: "k", Idx: 0, Channel: "a", Value: []byte(`"first"`)},
						{TaskID: "r", Idx: -1, Channel: "a", Value: []byte(`"last"`)},
						{TaskID: "k", Idx: 0, Channel: "a", Value: []byte(`"last"`)},
					})
				}}
			},
			check: func(t *testing.T, s *postgres.Saver, th string, errs []error) {
				require.NoError(t, errs[0])
				got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: th, ID: "0001"})
				require.NoError(t, err)
				require.Len(t, got.PendingWrites, 2)
				values := map[string]string{}
				for _, w := range got.PendingWrites {
					values[w.TaskID] = string(w.Value)
				}
				require.Equal(t, map[string]string{"k": `"first"`, "r": `"last"`}, values,
					"an index ≥ 0 keeps the first write of a key, an index < 0 the last")
			},
		},
		{
			name: "two-callers-write-one-thread-and-the-same-blob",
			setup: func(t *testing.T, s *postgres.Saver, _, th string) []func() error {
				return []func() error{
					func() error { return s.Put(t.Context(), cpOf(th, "0001", "", 1, `1`)) },
					func() error { return s.Put(t.Context(), cpOf(th, "0002", "", 1, `1`)) }, // starts the thread again
				}
			},
			check: func(t *testing.T, s *postgres.Saver, th string, errs []error) {
				require.NoError(t, errs[0])
				reviewAs[*checkpoint.ConflictError](t, errs[1], "the second start of the thread")
				requireLatest(t, s, th, "0001")
			},
			upserts: 1, // the second stores version 1 again
			refused: 1,
		},
		{
			name: "a-stale-parent",
			setup: func(t *testing.T, s *postgres.Saver, schema, th string) []func() error {
				require.NoError(t, s.Put(t.Context(), cpOf(th, "0001", "", 1, `1`)))
				require.NoError(t, open(t, schema).Put(t.Context(), cpOf(th, "0002", "0001", 2, `2`)))
				return []func() error{
					func() error { return s.Put(t.Context(), cpOf(th+"-x", "0001", "", 1, `1`)) },
					func() error { return s.Put(t.Context(), cpOf(th, "0003", "0001", 3, `3`)) }, // s knows 0001 as the latest
					func() error { return s.Put(t.Context(), cpOf(th+"-y", "0001", "", 1, `1`)) },
				}
			},
			check: func(t *testing.T, s *postgres.Saver, th string, errs []error) {
				require.NoError(t, errs[0])
				c := reviewAs[*checkpoint.ConflictError](t, errs[1], "the Put on a stale parent")
				require.Equal(t, "0002", c.LatestID)
				require.NoError(t, errs[2])
				requireLatest(t, s, th, "0002")
				requireLatest(t, s, th+"-x", "0001")
				requireLatest(t, s, th+"-y", "0001")
			},
			refused: 1,
		},
		{
			name: "a-blob-stored-already",
			setup: func(t *testing.T, s *postgres.Saver, schema, th string) []func() error {
				// The value of version 1, stored whole by a write that left
				// no checkpoint: the Put keeps it.
				_, err := connect(t, schema).Exec(t.Context(), `INSERT INTO agentgraph_blobs (thread_id, ns, channel, version, depth, size, hash, data)
					VALUES ($1, '', 'a', 1, 0, 5, sha256('["a"]'), '["a"]')`, th)
				require.NoError(t, err)
				return []func() error{func() error { return s.Put(t.Context(), list(th, "0001", "", 1, `["a"]`)) }}
			},
			check: func(t *testing.T, s *postgres.Saver, th string, errs []error) {
				require.NoError(t, errs[0])
				require.NoError(t, s.Put(t.Context(), list(th, "0002", "0001", 2, `["a","b"]`)))
				reviewValue(t, s, th, "0001", `["a"]`)
				reviewValue(t, s, th, "0002", `["a","b"]`)
			},
			upserts: 1, // the insert of version 1 fails; the upsert keeps the stored blob
		},
		{
			name: "a-checkpoint-written-again",
			setup: func(t *testing.T, s *postgres.Saver, _, th string) []func() error {
				require.NoError(t, s.Put(t.Context(), cpOf(th, "0001", "", 1, `1`)))
				return []func() error{func() error { return s.Put(t.Context(), cpOf(th, "0001", "", 2, `2`)) }}
			},
			check: func(t *testing.T, s *postgres.Saver, th string, errs []error) {
				require.NoError(t, errs[0])
				requireLatest(t, s, th, "0001")
				reviewValue(t, s, th, "0001", `2`)
			},
			upserts: 1, // the insert of checkpoint 0001 fails; the upsert updates it
		},
		{
			name: "an-insert-the-server-refuses",
			setup: func(t *testing.T, s *postgres.Saver, _, th string) []func() error {
				require.NoError(t, s.Put(t.Context(), cpOf(th, "0001", "", 1, `1`)))
				return []func() error{
					func() error { return s.Put(t.Context(), cpOf(th+"-ok", "0001", "", 1, `1`)) },
					func() error { // text may not hold a NUL
						return s.PutWrites(t.Context(), checkpoint.Ref{ThreadID: th, ID: "0001"},
							[]checkpoint.Write{{TaskID: "nul\x00", Channel: "a", Value: []byte(`1`)}})
					},
				}
			},
			check: func(t *testing.T, s *postgres.Saver, th string, errs []error) {
				require.NoError(t, errs[0])
				require.Error(t, errs[1])
				requireLatest(t, s, th+"-ok", "0001")
				got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: th, ID: "0001"})
				require.NoError(t, err)
				require.Empty(t, got.PendingWrites)
			},
			fallbacks: 1,
		},
		{
			name: "a-fenced-write-of-a-lost-lease",
			setup: func(t *testing.T, s *postgres.Saver, _, th string) []func() error {
				old, err := s.AcquireLease(t.Context(), th, "old", time.Minute)
				require.NoError(t, err)
				require.NoError(t, checkpoint.Fenced(s, old).Put(t.Context(), cpOf(th, "0001", "", 1, `1`)))
				require.NoError(t, s.ReleaseLease(t.Context(), old))
				_, err = s.AcquireLease(t.Context(), th, "new", time.Minute)
				require.NoError(t, err)
				fenced := checkpoint.Fenced(s, old)
				return []func() error{
					func() error {
						return fenced.PutWrites(t.Context(), checkpoint.Ref{ThreadID: th, ID: "0001"},
							[]checkpoint.Write{{TaskID: "t", Channel: "a", Value: []byte(`1`)}})
					},
					func() error { return fenced.Put(t.Context(), cpOf(th, "0002", "0001", 2, `2`)) },
				}
			},
			check: func(t *testing.T, s *postgres.Saver, th string, errs []error) {
				for _, err := range errs {
					require.ErrorIs(t, err, checkpoint.ErrLeaseLost)
				}
				got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: th})
				require.NoError(t, err)
				require.Equal(t, "0001", got.ID)
				require.Empty(t, got.PendingWrites)
			},
			refused: 2,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			schema := freshSchema(t)
			s := open(t, schema)
			th := fmt.Sprintf("set-%d", time.Now().UnixNano())
			writes := c.setup(t, s, schema, th)
			all := append([]func() error{func() error { return s.Put(t.Context(), cpOf(th+"-before", "0001", "", 1, `1`)) }}, writes...)
			all = append(all, func() error { return s.Put(t.Context(), cpOf(th+"-after", "0001", "", 1, `1`)) })
			sets0, refused0, upserts0, fallbacks0 := s.SetBatches()
			errs := reviewInOneBatch(t, s, schema, all...)
			sets, refused, upserts, fallbacks := s.SetBatches()
			require.NoError(t, errs[0])
			require.NoError(t, errs[len(errs)-1])
			requireLatest(t, s, th+"-before", "0001")
			requireLatest(t, s, th+"-after", "0001")
			c.check(t, s, th, errs[1:len(errs)-1])
			require.Positive(t, sets-sets0, "the batch is sent set-based")
			require.Equal(t, c.refused, refused-refused0, "writes refused at the check")
			require.Equal(t, c.upserts, upserts-upserts0, "batches sent again with ON CONFLICT")
			require.Equal(t, c.fallbacks, fallbacks-fallbacks0, "batches sent again as statements")
		})
	}
}
