package goals

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// driverPackages maps the database/sql driver names the sql-benchmark goal
// opens to the packages that register them. Package goals imports no
// driver: the program does (see [SQLConfig]).
var driverPackages = map[string]string{
	"sqlite": "modernc.org/sqlite",
	"pgx":    "github.com/jackc/pgx/v5/stdlib",
}

// sqlGoal is reached when the median time of a query is within a limit.
type sqlGoal struct {
	driver       string // database/sql driver name: "sqlite" or "pgx"
	dsn          string
	query        string
	queryFile    string
	limit        time.Duration
	runs         int
	expectedRows *int
	timeout      time.Duration
	now          func() time.Time
}

func newSQLGoal(cfg Config) (Goal, error) {
	return newSQLGoalWith(cfg, sql.Drivers())
}

// newSQLGoalWith is newSQLGoal for a program whose registered
// database/sql drivers are drivers.
func newSQLGoalWith(cfg Config, drivers []string) (Goal, error) {
	bad := func(setting, problem string) error {
		return &SettingError{Goal: GoalSQLBenchmark, Setting: setting, Problem: problem}
	}
	if err := checkTimeout(GoalSQLBenchmark, &cfg); err != nil {
		return nil, err
	}
	s := cfg.SQL
	dsn := strings.TrimSpace(s.DSN)
	if dsn == "" {
		return nil, bad("sql.dsn", "is required (a SQLite file or a postgres:// URL)")
	}
	var driver string
	switch strings.ToLower(strings.TrimSpace(s.Driver)) {
	case "sqlite", "sqlite3":
		driver = "sqlite"
	case "postgres", "postgresql", "pgx":
		driver = "pgx"
	case "":
		driver = "sqlite"
		if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
			driver = "pgx"
		}
	default:
		return nil, bad("sql.driver", fmt.Sprintf("is %q; want sqlite or postgres", s.Driver))
	}
	if !slices.Contains(drivers, driver) {
		return nil, &MissingDriverError{Goal: GoalSQLBenchmark, Driver: driver, Package: driverPackages[driver]}
	}
	query, queryFile := strings.TrimSpace(s.Query), strings.TrimSpace(s.QueryFile)
	switch {
	case query == "" && queryFile == "":
		return nil, bad("sql.query", "is required (or sql.query_file)")
	case query != "" && queryFile != "":
		return nil, bad("sql.query", "and sql.query_file are both set; keep one")
	}
	if !(s.MaxMS > 0) {
		return nil, bad("sql.max_ms", "must be a positive number of milliseconds")
	}
	if s.Runs < 0 {
		return nil, bad("sql.runs", "must not be negative")
	}
	if s.ExpectedRows != nil && *s.ExpectedRows < 0 {
		return nil, bad("sql.expected_rows", "must not be negative")
	}
	return &sqlGoal{
		driver:       driver,
		dsn:          dsn,
		query:        query,
		queryFile:    queryFile,
		limit:        time.Duration(s.MaxMS * float64(time.Millisecond)),
		runs:         orDefault(s.Runs, DefaultRuns),
		expectedRows: s.ExpectedRows,
		timeout:      cfg.timeout(),
		now:          time.Now,
	}, nil
}

func (g *sqlGoal) Name() string { return GoalSQLBenchmark }

// database describes the database without credentials.
func (g *sqlGoal) database() string {
	if g.driver == "sqlite" {
		return "the SQLite database " + g.dsn
	}
	if u, err := url.Parse(g.dsn); err == nil && u.Scheme != "" {
		return "the PostgreSQL database " + u.Redacted()
	}
	return "the PostgreSQL database configured in " + ConfigFile
}

func (g *sqlGoal) SystemPrompt() string {
	what := "the query in " + g.queryFile
	if g.queryFile == "" {
		what = "this query:\n\n    " + strings.ReplaceAll(g.query, "\n", "\n    ") + "\n\n"
	}
	rows := ""
	if g.expectedRows != nil {
		rows = fmt.Sprintf(" and the query returns exactly %d rows", *g.expectedRows)
	}
	return fmt.Sprintf(`Your goal is to make %s run fast enough on %s.

Success is verified by executing the query %d times on one connection and reading all its rows each time: the goal is achieved when every execution succeeds, the median time is at most %s%s. The whole check is stopped after %s. After every check you are shown the measured times, their median and the row count.

Inspect the query plan (EXPLAIN), then rewrite the query or add indexes. Keep the result the same: same rows, same columns.`,
		what, g.database(), g.runs, g.limit, rows, g.timeout)
}

