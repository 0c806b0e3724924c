package goals

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMedian(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []time.Duration
		want time.Duration
	}{
		{"none", nil, 0},
		{"one", []time.Duration{7}, 7},
		{"odd count unsorted", []time.Duration{9, 1, 5}, 5},
		{"even count averages the middle two", []time.Duration{4, 1, 10, 2}, 3},
		{"outlier does not move it", []time.Duration{time.Second, time.Second, time.Hour}, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := append([]time.Duration(nil), tt.in...)
			require.Equal(t, tt.want, median(tt.in))
			require.Equal(t, in, tt.in, "the input is not reordered")
		})
	}
}

// scriptedPerfGoal returns a perf goal whose runs take the given durations
// on a fake clock, and a pointer to the number of runs made.
func scriptedPerfGoal(limit time.Duration, runs int, durations []time.Duration) (*perfGoal, *int) {
	now := time.Unix(0, 0)
	made := 0
	g := &perfGoal{command: "bench", limit: limit, runs: runs, timeout: time.Minute}
	g.now = func() time.Time { return now }
	g.run = func(ctx context.Context, cwd string) (processResult, error) {
		now = now.Add(durations[made])
		made++
		return processResult{output: "ok\n"}, nil
	}
	return g, &made
}

func TestPerfCheckComparesMedianWithLimit(t *testing.T) {
	t.Parallel()
	s := time.Second
	tests := []struct {
		name      string
		durations []time.Duration
		achieved  bool
		median    time.Duration
		reason    string
	}{
		{"median below limit despite a slow run", []time.Duration{1 * s, 9 * s, 1 * s}, true, 1 * s,
			"perf-check: median of 3 runs 1s ≤ limit 2s"},
		{"median equal to limit", []time.Duration{2 * s, 1 * s, 3 * s}, true, 2 * s,
			"perf-check: median of 3 runs 2s ≤ limit 2s"},
		{"median above limit despite a fast run", []time.Duration{3 * s, 1 * s, 3 * s}, false, 3 * s,
			"perf-check: median of 3 runs 3s > limit 2s"},
		{"median above limit", []time.Duration{2 * s, 3 * s, 4 * s}, false, 3 * s,
			"perf-check: median of 3 runs 3s > limit 2s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, _ := scriptedPerfGoal(2*s, 3, tt.durations)
			res, err := g.Check(context.Background(), State{}, t.TempDir())
			require.NoError(t, err)
			require.Equal(t, tt.achieved, res.Achieved)
			require.Equal(t, tt.reason, res.Reason)
			require.Equal(t, tt.durations, res.Details.Runs)
			require.Equal(t, tt.median, res.Details.Median)
			require.Equal(t, 2*s, res.Details.Limit)
			require.Equal(t, "ok\n", res.Details.Output)
		})
	}
}

func TestPerfCheckStopsOnceMedianCannotBeWithinLimit(t *testing.T) {
	t.Parallel()
	s := time.Second
	g, made := scriptedPerfGoal(s, 5, []time.Duration{5 * s, 1 * s, 5 * s, 5 * s, 1 * s})
	res, err := g.Check(context.Background(), State{}, t.TempDir())
	require.NoError(t, err)
	require.False(t, res.Achieved)
	require.Equal(t, 4, *made, "the third slow run of five decides")
	require.Equal(t, []time.Duration{5 * s, 1 * s, 5 * s, 5 * s}, res.Details.Runs)
	require.Equal(t, 5*s, res.Details.Median)
	require.Equal(t, 16*s, res.Details.Duration)
	require.Equal(t, "perf-check: 3 of 5 runs exceeded the limit 1s (median of the 4 measured: 5s); stopped early as the median cannot be within the limit", res.Reason)
}

func TestMeasurementReportsMedianAboveLimitWhenAllRunsRan(t *testing.T) {
	t.Parallel()
	m := measurement{runs: 4, limit: 20}
	for _, d := range []time.Duration{10, 30, 30, 20} {
		require.False(t, m.add(d), "two of four over the limit do not decide")
	}
	require.False(t, m.achieved())
	require.Equal(t, "x: median of 4 runs 25ns > limit 20ns", m.reason("x"))
}
