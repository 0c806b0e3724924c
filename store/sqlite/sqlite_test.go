package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	cpsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/sqlite"
	"github.com/agentgraph/agentgraph/store/storetest"
)

func open(t *testing.T, path string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "store.db"))
	})
}

func TestConformanceInMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, ":memory:")
	})
}

func TestReopenKeepsItems(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a b?c#d%.db")
	now := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	s, err := sqlite.Open(t.Context(), path, sqlite.WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	require.NoError(t, s.Put(t.Context(), []string{"u", "1"}, "k", map[string]any{"a": []any{1, "x"}}, store.WithTTL(time.Hour)))
	require.NoError(t, s.Close())
	require.FileExists(t, path)

	s = open(t, path, sqlite.WithClock(func() time.Time { return now }))
	got, err := s.Get(t.Context(), []string{"u", "1"}, "k", store.RefreshTTL(false))
	require.NoError(t, err)
	require.Equal(t, &store.Item{
		Namespace: []string{"u", "1"}, Key: "k", Value: map[string]any{"a": []any{1.0, "x"}},
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour),
	}, got, "timestamps keep nanoseconds")
}

func TestOpenRecordsMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	open(t, path)
	db := rawDB(t, path)
	var n, maxV int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*), MAX(version) FROM agentgraph_store_migrations`).Scan(&n, &maxV))
	require.Equal(t, sqlite.SchemaVersion(), n)
	require.Equal(t, sqlite.SchemaVersion(), maxV)
	var mode string
	require.NoError(t, db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	require.Equal(t, "wal", mode)
}

func TestOpenNewerSchemaFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = rawDB(t, path).Exec(`INSERT INTO agentgraph_store_migrations (version, applied_at) VALUES (?, 0)`, sqlite.SchemaVersion()+7)
	require.NoError(t, err)

	_, err = sqlite.Open(t.Context(), path)
	var verr *sqlite.SchemaVersionError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, sqlite.SchemaVersionError{Path: path, Found: sqlite.SchemaVersion() + 7, Supported: sqlite.SchemaVersion()}, *verr)
	require.Regexp(t, "^store/sqlite: .* newer than", err.Error())
}

func TestOpenErrors(t *testing.T) {
	_, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"))
	require.ErrorContains(t, err, "x.db")
	_, err = sqlite.Open(t.Context(), "")
	require.Error(t, err)
	_, err = sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), sqlite.WithSynchronous("SOMETIMES"))
	require.ErrorContains(t, err, "SOMETIMES")
}

// TestSharesFileWithCheckpointSaver opens the checkpoint saver and the
// store on one file, in both orders: each keeps its own tables and
// migration records.
func TestSharesFileWithCheckpointSaver(t *testing.T) {
	for _, storeFirst := range []bool{true, false} {
		t.Run(fmt.Sprint("store first ", storeFirst), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agent.db")
			var s *sqlite.Store
			if storeFirst {
				s = open(t, path)
			}
			cp, err := cpsqlite.Open(t.Context(), path)
			require.NoError(t, err)
			t.Cleanup(func() { cp.Close() })
			if !storeFirst {
				s = open(t, path)
			}
			ctx := t.Context()
			require.NoError(t, cp.Put(ctx, &checkpoint.Checkpoint{ID: checkpoint.NewID(), ThreadID: "t", Channels: []checkpoint.Channel{{Name: "a", Version: 1, Value: []byte(`1`)}}}))
			require.NoError(t, s.Put(ctx, []string{"users", "u"}, "k", map[string]any{"x": 1}))
			_, err = cp.Get(ctx, checkpoint.Ref{ThreadID: "t"})
			require.NoError(t, err)
			got, err := s.Get(ctx, []string{"users", "u"}, "k")
			require.NoError(t, err)
			require.NotNil(t, got)

			var tables []string
			rows, err := rawDB(t, path).Query(`SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
			require.NoError(t, err)
			defer rows.Close()
			for rows.Next() {
				var name string
				require.NoError(t, rows.Scan(&name))
				tables = append(tables, name)
			}
			require.Subset(t, tables, []string{"agentgraph_store_items", "agentgraph_store_migrations", "checkpoints", "schema_migrations"})
		})
	}
}

func TestTwoStoresShareOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a, b := open(t, path), open(t, path)
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

// TestFilterEdgeCases checks that the SQL conditions narrow the
// scan without changing results, for values whose keys cannot be JSON
// paths and numbers SQLite and Go may round differently.
func TestFilterEdgeCases(t *testing.T) {
	s := open(t, ":memory:")
	ctx := t.Context()
	ns := []string{"e"}
	require.NoError(t, s.Put(ctx, ns, "big", map[string]any{"n": uint64(18446744073709551615), `k"\`: 1, "z": "a\x00b"}))
	tenth, fifth := 0.1, 0.2
	require.NoError(t, s.Put(ctx, ns, "frac", map[string]any{"n": tenth + fifth})) // 0.30000000000000004
	require.NoError(t, s.Put(ctx, ns, "blob", map[string]any{"n": 9007199254740993}))
	for _, tt := range []struct {
		filter map[string]any
		want   string
	}{
		{map[string]any{"n": uint64(18446744073709551615)}, "big"},
		{map[string]any{"n": 0.30000000000000004}, "frac"},
		{map[string]any{"n": map[string]any{"$gt": 0.3, "$lt": 0.31}}, "frac"},
		{map[string]any{"n": 9007199254740993}, "blob"},
		{map[string]any{`k"\`: 1}, "big"},
		{map[string]any{"z": "a\x00b"}, "big"},
		{map[string]any{"z": map[string]any{"$gt": "a"}}, "big"},
	} {
		items, err := s.Search(ctx, ns, store.Filter(tt.filter))
		require.NoError(t, err)
		require.Len(t, items, 1, "filter %v", tt.filter)
		require.Equal(t, tt.want, items[0].Key, "filter %v", tt.filter)
	}
}

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSemanticConformance(t *testing.T) {
	storetest.RunSemantic(t, func(t *testing.T, index *store.IndexConfig) store.Store {
		var opts []sqlite.Option
		if index != nil {
			opts = append(opts, sqlite.WithIndex(*index))
		}
		return open(t, filepath.Join(t.TempDir(), "store.db"), opts...)
	})
}

func TestSemanticConformanceInMemory(t *testing.T) {
	storetest.RunSemantic(t, func(t *testing.T, index *store.IndexConfig) store.Store {
		var opts []sqlite.Option
		if index != nil {
			opts = append(opts, sqlite.WithIndex(*index))
		}
		return open(t, ":memory:", opts...)
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
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.WithIndex(colors))
	require.NoError(t, err)
	require.NoError(t, s.Put(t.Context(), []string{"c"}, "r", map[string]any{"text": "red"}))
	require.NoError(t, s.Put(t.Context(), []string{"c"}, "g", map[string]any{"text": "green"}))
	require.NoError(t, s.Close())

	s = open(t, path, sqlite.WithIndex(colors))
	require.Equal(t, []string{"g", "r"}, queryKeys(t, s, "green"))
}

// TestOpenMigratesVersion1 opens a database written by the first schema
// (no vectors): its items stay readable and unindexed until put again.
func TestOpenMigratesVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	db := rawDB(t, path)
	for _, stmt := range []string{
		`CREATE TABLE agentgraph_store_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`,
		`INSERT INTO agentgraph_store_migrations VALUES (1, 0)`,
		`CREATE TABLE agentgraph_store_items (
			namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
			created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, expires_at INTEGER, ttl_ns INTEGER,
			PRIMARY KEY (namespace, key))`,
		`INSERT INTO agentgraph_store_items VALUES ('c', 'old', '{"text":"red"}', 1, 1, NULL, NULL)`,
	} {
		_, err := db.Exec(stmt)
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())

	s := open(t, path, sqlite.WithIndex(colors))
	var version int
	require.NoError(t, rawDB(t, path).QueryRow(`SELECT MAX(version) FROM agentgraph_store_migrations`).Scan(&version))
	require.Equal(t, sqlite.SchemaVersion(), version)
	require.Equal(t, 3, sqlite.SchemaVersion())
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
		_, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), sqlite.WithIndex(cfg))
		require.ErrorIs(t, err, store.ErrInvalidOption, "%+v", cfg)
	}
}