// loadQuery returns the query to time.
func (g *sqlGoal) loadQuery(cwd string) (string, error) {
	if g.queryFile == "" {
		return g.query, nil
	}
	path := g.queryFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(cwd, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("goals: %s: read sql.query_file: %w", GoalSQLBenchmark, err)
	}
	q := strings.TrimSpace(string(data))
	if q == "" {
		return "", &SettingError{Goal: GoalSQLBenchmark, Setting: "sql.query_file", Problem: fmt.Sprintf("%s is empty", g.queryFile)}
	}
	return q, nil
}

// open opens and pings the database.
func (g *sqlGoal) open(ctx context.Context, cwd string) (*sql.DB, error) {
	dsn := g.dsn
	if g.driver == "sqlite" && !strings.HasPrefix(dsn, "file:") && dsn != ":memory:" {
		if !filepath.IsAbs(dsn) {
			dsn = filepath.Join(cwd, dsn)
		}
		// Opening a missing file would create an empty database.
		if _, err := os.Stat(dsn); err != nil {
			return nil, fmt.Errorf("goals: %s: sql.dsn: %w", GoalSQLBenchmark, err)
		}
	}
	db, err := sql.Open(g.driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("goals: %s: open database: %w", GoalSQLBenchmark, err)
	}
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("goals: %s: connect to database: %w", GoalSQLBenchmark, err)
	}
	return db, nil
}

// execute runs q once, reading every row, and returns the row count.
func execute(ctx context.Context, db *sql.DB, q string) (int, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		return n, err
	}
	return n, rows.Close()
}

func (g *sqlGoal) Check(ctx context.Context, _ State, cwd string) (Result, error) {
	start := g.now()
	q, err := g.loadQuery(cwd)
	if err != nil {
		return Result{}, err
	}
	runCtx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	db, err := g.open(runCtx, cwd)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, fmt.Errorf("goals: %s: %w", GoalSQLBenchmark, ctx.Err())
		}
		return Result{}, err
	}
	defer db.Close()

	m := measurement{runs: g.runs, limit: g.limit}
	d := Details{Command: truncateMiddle(q, MaxFailureOutputChars)}
	for i := range g.runs {
		t0 := g.now()
		n, err := execute(runCtx, db, q)
		elapsed := g.now().Sub(t0)
		if err != nil {
			if ctx.Err() != nil {
				return Result{}, fmt.Errorf("goals: %s: %w", GoalSQLBenchmark, ctx.Err())
			}
			d.TimedOut = errors.Is(runCtx.Err(), context.DeadlineExceeded)
			d.Failed = 1
			d.Failures = []Failure{{Name: fmt.Sprintf("run %d", i+1), Output: truncateMiddle(err.Error(), MaxFailureOutputChars)}}
			m.details(&d)
			d.Duration = g.now().Sub(start)
			reason := fmt.Sprintf("%s: run %d of %d failed: %v", GoalSQLBenchmark, i+1, g.runs, err)
			if d.TimedOut {
				reason = fmt.Sprintf("%s: run %d of %d was stopped at the time limit of %s", GoalSQLBenchmark, i+1, g.runs, g.timeout)
			}
			return Result{Reason: reason, Details: d}, nil
		}
		d.Rows = n
		if g.expectedRows != nil && n != *g.expectedRows {
			d.Failed = 1
			d.Failures = []Failure{{Name: "expected_rows", Output: fmt.Sprintf("the query returned %d rows, want %d", n, *g.expectedRows)}}
			m.details(&d)
			d.Duration = g.now().Sub(start)
			return Result{
				Reason:  fmt.Sprintf("%s: the query returned %d rows, want %d", GoalSQLBenchmark, n, *g.expectedRows),
				Details: d,
			}, nil
		}
		if m.add(elapsed) {
			break
		}
	}
	m.details(&d)
	d.Duration = g.now().Sub(start)
	return Result{Achieved: m.achieved(), Reason: m.reason(GoalSQLBenchmark) + fmt.Sprintf(", %d rows", d.Rows), Details: d}, nil
}
