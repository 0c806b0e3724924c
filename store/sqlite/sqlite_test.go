package sqlite_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
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