// TestNoOrphanVectors checks the vectors table itself: Delete, Sweep, an
// overwrite, an unindexed overwrite and an overwrite by a store opened
// without an index all leave no vector of an old value behind.
func TestNoOrphanVectors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := open(t, path, sqlite.WithIndex(store.IndexConfig{Embedder: wordEmbedder{}, Dims: 3, Fields: []string{"a", "b"}}),
		sqlite.WithClock(func() time.Time { return now }))
	plain := open(t, path)
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
	require.Equal(t, 10, countVectors(t, path))
	require.NoError(t, s.Delete(ctx, ns, "deleted"))
	now = now.Add(time.Hour)
	n, err := s.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, s.Put(ctx, ns, "overwritten", map[string]any{"a": "green"}))
	require.NoError(t, s.Put(ctx, ns, "unindexed", two, store.NoIndex()))
	require.NoError(t, plain.Put(ctx, ns, "plain", two))
	require.Equal(t, 1, countVectors(t, path), "only the overwritten item's new vector")
	require.Equal(t, []string{"overwritten"}, queryKeys(t, s, "green"))
}

func countVectors(t *testing.T, path string) int {
	t.Helper()
	var n int
	require.NoError(t, rawDB(t, path).QueryRow(`SELECT COUNT(*) FROM agentgraph_store_vectors`).Scan(&n))
	return n
}

// TestCorruptVectorFailsQuery damages a stored vector: a query search
// fails with an error naming the item, other searches still work.
func TestCorruptVectorFailsQuery(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s := open(t, path, sqlite.WithIndex(colors))
	require.NoError(t, s.Put(t.Context(), []string{"c"}, "bad", map[string]any{"text": "red"}))
	for _, blob := range [][]byte{{1, 2, 3}, make([]byte, 16), {0, 0, 0xc0, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0}} {
		_, err := rawDB(t, path).Exec(`UPDATE agentgraph_store_vectors SET vector = ?`, blob)
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
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"),
		sqlite.WithIndex(store.IndexConfig{Embedder: randomEmbedder(256), Dims: 256, Fields: []string{"t"}}))
	require.NoError(b, err)
	defer s.Close()
	benchmarkQuerySearch(b, s)
}

// TestFailedVectorWriteLeavesItem makes the vectors table refuse inserts:
// the Put fails as a whole, and the item keeps its old value and vectors.
func TestFailedVectorWriteLeavesItem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s := open(t, path, sqlite.WithIndex(colors))
	require.NoError(t, s.Put(t.Context(), []string{"c"}, "k", map[string]any{"text": "red"}))
	_, err := rawDB(t, path).Exec(`CREATE TRIGGER refuse BEFORE INSERT ON agentgraph_store_vectors BEGIN SELECT RAISE(ABORT, 'no vectors today'); END`)
	require.NoError(t, err)
	err = s.Put(t.Context(), []string{"c"}, "k", map[string]any{"text": "green"})
	require.ErrorContains(t, err, "no vectors today")
	got, err := s.Get(t.Context(), []string{"c"}, "k")
	require.NoError(t, err)
	require.Equal(t, map[string]any{"text": "red"}, got.Value)
	require.Equal(t, []string{"k"}, queryKeys(t, s, "red"))
	require.Equal(t, 1, countVectors(t, path))
	require.Error(t, s.Put(t.Context(), []string{"c"}, "new", map[string]any{"text": "blue"}))
	got, err = s.Get(t.Context(), []string{"c"}, "new")
	require.NoError(t, err)
	require.Nil(t, got)
}
