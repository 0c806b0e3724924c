package server

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var memNow = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func memCron(id, tid string, due time.Time) CronRecord {
	return CronRecord{ID: id, AssistantID: "asst", GraphID: "agent", ThreadID: tid, Schedule: "* * * * *", NextRunAt: due,
		Enabled: true, Payload: json.RawMessage(`{"input":{}}`), Metadata: map[string]any{"k": "v"}, CreatedAt: memNow, UpdatedAt: memNow}
}

func TestMemoryCronsFireEachTickOnceAcrossGoroutines(t *testing.T) {
	var m memoryCrons
	_, err := m.CreateCron(t.Context(), memCron("c1", "", memNow))
	require.NoError(t, err)
	var created, won atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			run := &RunRecord{ID: "r"}
			_, err := m.fire("c1", memNow, memNow.Add(time.Minute), run, func() (RunRecord, error) {
				created.Add(1)
				return *run, nil
			})
			if err == nil {
				won.Add(1)
			} else {
				require.ErrorIs(t, err, ErrTickTaken)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int32(1), won.Load())
	require.Equal(t, int32(1), created.Load(), "one run for the tick")
	c, err := m.Cron(t.Context(), "c1")
	require.NoError(t, err)
	require.Equal(t, memNow.Add(time.Minute), c.NextRunAt)
}

func TestMemoryCronsKeepATickTakenWhenItsRunIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		wantNext time.Time
	}{
		{"thread busy: taken", ErrThreadBusy, memNow.Add(time.Minute)},
		{"thread gone: taken", ErrNotFound, memNow.Add(time.Minute)},
		{"another graph's thread: taken", ErrGraphMismatch, memNow.Add(time.Minute)},
		{"a fault: given back", errors.New("disk on fire"), memNow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m memoryCrons
			_, err := m.CreateCron(t.Context(), memCron("c1", "t1", memNow))
			require.NoError(t, err)
			_, err = m.fire("c1", memNow, memNow.Add(time.Minute), &RunRecord{}, func() (RunRecord, error) { return RunRecord{}, tc.err })
			require.ErrorIs(t, err, tc.err)
			c, err := m.Cron(t.Context(), "c1")
			require.NoError(t, err)
			require.Equal(t, tc.wantNext, c.NextRunAt)
		})
	}
}

func TestMemoryCronsStoreSearchUpdateAndDelete(t *testing.T) {
	ctx := context.Background()
	var m memoryCrons
	in := memCron("c1", "t1", memNow.Add(time.Minute))
	_, err := m.CreateCron(ctx, in)
	require.NoError(t, err)
	in.Metadata["k"] = "changed by the caller"
	_, err = m.CreateCron(ctx, in)
	require.ErrorIs(t, err, ErrExists)
	_, err = m.CreateCron(ctx, memCron("c2", "", memNow.Add(-time.Minute)))
	require.NoError(t, err)
	off := memCron("c3", "", memNow.Add(-time.Hour))
	off.Enabled = false
	_, err = m.CreateCron(ctx, off)
	require.NoError(t, err)

	got, err := m.Cron(ctx, "c1")
	require.NoError(t, err)
	require.Equal(t, "v", got.Metadata["k"], "the stored cron is a copy")

	out, total, err := m.SearchCrons(ctx, CronQuery{SortBy: "next_run_date", Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 3, total)
	require.Equal(t, []string{"c3", "c2", "c1"}, []string{out[0].ID, out[1].ID, out[2].ID})
	_, total, err = m.SearchCrons(ctx, CronQuery{ThreadID: "t1"})
	require.NoError(t, err)
	require.Equal(t, 1, total)

	due, err := m.DueCrons(ctx, memNow, nil, 10)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, "c2", due[0].ID, "enabled and due")
	due, err = m.DueCrons(ctx, memNow, []string{"other"}, 10)
	require.NoError(t, err)
	require.Empty(t, due)

	refused := errors.New("no")
	_, err = m.UpdateCron(ctx, "c1", func(c *CronRecord) error { c.Schedule = "@daily"; return refused })
	require.ErrorIs(t, err, refused)
	_, err = m.UpdateCron(ctx, "c1", func(c *CronRecord) error { c.Enabled = false; return nil })
	require.NoError(t, err)
	got, err = m.Cron(ctx, "c1")
	require.NoError(t, err)
	require.Equal(t, "* * * * *", got.Schedule, "a refused update changes nothing")
	require.False(t, got.Enabled)

	m.deleteThread("t1")
	_, err = m.Cron(ctx, "c1")
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, m.DeleteCron(ctx, "c2"))
	require.ErrorIs(t, m.DeleteCron(ctx, "c2"), ErrNotFound)
}
