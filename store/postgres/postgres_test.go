package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
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

// TestJSONTextWithNULFails checks that a text with U+0000, which the text
// column could hold but the jsonb cannot, fails as the map does, storing
// nothing and leaving the item there as it was.
func TestJSONTextWithNULFails(t *testing.T) {
	s := open(t, freshSchema(t))
	ctx := t.Context()
	ns := []string{"nul"}
	require.NoError(t, s.Put(ctx, ns, "k", map[string]any{"s": "ok"}, store.WithJSON([]byte(`{"s":"ok"}`))))
	for _, text := range []string{`{"s":"a\u0000b"}`, `{"\u0000":"a"}`} {
		var value map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &value))
		require.Error(t, s.Put(ctx, ns, "k", value, store.WithJSON([]byte(text))), text)
		require.Error(t, s.Put(ctx, ns, "new", value, store.WithJSON([]byte(text))), text)
	}
	got, err := s.Get(ctx, ns, "k")
	require.NoError(t, err)
	require.Equal(t, `{"s":"ok"}`, string(got.JSON))
	got, err = s.Get(ctx, ns, "new")
	require.NoError(t, err)
	require.Nil(t, got)
}

func TestSemanticConformance(t *testing.T) {
	pgdbtest.URL(t)
	storetest.RunSemantic(t, func(t *testing.T, index *store.IndexConfig) store.Store {
		var opts []postgres.Option
		if index != nil {
			opts = append(opts, postgres.WithIndex(*index))
		}
		return open(t, freshSchema(t), opts...)
	})
}

// wordEmbedder embeds a text as the counts of the words "red", "green"
// and "blue" in it.
type wordEmbedder struct{}

func (wordEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, text := range texts {
		out[i] = make([]float32, 3)
		for _, w := range strings.Fields(text) {
			if j := slices.Index([]string{"red", "green", "blue"}, w); j >= 0 {
				out[i][j]++
			}
		}
	}
	return out, nil
}

var colors = store.IndexConfig{Embedder: wordEmbedder{}, Dims: 3, Fields: []string{"text"}}

func queryKeys(t *testing.T, s store.Store, query string) []string {
	t.Helper()
	items, err := s.Search(t.Context(), nil, store.Query(query), store.Limit(100))
	require.NoError(t, err)
	var keys []string
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	return keys
}

func TestSemanticVectorsSurviveReopen(t *testing.T) {
	schema := freshSchema(t)
	s, err := postgres.Open(t.Context(), pgdbtest.URL(t), postgres.WithSchema(schema), postgres.WithIndex(colors))
	require.NoError(t, err)
	require.NoError(t, s.Put(t.Context(), []string{"c"}, "r", map[string]any{"text": "red"}))
	require.NoError(t, s.Put(t.Context(), []string{"c"}, "g", map[string]any{"text": "green"}))
	require.NoError(t, s.Close())

	s = open(t, schema, postgres.WithIndex(colors))
	require.Equal(t, []string{"g", "r"}, queryKeys(t, s, "green"))
}

// TestOpenMigratesVersion1 opens a schema written by the first version
// (no vectors): its items stay readable and unindexed until put again.
func TestOpenMigratesVersion1(t *testing.T) {
	schema := freshSchema(t)
	conn := connect(t, schema)
	for _, stmt := range []string{
		`CREATE SCHEMA ` + pgx.Identifier{schema}.Sanitize(),
		`CREATE TABLE agentgraph_store_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO agentgraph_store_migrations VALUES (1)`,
		`CREATE TABLE agentgraph_store_items (
			namespace text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL, value jsonb NOT NULL,
			created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, expires_at timestamptz, ttl interval,
			PRIMARY KEY (namespace, key))`,
		`INSERT INTO agentgraph_store_items VALUES ('c', 'old', '{"text":"red"}', now(), now(), NULL, NULL)`,
	} {
		_, err := conn.Exec(t.Context(), stmt)
		require.NoError(t, err)
	}

	s := open(t, schema, postgres.WithIndex(colors))
	var version int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT MAX(version) FROM agentgraph_store_migrations`).Scan(&version))
	require.Equal(t, postgres.SchemaVersion(), version)
	require.Equal(t, 3, postgres.SchemaVersion())
	got, err := s.Get(t.Context(), []string{"c"}, "old")
	require.NoError(t, err)
	require.Equal(t, map[string]any{"text": "red"}, got.Value)
	require.Nil(t, got.JSON, "an item put before version 3 has no text")
	require.Empty(t, queryKeys(t, s, "red"), "an item put before the index has no vectors")
	require.NoError(t, s.Put(t.Context(), []string{"c"}, "old", got.Value))
	require.Equal(t, []string{"old"}, queryKeys(t, s, "red"))

	text := `{"text":"red","b":1,"a":2}`
	require.NoError(t, s.Put(t.Context(), []string{"c"}, "new", map[string]any{"a": 2, "b": 1, "text": "red"}, store.WithJSON([]byte(text))))
	got, err = s.Get(t.Context(), []string{"c"}, "new")
	require.NoError(t, err)
	require.Equal(t, text, string(got.JSON), "the migrated store keeps texts")
}

func TestOpenInvalidIndexFails(t *testing.T) {
	for _, cfg := range []store.IndexConfig{
		{Dims: 3},
		{Embedder: wordEmbedder{}},
		{Embedder: wordEmbedder{}, Dims: 3, Fields: []string{"a..b"}},
	} {
		_, err := postgres.Open(t.Context(), "postgres://nobody@127.0.0.1:1/nodb", postgres.WithIndex(cfg))
		require.ErrorIs(t, err, store.ErrInvalidOption, "%+v", cfg)
	}
}

// TestNoOrphanVectors checks the vectors table itself: Delete, Sweep, an
// overwrite, an unindexed overwrite and an overwrite by a store opened
// without an index all leave no vector of an old value behind.
func TestNoOrphanVectors(t *testing.T) {
	schema := freshSchema(t)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := open(t, schema, postgres.WithIndex(store.IndexConfig{Embedder: wordEmbedder{}, Dims: 3, Fields: []string{"a", "b"}}), postgres.WithClock(clock))
	plain := open(t, schema)
	ctx := t.Context()
	ns := []string{"v"}
	two := map[string]any{"a": "red", "b": "blue"}
	for _, k := range []string{"deleted", "expiring", "overwritten", "unindexed", "plain"} {
		var opts []store.PutOption
		if k == "expiring" {
			opts = append(opts, store.WithTTL(time.Minute))
		}
		require.NoError(t, s.Put(ctx, ns, k, two, opts...))
	}
	conn := connect(t, schema)
	count := func() int {
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT COUNT(*) FROM agentgraph_store_vectors`).Scan(&n))
		return n
	}
	require.Equal(t, 10, count())
	require.NoError(t, s.Delete(ctx, ns, "deleted"))
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	n, err := s.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, s.Put(ctx, ns, "overwritten", map[string]any{"a": "green"}))
	require.NoError(t, s.Put(ctx, ns, "unindexed", two, store.NoIndex()))
	require.NoError(t, plain.Put(ctx, ns, "plain", two))
	require.Equal(t, 1, count(), "only the overwritten item's new vector")
	require.Equal(t, []string{"overwritten"}, queryKeys(t, s, "green"))
}

