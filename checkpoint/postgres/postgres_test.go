package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
)

// freshSchema returns a new schema that is dropped when the test ends.
func freshSchema(t *testing.T) string {
	t.Helper()
	return pgdbtest.FreshSchema(t, "agt_test")
}

// open opens a Saver on schema; it is closed before the schema is dropped.
func open(t *testing.T, schema string, opts ...postgres.Option) *postgres.Saver {
	t.Helper()
	s, err := postgres.Open(t.Context(), pgdbtest.URL(t), append([]postgres.Option{postgres.WithSchema(schema), postgres.WithMaxConns(4)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestConformance(t *testing.T) {
	pgdbtest.URL(t)
	schemas := map[checkpoint.Saver]string{} // subtests run one at a time
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
		schema := freshSchema(t)
		s := open(t, schema)
		schemas[s] = schema
		return s
	}, checkpointtest.WithSecondInstance(func(t *testing.T, s checkpoint.Saver) checkpoint.Saver {
		return open(t, schemas[s])
	}))
	// The suite's concurrent writers share batches: it runs against the
	// set-based path (set.go) too.
	var sets int64
	for s := range schemas {
		n, _, _, _ := s.(*postgres.Saver).SetBatches()
		sets += n
	}
	require.Positive(t, sets, "set-based batches the suite's writes were sent in")
}

func TestOpenUnreachableServerNamesHost(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://nobody@127.0.0.1:1/nodb?sslmode=disable", postgres.WithConnectTimeout(2*time.Second))
	var cerr *postgres.ConnectError
	require.ErrorAs(t, err, &cerr)
	require.Equal(t, "127.0.0.1:1", cerr.Host)
	require.Regexp(t, "^checkpoint/postgres: cannot connect to 127.0.0.1:1: ", err.Error())
}

func TestOpenInvalidURLFails(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://user:secret@host:notaport/db")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secret")
}

func TestOpenRecordsMigrations(t *testing.T) {
	schema := freshSchema(t)
	open(t, schema)
	open(t, schema) // opening again applies nothing
	conn := connect(t, schema)
	var n, maxV int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT COUNT(*), MAX(version) FROM agentgraph_schema_migrations`).Scan(&n, &maxV))
	require.Equal(t, postgres.SchemaVersion(), n)
	require.Equal(t, postgres.SchemaVersion(), maxV)
}

func TestOpenConcurrentlyMigratesOnce(t *testing.T) {
	schema := freshSchema(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), pgdbtest.URL(t), postgres.WithSchema(schema))
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

func TestOpenNewerSchemaFails(t *testing.T) {
	schema := freshSchema(t)
	open(t, schema)
	conn := connect(t, schema)
	_, err := conn.Exec(t.Context(), `INSERT INTO agentgraph_schema_migrations (version) VALUES ($1)`, postgres.SchemaVersion()+3)
	require.NoError(t, err)

	_, err = postgres.Open(t.Context(), pgdbtest.URL(t), postgres.WithSchema(schema))
	var verr *postgres.SchemaVersionError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, postgres.SchemaVersion()+3, verr.Found)
	require.Equal(t, postgres.SchemaVersion(), verr.Supported)
	require.Equal(t, schema, verr.Schema)
	require.Regexp(t, "^checkpoint/postgres: .* newer than", err.Error())
}

func TestTwoSaversShareOneSchema(t *testing.T) {
	schema := freshSchema(t)
	a, b := open(t, schema), open(t, schema)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() { errs[i] = writeThread(t.Context(), s, fmt.Sprintf("g%d", i), 10) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	n := 0
	for _, err := range b.List(t.Context(), "", checkpoint.ListOptions{}) {
		require.NoError(t, err)
		n++
	}
	require.Equal(t, 60, n)
}

// TestChatStorageGrowsLinearly puts a 1,000-step chat whose message list
// grows by one ~200-byte message per step and logs the bytes stored.
func TestChatStorageGrowsLinearly(t *testing.T) {
	const steps = 1000
	schema := freshSchema(t)
	s := open(t, schema)
	ctx := t.Context()
	buf := []byte{'['}
	var naive, half int64
	parent := ""
	conn := connect(t, schema)
	for i := range steps {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = fmt.Appendf(buf, `{"id":"msg-%04d","role":"human","parts":[{"type":"text","text":"turn %04d: %s"}]}`, i, i, strings.Repeat("lorem ipsum ", 11))
		list := append(buf[:len(buf):len(buf)], ']')
		id := checkpoint.NewID()
		cp := &checkpoint.Checkpoint{
			ID: id, ThreadID: "chat", ParentID: parent,
			Metadata: checkpoint.Metadata{Source: "loop", Step: i},
			Channels: []checkpoint.Channel{{Name: "messages", Version: int64(i + 1), Value: list}},
		}
		require.NoError(t, s.Put(ctx, cp))
		naive += int64(len(list))
		parent = id
		if i+1 == steps/2 {
			require.NoError(t, conn.QueryRow(ctx, `SELECT SUM(LENGTH(data)) FROM agentgraph_blobs`).Scan(&half))
		}
	}
	final := int64(len(buf) + 1)
	var stored, table int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT SUM(LENGTH(data)), pg_total_relation_size('agentgraph_blobs') FROM agentgraph_blobs`).Scan(&stored, &table))
	t.Logf("%d steps: final list %d B; blobs %d B (%.2f× the final list, table with indexes %d B); naive full copies %d B (%.0f× the blobs); doubling the steps multiplied the blobs by %.2f",
		steps, final, stored, float64(stored)/float64(final), table, naive, float64(naive)/float64(stored), float64(stored)/float64(half))
	require.Less(t, stored, 5*final)
	require.Less(t, float64(stored)/float64(half), 2.6)

	got, err := s.Get(ctx, checkpoint.Ref{ThreadID: "chat"})
	require.NoError(t, err)
	require.Equal(t, string(buf)+"]", string(got.Value("messages")))
}

func connect(t *testing.T, schema string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(pgdbtest.URL(t))
	require.NoError(t, err)
	cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func writeThread(ctx context.Context, s *postgres.Saver, thread string, steps int) error {
	parent := ""
	list := "["
	for i := range steps {
		if i > 0 {
			list += ","
		}
		list += fmt.Sprintf(`"%s-%d"`, thread, i)
		id := checkpoint.NewID()
		cp := &checkpoint.Checkpoint{
			ID: id, ThreadID: thread, ParentID: parent,
			Metadata: checkpoint.Metadata{Source: "loop", Step: i},
			Channels: []checkpoint.Channel{{Name: "list", Version: int64(i + 1), Value: []byte(list + "]")}},
		}
		if err := s.Put(ctx, cp); err != nil {
			return err
		}
		if err := s.PutWrites(ctx, checkpoint.Ref{ThreadID: thread, ID: id}, []checkpoint.Write{{TaskID: "t", Channel: "list", Value: []byte(`1`)}}); err != nil {
			return err
		}
		got, err := s.Get(ctx, checkpoint.Ref{ThreadID: thread})
		if err != nil {
			return err
		}
		if got.ID != id || string(got.Value("list")) != list+"]" || len(got.PendingWrites) != 1 {
			return fmt.Errorf("%s step %d: got %s %s %v", thread, i, got.ID, got.Value("list"), got.PendingWrites)
		}
		parent = id
	}
	return nil
}
