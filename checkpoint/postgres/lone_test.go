package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
)

// A lone write (no other write shares its batch) is sent with inserts
// without ON CONFLICT, and sent again with them only when it meets a row
// stored already (group.go, commitAlone). Each case stores what it needs,
// makes one write, and checks what it returned and stored against what
// the write made the long way leaves.

func TestALoneWriteThatMeetsAStoredRowIsSentAgainUpserted(t *testing.T) {
	list := func(thread, id, parent string, version int64, value string) *checkpoint.Checkpoint {
		return &checkpoint.Checkpoint{ID: id, ThreadID: thread, ParentID: parent,
			Channels: []checkpoint.Channel{{Name: "a", Version: version, Value: []byte(value)}}}
	}
	storeBlob := func(t *testing.T, schema, th string, version int64, value string) {
		t.Helper()
		_, err := connect(t, schema).Exec(t.Context(), `INSERT INTO agentgraph_blobs (thread_id, ns, channel, version, depth, size, hash, data)
			VALUES ($1, '', 'a', $2, 0, length($3::bytea), sha256($3::bytea), $3::bytea)`, th, version, []byte(value))
		require.NoError(t, err)
	}
	cases := []struct {
		name string
		// write stores what the case needs and makes its write.
		write func(t *testing.T, s *postgres.Saver, schema, th string) error
		// check checks the write's error and what it stored.
		check func(t *testing.T, s *postgres.Saver, th string, err error)
		// again is how many times the write is sent again upserted.
		again int64
	}{
		{
			name: "a-next-step",
			write: func(t *testing.T, s *postgres.Saver, _, th string) error {
				require.NoError(t, s.Put(t.Context(), list(th, "0001", "", 1, `["a"]`)))
				return s.Put(t.Context(), list(th, "0002", "0001", 2, `["a","b"]`)) // a delta on version 1
			},
			check: func(t *testing.T, s *postgres.Saver, th string, err error) {
				require.NoError(t, err)
				reviewValue(t, s, th, "0002", `["a","b"]`)
				requireLatest(t, s, th, "0002")
			},
		},
		{
			name: "a-blob-stored-already-with-the-same-value",
			write: func(t *testing.T, s *postgres.Saver, schema, th string) error {
				storeBlob(t, schema, th, 1, `["a"]`) // by a write that left no checkpoint
				return s.Put(t.Context(), list(th, "0001", "", 1, `["a"]`))
			},
			check: func(t *testing.T, s *postgres.Saver, th string, err error) {
				require.NoError(t, err)
				require.NoError(t, s.Put(t.Context(), list(th, "0002", "0001", 2, `["a","b"]`)))
				reviewValue(t, s, th, "0001", `["a"]`)
				reviewValue(t, s, th, "0002", `["a","b"]`)
			},
			again: 1,
		},
		{
			name: "a-blob-stored-already-with-another-value",
			write: func(t *testing.T, s *postgres.Saver, schema, th string) error {
				storeBlob(t, schema, th, 1, `["other"]`)
				return s.Put(t.Context(), list(th, "0001", "", 1, `["a"]`))
			},
			check: func(t *testing.T, s *postgres.Saver, th string, err error) {
				reviewAs[*checkpoint.VersionConflictError](t, err, "a version stored with another value")
				_, err = s.Get(t.Context(), checkpoint.Ref{ThreadID: th})
				require.ErrorIs(t, err, checkpoint.ErrNotFound, "nothing of the refused Put is stored")
			},
			again: 1,
		},
		{
			name: "a-checkpoint-written-again",
			write: func(t *testing.T, s *postgres.Saver, _, th string) error {
				require.NoError(t, s.Put(t.Context(), cpOf(th, "0001", "", 1, `1`)))
				return s.Put(t.Context(), cpOf(th, "0001", "", 2, `2`))
			},
			check: func(t *testing.T, s *postgres.Saver, th string, err error) {
				require.NoError(t, err)
				requireLatest(t, s, th, "0001")
				reviewValue(t, s, th, "0001", `2`)
			},
			again: 1,
		},
		{
			name: "a-put-batch-whose-second-blob-is-stored-already",
			write: func(t *testing.T, s *postgres.Saver, schema, th string) error {
				require.NoError(t, s.Put(t.Context(), list(th, "0001", "", 1, `["a"]`)))
				storeBlob(t, schema, th, 3, `["a","b","c"]`)
				return s.PutBatch(t.Context(), []checkpoint.Op{
					{Checkpoint: list(th, "0002", "0001", 2, `["a","b"]`)},
					{Checkpoint: list(th, "0003", "0002", 3, `["a","b","c"]`)},
				})
			},
			check: func(t *testing.T, s *postgres.Saver, th string, err error) {
				require.NoError(t, err)
				reviewValue(t, s, th, "0002", `["a","b"]`)
				reviewValue(t, s, th, "0003", `["a","b","c"]`)
				requireLatest(t, s, th, "0003")
				require.NoError(t, s.Put(t.Context(), list(th, "0004", "0003", 4, `["a","b","c","d"]`)))
				reviewValue(t, s, th, "0004", `["a","b","c","d"]`)
			},
			again: 1,
		},
		{
			name: "a-fenced-put-of-a-lost-lease-on-a-stored-blob",
			write: func(t *testing.T, s *postgres.Saver, schema, th string) error {
				old, err := s.AcquireLease(t.Context(), th, "old", time.Minute)
				require.NoError(t, err)
				require.NoError(t, checkpoint.Fenced(s, old).Put(t.Context(), cpOf(th, "0001", "", 1, `1`)))
				require.NoError(t, s.ReleaseLease(t.Context(), old))
				_, err = s.AcquireLease(t.Context(), th, "new", time.Minute)
				require.NoError(t, err)
				storeBlob(t, schema, th, 2, `2`)
				return checkpoint.Fenced(s, old).Put(t.Context(), cpOf(th, "0002", "0001", 2, `2`))
			},
			check: func(t *testing.T, s *postgres.Saver, th string, err error) {
				require.ErrorIs(t, err, checkpoint.ErrLeaseLost)
				requireLatest(t, s, th, "0001")
			},
			again: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			schema := freshSchema(t)
			s := open(t, schema)
			th := fmt.Sprintf("lone-%d", time.Now().UnixNano())
			err := c.write(t, s, schema, th)
			again := s.AloneUpserts()
			c.check(t, s, th, err)
			require.Equal(t, c.again, again, "lone writes sent again with ON CONFLICT")
		})
	}
}