// TestCorruptVectorFailsQuery damages a stored vector: a query search
// fails with an error naming the item, other searches still work.
func TestCorruptVectorFailsQuery(t *testing.T) {
	schema := freshSchema(t)
	s := open(t, schema, postgres.WithIndex(colors))
	require.NoError(t, s.Put(t.Context(), []string{"c"}, "bad", map[string]any{"text": "red"}))
	conn := connect(t, schema)
	for _, blob := range [][]byte{{1, 2, 3}, make([]byte, 16), {0, 0, 0xc0, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0}} {
		_, err := conn.Exec(t.Context(), `UPDATE agentgraph_store_vectors SET vector = $1`, blob)
		require.NoError(t, err)
		_, err = s.Search(t.Context(), nil, store.Query("red"))
		require.ErrorContains(t, err, `"bad"`, "blob %x", blob)
		items, err := s.Search(t.Context(), nil)
		require.NoError(t, err)
		require.Len(t, items, 1)
	}
}

// randomEmbedder gives each text a pseudo-random vector seeded by its
// hash, of dims dimensions.
type randomEmbedder int

func (d randomEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		h.Write([]byte(t))
		rng := rand.New(rand.NewPCG(h.Sum64(), 0))
		out[i] = make([]float32, int(d))
		for j := range out[i] {
			out[i][j] = float32(rng.NormFloat64())
		}
	}
	return out, nil
}

// benchmarkQuerySearch ranks 10,000 items of 256 dimensions in s.
func benchmarkQuerySearch(b *testing.B, s store.Store) {
	for i := range 10000 {
		require.NoError(b, s.Put(b.Context(), []string{"docs"}, strconv.Itoa(i), map[string]any{"t": strconv.Itoa(i)}))
	}
	b.ResetTimer()
	for b.Loop() {
		items, err := s.Search(b.Context(), []string{"docs"}, store.Query("q"), store.Limit(10))
		require.NoError(b, err)
		require.Len(b, items, 10)
	}
}

func BenchmarkQuerySearch(b *testing.B) {
	schema := pgdbtest.FreshSchema(b, "agt_store_bench")
	s, err := postgres.Open(b.Context(), pgdbtest.URL(b), postgres.WithSchema(schema),
		postgres.WithIndex(store.IndexConfig{Embedder: randomEmbedder(256), Dims: 256, Fields: []string{"t"}}))
	require.NoError(b, err)
	defer s.Close()
	benchmarkQuerySearch(b, s)
}

// TestFailedVectorWriteLeavesItem makes the vectors table refuse inserts:
// the Put fails as a whole, and the item keeps its old value and vectors.
func TestFailedVectorWriteLeavesItem(t *testing.T) {
	schema := freshSchema(t)
	s := open(t, schema, postgres.WithIndex(colors))
	ctx := t.Context()
	require.NoError(t, s.Put(ctx, []string{"c"}, "k", map[string]any{"text": "red"}))
	conn := connect(t, schema)
	for _, stmt := range []string{
		`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no vectors today'; END $$`,
		`CREATE TRIGGER refuse BEFORE INSERT ON agentgraph_store_vectors FOR EACH ROW EXECUTE FUNCTION refuse()`,
	} {
		_, err := conn.Exec(ctx, stmt)
		require.NoError(t, err)
	}
	err := s.Put(ctx, []string{"c"}, "k", map[string]any{"text": "green"})
	require.ErrorContains(t, err, "no vectors today")
	got, err := s.Get(ctx, []string{"c"}, "k")
	require.NoError(t, err)
	require.Equal(t, map[string]any{"text": "red"}, got.Value)
	require.Equal(t, []string{"k"}, queryKeys(t, s, "red"))
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT COUNT(*) FROM agentgraph_store_vectors`).Scan(&n))
	require.Equal(t, 1, n)
	require.Error(t, s.Put(ctx, []string{"c"}, "new", map[string]any{"text": "blue"}))
	got, err = s.Get(ctx, []string{"c"}, "new")
	require.NoError(t, err)
	require.Nil(t, got)
}
