package goals

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSQLBenchmarkComparesMedianWithLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(dir, "x.db"))
	require.NoError(t, err)
	_, err = db.Exec("CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (1), (2)")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	ms := time.Millisecond
	tests := []struct {
		name      string
		durations []time.Duration // per execution, on a fake clock
		achieved  bool
		median    time.Duration
	}{
		{"median within limit", []time.Duration{5 * ms, 50 * ms, 8 * ms}, true, 8 * ms},
		{"median above limit", []time.Duration{12 * ms, 5 * ms, 50 * ms}, false, 12 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, err := newSQLGoal(Config{SQL: SQLConfig{DSN: "x.db", Query: "SELECT v FROM t", MaxMS: 10, Runs: 3}})
			require.NoError(t, err)
			sg := g.(*sqlGoal)
			// Readings: the check's start, then start and end of each
			// execution, then the end of the check.
			now, reads := time.Unix(0, 0), 0
			sg.now = func() time.Time {
				reads++
				if reads > 2 && reads%2 == 1 && (reads-3)/2 < len(tt.durations) {
					now = now.Add(tt.durations[(reads-3)/2])
				}
				return now
			}
			res, err := sg.Check(context.Background(), State{}, dir)
			require.NoError(t, err)
			require.Equal(t, tt.achieved, res.Achieved, res.Reason)
			require.Equal(t, tt.durations, res.Details.Runs)
			require.Equal(t, tt.median, res.Details.Median)
			require.Equal(t, 10*ms, res.Details.Limit)
			require.Equal(t, 2, res.Details.Rows)
		})
	}
}

func TestSQLBenchmarkNeedsTheProgramToRegisterItsDriver(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     SQLConfig
		drivers []string // registered
		want    *MissingDriverError
	}{
		{"sqlite registered", SQLConfig{DSN: "bench.db"}, []string{"sqlite"}, nil},
		{"sqlite missing", SQLConfig{DSN: "bench.db"}, []string{"pgx"},
			&MissingDriverError{Goal: GoalSQLBenchmark, Driver: "sqlite", Package: "modernc.org/sqlite"}},
		{"postgres registered", SQLConfig{DSN: "postgres://db/bench"}, []string{"pgx"}, nil},
		{"postgres missing", SQLConfig{Driver: "postgres", DSN: "host=db"}, []string{"sqlite"},
			&MissingDriverError{Goal: GoalSQLBenchmark, Driver: "pgx", Package: "github.com/jackc/pgx/v5/stdlib"}},
		{"none registered", SQLConfig{DSN: "postgres://db/bench"}, nil,
			&MissingDriverError{Goal: GoalSQLBenchmark, Driver: "pgx", Package: "github.com/jackc/pgx/v5/stdlib"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.Query, tt.cfg.MaxMS = "SELECT 1", 10
			g, err := newSQLGoalWith(Config{SQL: tt.cfg}, tt.drivers)
			if tt.want == nil {
				require.NoError(t, err)
				require.NotNil(t, g)
				return
			}
			missing, ok := errors.AsType[*MissingDriverError](err)
			require.True(t, ok, "got %v", err)
			require.Equal(t, tt.want, missing)
			require.Equal(t, `goals: sql-benchmark: the database/sql driver "`+tt.want.Driver+
				`" is not registered: the program must import _ "`+tt.want.Package+`"`, err.Error())
		})
	}
}
