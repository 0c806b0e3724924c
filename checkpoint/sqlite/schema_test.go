package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/internal/sqlitedb"
)

// indexes returns the names of the indexes of table in db's schema.
func indexes(t *testing.T, db *sqlitedb.DB, table string) []string {
	t.Helper()
	rows, err := db.W.QueryContext(t.Context(), `SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ? ORDER BY name`, table)
	require.NoError(t, err)
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		names = append(names, name)
	}
	require.NoError(t, rows.Err())
	return names
}

// queryPlan returns the lines of SQLite's plan for q.
func queryPlan(t *testing.T, db *sqlitedb.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.W.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
	require.NoError(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	return plan
}

// A file of schema version 3, with checkpoints of a thread in two
// namespaces, opens migrated to the current version: the (thread_id, id)
// index is gone, and the thread's checkpoints are all there, listed newest
// first across namespaces.
func TestOpenMigratesVersion3DroppingThreadIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v3.db")
	old, err := sqlitedb.Open(t.Context(), path, sqlitedb.Config{
		Options:         sqlitedb.DefaultOptions(),
		MigrationsTable: "schema_migrations",
		Migrations:      migrations[:3],
	})
	require.NoError(t, err)
	require.Contains(t, indexes(t, old, "checkpoints"), "checkpoints_thread_id")
	ids := []string{checkpoint.NewID(), checkpoint.NewID(), checkpoint.NewID()}
	for i, id := range ids {
		ns := []string{"", "child:1", ""}[i]
		_, err := old.W.ExecContext(t.Context(), `INSERT INTO checkpoints (thread_id, ns, id, parent_id, metadata, versions, frontier, shape)
			VALUES ('t', ?, ?, '', '{}', '{}', x'', '')`, ns, id)
		require.NoError(t, err)
	}
	require.NoError(t, old.Close())

	s := openTest(t, path)
	require.Equal(t, []string{"checkpoints_id", "sqlite_autoindex_checkpoints_1"}, indexes(t, s.db, "checkpoints"))
	var got []string
	for tup, err := range s.List(t.Context(), "t", checkpoint.ListOptions{}) {
		require.NoError(t, err)
		got = append(got, tup.Namespace+"/"+tup.ID)
	}
	require.Equal(t, []string{"/" + ids[2], "child:1/" + ids[1], "/" + ids[0]}, got)
}

// Listing one thread's checkpoints, with or without a namespace, searches
// an index by thread (the primary key): never a scan of the whole table or
// of the id index, which would read every thread's checkpoints.
func TestListOfAThreadSearchesPrimaryKey(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "plan.db"))
	ns := ""
	for _, opts := range []checkpoint.ListOptions{
		{},
		{Limit: 1},
		{Before: "x", Limit: 3},
		{Namespace: &ns, Limit: 1},
	} {
		q, args, ok := listQuery("t", opts)
		require.True(t, ok)
		plan := queryPlan(t, s.db, q, args...)
		require.NotEmpty(t, plan)
		require.Regexp(t, `^SEARCH checkpoints USING (COVERING )?INDEX \S+ \(thread_id=\?`, plan[0], "plan for %+v:\n%s", opts, strings.Join(plan, "\n"))
	}
}

// upsertCheckpoint reads the table it inserts into (its parent check)
// without SQLite copying the new row into a temporary table first, as an
// INSERT … SELECT reading its own table would.
func TestUpsertCheckpointNeedsNoTemporaryTable(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "plan.db"))
	rows, err := s.db.W.QueryContext(t.Context(), "EXPLAIN "+upsertCheckpoint, "t", "", "id", "", nil, "{}", "{}", []byte{}, "", false, nil)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var ops []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		ops = append(ops, fmt.Sprint(vals[1]))
	}
	require.NoError(t, rows.Err())
	require.Contains(t, ops, "IdxInsert")
	require.NotContains(t, ops, "OpenEphemeral")
}

// A checkpoint row that upsertCheckpoint skipped although the parent
// check passes is not reported as a conflict with its own parent.
func TestParentConflictOfARowSkippedForAnotherReasonIsAnError(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "x.db"))
	first := &checkpoint.Checkpoint{ThreadID: "t", ID: checkpoint.NewID()}
	require.NoError(t, s.Put(t.Context(), first))
	next := &checkpoint.Checkpoint{ThreadID: "t", ID: checkpoint.NewID(), ParentID: first.ID}
	stale := &checkpoint.Checkpoint{ThreadID: "t", ID: checkpoint.NewID(), ParentID: "elsewhere"}
	require.NoError(t, s.db.Write(t.Context(), func(tx sqlitedb.Tx) error {
		err := parentConflict(tx, next)
		require.Error(t, err)
		_, isConflict := errors.AsType[*checkpoint.ConflictError](err)
		require.False(t, isConflict, "%v", err)

		err = parentConflict(tx, stale)
		c, isConflict := errors.AsType[*checkpoint.ConflictError](err)
		require.True(t, isConflict, "%v", err)
		require.Equal(t, first.ID, c.LatestID)
		return nil
	}))
}
