package goals_test

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
)

// sqliteProject returns a project directory holding bench.db, a SQLite
// database with a table of 100 orders.
func sqliteProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.db"))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, total REAL NOT NULL)`)
	require.NoError(t, err)
	// Customers ada, bob and cy in turn; totals 0 to 99.
	_, err = db.Exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99)
		INSERT INTO orders (customer, total) SELECT CASE i % 3 WHEN 0 THEN 'ada' WHEN 1 THEN 'bob' ELSE 'cy' END, i FROM n`)
	require.NoError(t, err)
	return dir
}

// sqlConfig is a configuration with a generous limit, so that results do
// not depend on the machine's speed.
func sqlConfig(s goals.SQLConfig) goals.Config {
	if s.DSN == "" {
		s.DSN = "bench.db"
	}
	if s.MaxMS == 0 {
		s.MaxMS = 60_000
	}
	return goals.Config{SQL: s}
}

func TestSQLBenchmarkAchievedOnSQLiteFile(t *testing.T) {
	t.Parallel()
	dir := sqliteProject(t)
	q := "SELECT customer, SUM(total) FROM orders GROUP BY customer"
	res := check(t, newGoal(t, goals.GoalSQLBenchmark, sqlConfig(goals.SQLConfig{Query: q, Runs: 3})), dir)
	require.True(t, res.Achieved, res.Reason)
	d := res.Details
	require.Equal(t, q, d.Command)
	require.Equal(t, 3, d.Rows)
	require.Len(t, d.Runs, 3)
	require.Equal(t, time.Minute, d.Limit)
	require.LessOrEqual(t, d.Median, d.Limit)
	require.Contains(t, res.Reason, "sql-benchmark: median of 3 runs")
	require.Contains(t, res.Reason, ", 3 rows")
}

func TestSQLBenchmarkRereadsQueryFileAtEveryCheck(t *testing.T) {
	t.Parallel()
	dir := sqliteProject(t)
	writeFiles(t, dir, map[string]string{"sql/query.sql": "SELECT id FROM orders WHERE customer = 'ada'\n"})
	g := newGoal(t, goals.GoalSQLBenchmark, sqlConfig(goals.SQLConfig{QueryFile: "sql/query.sql"}))
	res := check(t, g, dir)
	require.True(t, res.Achieved, res.Reason)
	require.Equal(t, 34, res.Details.Rows)
	require.Len(t, res.Details.Runs, goals.DefaultRuns)

	writeFiles(t, dir, map[string]string{"sql/query.sql": "SELECT id FROM orders WHERE total < 10"})
	res = check(t, g, dir)
	require.Equal(t, 10, res.Details.Rows)
	require.Equal(t, "SELECT id FROM orders WHERE total < 10", res.Details.Command)
}

func TestSQLBenchmarkNotAchievedWhenRowCountDiffers(t *testing.T) {
	t.Parallel()
	g := newGoal(t, goals.GoalSQLBenchmark, sqlConfig(goals.SQLConfig{Query: "SELECT id FROM orders LIMIT 5", ExpectedRows: new(100)}))
	res := check(t, g, sqliteProject(t))
	require.False(t, res.Achieved)
	require.Equal(t, "sql-benchmark: the query returned 5 rows, want 100", res.Reason)
	require.Equal(t, 5, res.Details.Rows)
	require.Equal(t, []goals.Failure{{Name: "expected_rows", Output: "the query returned 5 rows, want 100"}}, res.Details.Failures)
}

func TestSQLBenchmarkQueryErrorIsNotAchieved(t *testing.T) {
	t.Parallel()
	g := newGoal(t, goals.GoalSQLBenchmark, sqlConfig(goals.SQLConfig{Query: "SELECT nope FROM orders"}))
	res := check(t, g, sqliteProject(t))
	require.False(t, res.Achieved)
	require.Contains(t, res.Reason, "sql-benchmark: run 1 of 5 failed:")
	require.Contains(t, res.Reason, "no such column: nope")
	require.Len(t, res.Details.Failures, 1)
	require.Equal(t, "run 1", res.Details.Failures[0].Name)
	require.Empty(t, res.Details.Runs)
}

func TestSQLBenchmarkMissingDatabaseFileIsAnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := newGoal(t, goals.GoalSQLBenchmark, sqlConfig(goals.SQLConfig{DSN: "missing.db", Query: "SELECT 1"}))
	_, err := g.Check(context.Background(), goals.State{}, dir)
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, statErr := os.Stat(filepath.Join(dir, "missing.db"))
	require.ErrorIs(t, statErr, fs.ErrNotExist, "no empty database is created")
}

func TestSQLBenchmarkOnPostgres(t *testing.T) {
	t.Parallel()
	url := os.Getenv("AGENTGRAPH_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("set AGENTGRAPH_TEST_POSTGRES_URL=postgres://... to run; scripts/pg-test.sh starts a throwaway server")
	}
	cfg := sqlConfig(goals.SQLConfig{DSN: url, Query: "SELECT g FROM generate_series(1, 50) AS g", Runs: 3, ExpectedRows: new(50)})
	res := check(t, newGoal(t, goals.GoalSQLBenchmark, cfg), t.TempDir())
	require.True(t, res.Achieved, res.Reason)
	require.Equal(t, 50, res.Details.Rows)
	require.Len(t, res.Details.Runs, 3)

	cfg.SQL.Query = "SELECT * FROM no_such_table_agentgraph"
	res = check(t, newGoal(t, goals.GoalSQLBenchmark, cfg), t.TempDir())
	require.False(t, res.Achieved)
	require.Contains(t, res.Reason, "no_such_table_agentgraph")
}
