package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	cppostgres "github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/postgres"
	"github.com/agentgraph/agentgraph/store/storetest"
)

// freshSchema returns a new schema that is dropped when the test ends.
func freshSchema(t *testing.T) string {
	t.Helper()
	return pgdbtest.FreshSchema(t, "agt_store_test")
}

// open opens a Store on schema; it is closed before the schema is dropped.
func open(t *testing.T, schema string, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), pgdbtest.URL(t), append([]postgres.Option{postgres.WithSchema(schema), postgres.WithMaxConns(4)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
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

func TestConformance(t *testing.T) {
	pgdbtest.URL(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, freshSchema(t))
	})
}

func TestOpenUnreachableServerNamesHost(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://nobody@127.0.0.1:1/nodb?sslmode=disable", postgres.WithConnectTimeout(2*time.Second))
	var cerr *postgres.ConnectError
	require.ErrorAs(t, err, &cerr)
	require.Equal(t, "127.0.0.1:1", cerr.Host)
	require.Regexp(t, "^store/postgres: cannot connect to 127.0.0.1:1: ", err.Error())
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
	var n, maxV int
	require.NoError(t, connect(t, schema).QueryRow(t.Context(), `SELECT COUNT(*), MAX(version) FROM agentgraph_store_migrations`).Scan(&n, &maxV))
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
	_, err := connect(t, schema).Exec(t.Context(), `INSERT INTO agentgraph_store_migrations (version) VALUES ($1)`, postgres.SchemaVersion()+3)
	require.NoError(t, err)

	_, err = postgres.Open(t.Context(), pgdbtest.URL(t), postgres.WithSchema(schema))
	var verr *postgres.SchemaVersionError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, postgres.SchemaVersionError{Schema: schema, Found: postgres.SchemaVersion() + 3, Supported: postgres.SchemaVersion()}, *verr)
	require.Regexp(t, "^store/postgres: .* newer than", err.Error())
}

// TestSharesSchemaWithCheckpointSaver opens the checkpoint saver and the
// store on one schema: each keeps its own tables and migration records.
func TestSharesSchemaWithCheckpointSaver(t *testing.T) {
	schema := freshSchema(t)
	s := open(t, schema)
	cp, err := cppostgres.Open(t.Context(), pgdbtest.URL(t), cppostgres.WithSchema(schema), cppostgres.WithMaxConns(2))
	require.NoError(t, err)
	t.Cleanup(func() { cp.Close() })
	ctx := t.Context()
	require.NoError(t, cp.Put(ctx, &checkpoint.Checkpoint{ID: checkpoint.NewID(), ThreadID: "t", Channels: []checkpoint.Channel{{Name: "a", Version: 1, Value: []byte(`1`)}}}))
	require.NoError(t, s.Put(ctx, []string{"users", "u"}, "k", map[string]any{"x": 1}))
	got, err := s.Get(ctx, []string{"users", "u"}, "k")
	require.NoError(t, err)
	require.NotNil(t, got)
	var n int
	require.NoError(t, connect(t, schema).QueryRow(ctx, `SELECT COUNT(*) FROM agentgraph_schema_migrations`).Scan(&n))
	require.Equal(t, cppostgres.SchemaVersion(), n)
}

func TestTwoStoresShareOneSchema(t *testing.T) {
	schema := freshSchema(t)
	a, b := open(t, schema), open(t, schema)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for j := range 20 {
				if err := s.Put(t.Context(), []string{"w", fmt.Sprint(i)}, fmt.Sprint(j), map[string]any{"j": j}); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	items, err := b.Search(t.Context(), []string{"w"}, store.Limit(1000))
	require.NoError(t, err)
	require.Len(t, items, 120)
}

// TestFilterEdgeCases checks filters PostgreSQL cannot express as given:
// integers beyond 2^53 (jsonb compares exact decimals, the store float64),
// operands with U+0000 (jsonb cannot hold it) and strings compared in the
// "C" collation whatever the database's.
func TestFilterEdgeCases(t *testing.T) {
	s := open(t, freshSchema(t))
	ctx := t.Context()
	ns := []string{"e"}
	require.NoError(t, s.Put(ctx, ns, "big", map[string]any{"n": 9007199254740993, "arr": []any{9007199254740993, "x"}, "s": "B"}))
	require.NoError(t, s.Put(ctx, ns, "small", map[string]any{"n": 1, "s": "a"}))
	for _, tt := range []struct {
		filter map[string]any
		want   []string
	}{
		{map[string]any{"n": 9007199254740992}, []string{"big"}},
		{map[string]any{"arr": []any{9007199254740992, "x"}}, []string{"big"}},
		{map[string]any{"n": map[string]any{"$gte": 9007199254740992.0}}, []string{"big"}},
		{map[string]any{"s": "a\x00"}, nil},
		{map[string]any{"s": map[string]any{"$gt": "a\x00"}}, nil},
		{map[string]any{"s": map[string]any{"$lt": "a\x00"}}, []string{"big", "small"}},
		{map[string]any{"k\x00": 1}, nil},
		{map[string]any{"s": map[string]any{"$lt": "a"}}, []string{"big"}},
	} {
		items, err := s.Search(ctx, ns, store.Filter(tt.filter))
		require.NoError(t, err, "filter %q", tt.filter)
		var keys []string
		for _, it := range items {
			keys = append(keys, it.Key)
		}
		require.ElementsMatch(t, tt.want, keys, "filter %q", tt.filter)
	}
	err := s.Put(ctx, ns, "nul", map[string]any{"s": "a\x00"})
	require.Error(t, err, "jsonb cannot hold U+0000")
}
