package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
)

// Review of a lone write whose first try (plain inserts) met a stored row
// and whose caller gave up before the write was sent again (group.go,
// commitAlone): the caller's error is its context's, never the first
// try's unique violation, the resend writes nothing, and the saver goes
// on.

// rvpgCancelTracer cancels the context it holds when a batch ends with a
// unique violation: between a lone write's first try and its resend.
type rvpgCancelTracer struct {
	mu     sync.Mutex
	cancel func()
	fired  int
}

func (*rvpgCancelTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (*rvpgCancelTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (*rvpgCancelTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (*rvpgCancelTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (tr *rvpgCancelTracer) TraceBatchEnd(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if pe, ok := errors.AsType[*pgconn.PgError](data.Err); ok && pe.Code == "23505" && tr.cancel != nil {
		tr.cancel()
		tr.cancel = nil
		tr.fired++
	}
}

// rvpgTracedSender makes s's group send on a pool of its own, traced by tr.
func rvpgTracedSender(t *testing.T, s *Saver, schema string, tr *rvpgCancelTracer) {
	t.Helper()
	pc, err := pgxpool.ParseConfig(pgdbtest.URL(t))
	require.NoError(t, err)
	pc.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	pc.ConnConfig.Tracer = tr
	pc.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		registerPresized(c.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), pc)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s.sender.pool = pool
}

// rvpgDump returns the rows of the saver's tables but the leases'.
func rvpgDump(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT x::text FROM agentgraph_checkpoints x ORDER BY thread_id, ns, id`,
		`SELECT x::text FROM agentgraph_blobs x ORDER BY thread_id, ns, channel, version`,
	} {
		r, err := pool.Query(t.Context(), q)
		require.NoError(t, err)
		rows, err := pgx.CollectRows(r, pgx.RowTo[string])
		require.NoError(t, err)
		out = append(out, rows...)
	}
	return out
}

func TestReviewRvpgAContextCancelledBetweenTheFirstTryAndTheResendIsTheCallersError(t *testing.T) {
	s, schema := openInternal(t)
	other := openOn(t, schema)
	tr := &rvpgCancelTracer{}
	rvpgTracedSender(t, s, schema, tr)
	ch := func(name string, version int64, value string) checkpoint.Channel {
		return checkpoint.Channel{Name: name, Version: version, Value: []byte(value)}
	}
	first := &checkpoint.Checkpoint{ID: "0001", ThreadID: "t", Channels: []checkpoint.Channel{ch("a", 1, `["x"]`)}}
	require.NoError(t, s.Put(t.Context(), first))
	require.NoError(t, other.Put(t.Context(), first))
	require.NoError(t, other.Put(t.Context(), &checkpoint.Checkpoint{ID: "0002", ThreadID: "t", ParentID: "0001",
		Channels: []checkpoint.Channel{ch("a", 2, `["x","y"]`)}}))
	before := rvpgDump(t, s.pool)

	// s's 0002: the same blob of a (the first try's unique
	// violation), a new channel d, another step.
	mine := &checkpoint.Checkpoint{ID: "0002", ThreadID: "t", ParentID: "0001", Metadata: checkpoint.Metadata{Step: 5},
		Channels: []checkpoint.Channel{ch("a", 2, `["x","y"]`), ch("d", 1, `"d"`)}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	tr.mu.Lock()
	tr.cancel = cancel
	tr.mu.Unlock()
	err := s.Put(ctx, mine)
	tr.mu.Lock()
	fired := tr.fired
	tr.mu.Unlock()
	require.Equal(t, 1, fired, "the first try met the stored blob")
	require.Error(t, err)
	pe, isPg := errors.AsType[*pgconn.PgError](err)
	require.False(t, isPg && pe.Code == "23505", "the first try's unique violation leaked: %v", err)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, before, rvpgDump(t, s.pool), "the write given up wrote nothing")
	require.EqualValues(t, 1, s.sender.aloneUpserts.Load())

	// The saver goes on: the same write, then a delta on it.
	require.NoError(t, s.Put(t.Context(), mine))
	require.NoError(t, s.Put(t.Context(), &checkpoint.Checkpoint{ID: "0003", ThreadID: "t", ParentID: "0002",
		Channels: []checkpoint.Channel{ch("a", 3, `["x","y","z"]`), {Name: "d", Version: 1}}}))
	for id, want := range map[string][2]string{"0002": {`["x","y"]`, `"d"`}, "0003": {`["x","y","z"]`, `"d"`}} {
		got, err := other.Get(t.Context(), checkpoint.Ref{ThreadID: "t", ID: id})
		require.NoError(t, err)
		require.Equal(t, want[0], string(got.Value("a")), id)
		require.Equal(t, want[1], string(got.Value("d")), id)
	}
}
