package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/state"
)

func openTest(t *testing.T, path string, opts ...Option) *Saver {
	t.Helper()
	s, err := Open(t.Context(), path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// chatStep returns the i-th message of a synthetic chat: about 200 bytes of
// JSON, alternating human and AI turns.
func chatStep(i int) state.Message {
	text := fmt.Sprintf("turn %04d: %s", i, strings.Repeat("lorem ipsum ", 11))
	m := state.Human(text)
	if i%2 == 1 {
		m = state.AI(text)
	}
	m.ID = fmt.Sprintf("msg-%04d", i)
	return m
}

type chatStats struct {
	halfBytes  int64 // bytes of stored blobs after half the steps
	blobBytes  int64 // bytes of stored blobs
	naiveBytes int64 // bytes a copy of every value per checkpoint would take
	finalBytes int64 // bytes of the final message list
	fileBytes  int64 // database file after a WAL checkpoint
	maxPath    int   // most blobs read to rebuild one version
}

// runChat puts one checkpoint per step, each appending one message to the
// "messages" channel and bumping a "step" counter, like a chat loop.
func runChat(t *testing.T, s *Saver, steps int) chatStats {
	t.Helper()
	ctx := t.Context()
	var st chatStats
	// The list is built the way json.Marshal encodes a []state.Message,
	// one message at a time, to keep the test itself linear.
	buf := []byte{'['}
	parent := ""
	for i := range steps {
		m, err := json.Marshal(chatStep(i))
		require.NoError(t, err)
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, m...)
		list := append(buf[:len(buf):len(buf)], ']')
		id := checkpoint.NewID()
		cp := &checkpoint.Checkpoint{
			ID: id, ThreadID: "chat", ParentID: parent,
			Metadata: checkpoint.Metadata{Source: "loop", Step: i},
			Channels: []checkpoint.Channel{
				{Name: "messages", Version: int64(i + 1), Value: list},
				{Name: "step", Version: int64(i + 1), Value: []byte(fmt.Sprint(i))},
			},
		}
		naive := int64(len(list)) + int64(len(cp.Value("step")))
		require.NoError(t, s.Put(ctx, cp))
		if i+1 == steps/2 {
			require.NoError(t, s.db.W.QueryRowContext(ctx, `SELECT SUM(LENGTH(data)) FROM blobs`).Scan(&st.halfBytes))
		}
		st.naiveBytes += naive
		st.finalBytes = int64(len(list))
		parent = id
	}
	require.NoError(t, s.db.W.QueryRowContext(ctx, `SELECT SUM(LENGTH(data)) FROM blobs`).Scan(&st.blobBytes))
	st.maxPath = longestPath(t, s, "chat", "messages")
	_, err := s.db.W.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	require.NoError(t, err)
	fi, err := os.Stat(s.path)
	require.NoError(t, err)
	st.fileBytes = fi.Size()

	got, err := s.Get(ctx, checkpoint.Ref{ThreadID: "chat"})
	require.NoError(t, err)
	var back []state.Message
	require.NoError(t, json.Unmarshal(got.Value("messages"), &back))
	require.Len(t, back, steps)
	return st
}

// longestPath returns the most blobs read to rebuild a version of channel.
func longestPath(t *testing.T, s *Saver, thread, channel string) int {
	t.Helper()
	rows, err := s.db.W.QueryContext(t.Context(), `SELECT version, base FROM blobs WHERE thread_id = ? AND ns = '' AND channel = ? ORDER BY version`, thread, channel)
	require.NoError(t, err)
	defer rows.Close()
	length := map[int64]int{}
	longest := 0
	for rows.Next() {
		var v int64
		var base sql.NullInt64
		require.NoError(t, rows.Scan(&v, &base))
		length[v] = 1
		if base.Valid {
			length[v] += length[base.Int64]
		}
		longest = max(longest, length[v])
	}
	require.NoError(t, rows.Err())
	return longest
}

// TestChatStorageGrowsLinearly measures the storage of a 1,000-step chat
// whose message list grows by one ~200-byte message per step. Storing the
// list whole at every checkpoint would take about steps²/2 messages; skip
// deltas take a few times the final list.
func TestChatStorageGrowsLinearly(t *testing.T) {
	const steps = 1000
	s := openTest(t, filepath.Join(t.TempDir(), "chat.db"))
	full := runChat(t, s, steps)

	t.Logf("%d steps: final message list %d B; blobs written %d B (%.2f× the final list); naive full copies %d B (%.0f× the final list, %.0f× the blobs); file %d B; longest delta chain %d blobs",
		steps, full.finalBytes, full.blobBytes, float64(full.blobBytes)/float64(full.finalBytes),
		full.naiveBytes, float64(full.naiveBytes)/float64(full.finalBytes), float64(full.naiveBytes)/float64(full.blobBytes),
		full.fileBytes, full.maxPath)
	t.Logf("after %d steps: blobs %d B; doubling the steps multiplied the blobs by %.2f (copies would by about 4)",
		steps/2, full.halfBytes, float64(full.blobBytes)/float64(full.halfBytes))

	require.Less(t, full.blobBytes, 5*full.finalBytes, "blob bytes within a small multiple of the final value")
	require.Less(t, full.fileBytes, 10*full.finalBytes, "file size within a small multiple of the final value")
	// Quadratic growth would multiply by 4 when the steps double.
	require.Less(t, float64(full.blobBytes)/float64(full.halfBytes), 2.6)
	// 999 = 3e7 in base 16: at most 3 + 14 + 15 deltas and one whole value.
	require.LessOrEqual(t, full.maxPath, 33)
}

func TestChatStorageWithoutDeltasIsQuadratic(t *testing.T) {
	const steps = 200
	st := runChat(t, openTest(t, filepath.Join(t.TempDir(), "chat.db"), WithDeltaFanout(0)), steps)
	t.Logf("%d steps without deltas: blobs %d B = naive %d B", steps, st.blobBytes, st.naiveBytes)
	require.Equal(t, st.naiveBytes, st.blobBytes)
}

// TestBlobReadsUsePrimaryKey guards the query plans: every access to blobs
// must be a primary-key search, never a scan of a thread's blobs.
func TestBlobReadsUsePrimaryKey(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "plan.db"))
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{selectPaths, []any{"t", "", `{"a":1}`}},
		{selectLeaf, []any{"t", "", "a", 1}},
		{selectMetaPath, []any{"t", "", "a", 1}},
	} {
		plan := queryPlan(t, s.db, q.sql, q.args...)
		for _, line := range plan {
			if strings.Contains(line, "blobs") || strings.Contains(line, " b ") || strings.HasSuffix(line, " b") {
				require.Contains(t, line, "channel=? AND version", "plan:\n%s", strings.Join(plan, "\n"))
			}
		}
	}
}

// TestDeepSkipDeltasReadBack reads back every version of a list appended
// to 300 times with fanout 2, so that deltas span up to eight levels, with
// rewrites and a fork in between.
func TestDeepSkipDeltasReadBack(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "deep.db"), WithDeltaFanout(2))
	ctx := t.Context()
	want := map[int64]string{}
	list := "["
	parent := ""
	for v := int64(1); v <= 300; v++ {
		switch {
		case v%101 == 0:
			list = `["rewritten"`
		case v == 1:
			list += `0`
		default:
			list += fmt.Sprintf(`,%d`, v)
		}
		cp := &checkpoint.Checkpoint{ID: checkpoint.NewID(), ThreadID: "t", ParentID: parent, Channels: []checkpoint.Channel{{Name: "l", Version: v, Value: []byte(list + "]")}}}
		parent = cp.ID
		require.NoError(t, s.Put(ctx, cp))
		want[v] = list + "]"
	}
	for v, w := range want {
		got, err := s.Get(ctx, checkpoint.Ref{ThreadID: "t", ID: idOf(t, s, v)})
		require.NoError(t, err)
		require.Equal(t, w, string(got.Value("l")), "version %d", v)
	}
}

// idOf returns the ID of the checkpoint that holds version v of channel l.
func idOf(t *testing.T, s *Saver, v int64) string {
	t.Helper()
	var id string
	require.NoError(t, s.db.W.QueryRowContext(t.Context(), `SELECT id FROM checkpoints WHERE json_extract(versions, '$.l') = ?`, v).Scan(&id))
	return id
}
