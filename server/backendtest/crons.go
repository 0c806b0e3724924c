package backendtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server"
)

// crons returns the backend (and its second instance) as a
// server.CronBackend, skipping the case when it keeps no crons.
func (e *env) crons() (server.CronBackend, server.CronBackend) {
	e.t.Helper()
	cb, ok := e.b.(server.CronBackend)
	if !ok {
		e.t.Skip("the backend keeps no crons (it does not implement server.CronBackend)")
	}
	cb2, ok := e.b2.(server.CronBackend)
	require.True(e.t, ok, "the second instance keeps no crons")
	return cb, cb2
}

// newCron returns a cron of the graph "agent", due at due, on thread tid
// ("" for a new thread per run).
func (e *env) newCron(tid string, due time.Time) server.CronRecord {
	return server.CronRecord{ID: e.id(3), AssistantID: "asst", GraphID: "agent", ThreadID: tid, Schedule: "*/5 * * * *",
		NextRunAt: due, Enabled: true, OnRunCompleted: "delete", Payload: json.RawMessage(`{"input":{"x":1}}`),
		Metadata: map[string]any{"k": "v"}, CreatedAt: e.now, UpdatedAt: e.now}
}

func (e *env) cron(cb server.CronBackend, c server.CronRecord) server.CronRecord {
	e.t.Helper()
	out, err := cb.CreateCron(e.ctx, c)
	require.NoError(e.t, err)
	return out
}

func (e *env) readCron(cb server.CronBackend, id string) server.CronRecord {
	e.t.Helper()
	c, err := cb.Cron(e.ctx, id)
	require.NoError(e.t, err)
	return c
}

// runsOf returns the ids of the thread's runs.
func (e *env) runsOf(tid string) []string {
	e.t.Helper()
	rs, _, err := e.b.ListRuns(e.ctx, tid, "", 1000, 0)
	require.NoError(e.t, err)
	return runIDs(rs)
}

var cronCases = []testCase{
	{
		name:        "cron-create-read-update-delete",
		explanation: "CreateCron stores a cron that Cron returns as stored (times to the microsecond, zero times as zero); UpdateCron stores what apply left, and an error of apply is returned as it is with nothing changed; DeleteCron deletes; a missing cron is ErrNotFound for Cron, UpdateCron and DeleteCron",
		run: func(e *env) {
			cb, cb2 := e.crons()
			in := e.newCron("", e.now.Add(time.Minute))
			in.Timezone, in.UserID = "Europe/Paris", "ann"
			e.cron(cb, in)
			got := e.readCron(cb2, in.ID)
			require.Equal(e.t, in.AssistantID, got.AssistantID)
			require.Equal(e.t, "agent", got.GraphID)
			require.Empty(e.t, got.ThreadID)
			require.Equal(e.t, in.Schedule, got.Schedule)
			require.Equal(e.t, "Europe/Paris", got.Timezone)
			require.True(e.t, got.EndTime.IsZero(), "no end time: %v", got.EndTime)
			require.True(e.t, in.NextRunAt.Equal(got.NextRunAt), "next_run_at %v, want %v", got.NextRunAt, in.NextRunAt)
			require.True(e.t, got.Enabled)
			require.Equal(e.t, "delete", got.OnRunCompleted)
			require.JSONEq(e.t, `{"input":{"x":1}}`, string(got.Payload))
			require.Equal(e.t, map[string]any{"k": "v"}, got.Metadata)
			require.Equal(e.t, "ann", got.UserID)
			require.True(e.t, e.now.Equal(got.CreatedAt), "created_at %v, want %v", got.CreatedAt, e.now)

			end := e.now.Add(time.Hour)
			upd, err := cb.UpdateCron(e.ctx, in.ID, func(c *server.CronRecord) error {
				c.Schedule, c.EndTime, c.Enabled, c.NextRunAt = "0 * * * *", end, false, time.Time{}
				c.Payload, c.Metadata, c.UpdatedAt = json.RawMessage(`{"input":{"x":2}}`), map[string]any{"k": "w"}, e.now.Add(time.Second)
				return nil
			})
			require.NoError(e.t, err)
			require.Equal(e.t, "0 * * * *", upd.Schedule)
			got = e.readCron(cb2, in.ID)
			require.Equal(e.t, "0 * * * *", got.Schedule)
			require.True(e.t, end.Equal(got.EndTime), "end_time %v, want %v", got.EndTime, end)
			require.False(e.t, got.Enabled)
			require.True(e.t, got.NextRunAt.IsZero(), "next_run_at cleared: %v", got.NextRunAt)
			require.JSONEq(e.t, `{"input":{"x":2}}`, string(got.Payload))
			require.Equal(e.t, map[string]any{"k": "w"}, got.Metadata)
			require.True(e.t, e.now.Add(time.Second).Equal(got.UpdatedAt))
			require.True(e.t, e.now.Equal(got.CreatedAt), "created_at stays")

			refused := errors.New("refused by apply")
			_, err = cb.UpdateCron(e.ctx, in.ID, func(c *server.CronRecord) error {
				c.Schedule = "1 * * * *"
				return refused
			})
			require.ErrorIs(e.t, err, refused)
			require.Equal(e.t, "0 * * * *", e.readCron(cb, in.ID).Schedule, "a refused update changes nothing")

			require.NoError(e.t, cb2.DeleteCron(e.ctx, in.ID))
			_, err = cb.Cron(e.ctx, in.ID)
			require.ErrorIs(e.t, err, server.ErrNotFound)
			_, err = cb.UpdateCron(e.ctx, in.ID, func(*server.CronRecord) error { return nil })
			require.ErrorIs(e.t, err, server.ErrNotFound)
			require.ErrorIs(e.t, cb.DeleteCron(e.ctx, in.ID), server.ErrNotFound)
		},
	},
	{
		name:        "search-crons",
		explanation: "SearchCrons selects by assistant, thread, enabled and JSON containment of metadata, sorts by the field asked (then by id) in either direction, pages, and counts all it selects; Limit 0 only counts",
		run: func(e *env) {
			cb, _ := e.crons()
			th := e.thread(nil)
			var all []string
			for i := range 4 {
				c := e.newCron("", e.now.Add(time.Duration(4-i)*time.Minute))
				if i%2 == 1 {
					c.ThreadID, c.AssistantID, c.OnRunCompleted = th.ID, "other", ""
				}
				c.Enabled = i != 3
				c.Metadata = map[string]any{"n": i, "tags": map[string]any{"even": i%2 == 0}}
				c.CreatedAt = e.now.Add(time.Duration(i) * time.Second)
				all = append(all, e.cron(cb, c).ID)
			}
			search := func(q server.CronQuery) ([]string, int) {
				e.t.Helper()
				if q.Limit == 0 {
					q.Limit = 100
				}
				out, total, err := cb.SearchCrons(e.ctx, q)
				require.NoError(e.t, err)
				ids := []string{}
				for _, c := range out {
					ids = append(ids, c.ID)
				}
				return ids, total
			}
			got, total := search(server.CronQuery{SortBy: "created_at"})
			require.Equal(e.t, all, got)
			require.Equal(e.t, 4, total)
			got, _ = search(server.CronQuery{SortBy: "created_at", Desc: true})
			require.Equal(e.t, []string{all[3], all[2], all[1], all[0]}, got)
			got, _ = search(server.CronQuery{SortBy: "next_run_date"})
			require.Equal(e.t, []string{all[3], all[2], all[1], all[0]}, got, "the latest created is due first")
			got, _ = search(server.CronQuery{SortBy: "cron_id", Desc: true})
			require.Equal(e.t, []string{all[3], all[2], all[1], all[0]}, got)
			got, _ = search(server.CronQuery{SortBy: "created_at", AssistantID: "other"})
			require.Equal(e.t, []string{all[1], all[3]}, got)
			got, _ = search(server.CronQuery{SortBy: "created_at", ThreadID: th.ID})
			require.Equal(e.t, []string{all[1], all[3]}, got)
			yes, no := true, false
			got, _ = search(server.CronQuery{SortBy: "created_at", Enabled: &no})
			require.Equal(e.t, []string{all[3]}, got)
			got, _ = search(server.CronQuery{SortBy: "created_at", Enabled: &yes, Metadata: map[string]any{"tags": map[string]any{"even": true}}})
			require.Equal(e.t, []string{all[0], all[2]}, got)
			got, _ = search(server.CronQuery{SortBy: "created_at", Metadata: map[string]any{"n": 2}})
			require.Equal(e.t, []string{all[2]}, got)
			got, total = search(server.CronQuery{SortBy: "created_at", Limit: 2, Offset: 1})
			require.Equal(e.t, []string{all[1], all[2]}, got)
			require.Equal(e.t, 4, total)
			out, total, err := cb.SearchCrons(e.ctx, server.CronQuery{ThreadID: th.ID})
			require.NoError(e.t, err)
			require.Empty(e.t, out)
			require.Equal(e.t, 2, total, "Limit 0 counts")
		},
	},
	{
		name:        "due-crons",
		explanation: "DueCrons returns the enabled crons whose next run is not after now, of the graphs given (nil: any), the earliest due first, at most limit; a disabled cron, one not yet due and one that fires no more are not due",
		run: func(e *env) {
			cb, _ := e.crons()
			early := e.cron(cb, e.newCron("", e.now.Add(-time.Minute)))
			onTime := e.cron(cb, e.newCron("", e.now))
			other := e.newCron("", e.now.Add(-time.Second))
			other.GraphID = "other"
			other = e.cron(cb, other)
			e.cron(cb, e.newCron("", e.now.Add(time.Second)))
			off := e.newCron("", e.now.Add(-time.Hour))
			off.Enabled = false
			e.cron(cb, off)
			e.cron(cb, e.newCron("", time.Time{}))
			due := func(graphs []string, limit int) []string {
				e.t.Helper()
				cs, err := cb.DueCrons(e.ctx, e.now, graphs, limit)
				require.NoError(e.t, err)
				out := []string{}
				for _, c := range cs {
					out = append(out, c.ID)
				}
				return out
			}
			require.Equal(e.t, []string{early.ID, other.ID, onTime.ID}, due(nil, 10))
			require.Equal(e.t, []string{early.ID, onTime.ID}, due([]string{"agent"}, 10))
			require.Equal(e.t, []string{early.ID}, due(nil, 1))
			require.Empty(e.t, due([]string{"none"}, 10))
		},
	},
	{
		name:        "fire-cron-once",
		explanation: "FireCron of a tick due sets the cron's next run and creates its run (on the cron's thread, or on the new thread create) in one step; the same tick fired again fails with ErrTickTaken and creates nothing; a nil run only moves the next run; a zero next stops the cron",
		run: func(e *env) {
			cb, cb2 := e.crons()
			th := e.thread(nil)
			due := e.now.Add(-time.Second)
			c := e.cron(cb, e.newCron(th.ID, due))
			next := e.now.Add(5 * time.Minute)
			run := e.newRun(th.ID, "reject", `{"input":{"x":1}}`)
			out, err := cb.FireCron(e.ctx, c.ID, due, next, &run, nil)
			require.NoError(e.t, err)
			require.Equal(e.t, run.ID, out.ID)
			require.Equal(e.t, "pending", out.Status)
			require.Equal(e.t, []string{run.ID}, e.runsOf(th.ID))
			require.True(e.t, next.Equal(e.readCron(cb, c.ID).NextRunAt))

			again := e.newRun(th.ID, "enqueue", `{}`)
			_, err = cb2.FireCron(e.ctx, c.ID, due, next.Add(time.Minute), &again, nil)
			require.ErrorIs(e.t, err, server.ErrTickTaken)
			require.Equal(e.t, []string{run.ID}, e.runsOf(th.ID), "a tick taken makes no run")
			require.True(e.t, next.Equal(e.readCron(cb, c.ID).NextRunAt), "a tick taken moves nothing")

			stateless := e.cron(cb, e.newCron("", due))
			tid := e.id(0)
			srun := e.newRun(tid, "reject", `{}`)
			_, err = cb.FireCron(e.ctx, stateless.ID, due, next, &srun, &server.ThreadRecord{ID: tid, CreatedAt: e.now, Status: "busy"})
			require.NoError(e.t, err)
			require.Equal(e.t, []string{srun.ID}, e.runsOf(tid), "the new thread has the run")

			_, err = cb.FireCron(e.ctx, c.ID, next, time.Time{}, nil, nil)
			require.NoError(e.t, err)
			require.True(e.t, e.readCron(cb, c.ID).NextRunAt.IsZero(), "a zero next stops the cron")
			require.Equal(e.t, []string{run.ID}, e.runsOf(th.ID), "a nil run makes no run")
			_, err = cb.FireCron(e.ctx, e.id(3), due, next, nil, nil)
			require.Error(e.t, err, "a cron that does not exist has no tick to fire")
		},
	},
	{
		name:        "fire-cron-run-refused",
		explanation: "a tick whose run cannot be made (its thread busy under the reject strategy, or gone) is taken all the same, and FireCron returns why: ErrThreadBusy or ErrNotFound; no run is made",
		run: func(e *env) {
			cb, _ := e.crons()
			th := e.thread(nil)
			busy := e.run(th.ID, "reject")
			due := e.now.Add(-time.Second)
			c := e.cron(cb, e.newCron(th.ID, due))
			next := e.now.Add(time.Minute)
			run := e.newRun(th.ID, "reject", `{}`)
			_, err := cb.FireCron(e.ctx, c.ID, due, next, &run, nil)
			require.ErrorIs(e.t, err, server.ErrThreadBusy)
			require.Equal(e.t, []string{busy.ID}, e.runsOf(th.ID))
			require.True(e.t, next.Equal(e.readCron(cb, c.ID).NextRunAt), "the tick is taken")

			gone := e.cron(cb, e.newCron(e.id(0), due))
			run = e.newRun(gone.ThreadID, "reject", `{}`)
			_, err = cb.FireCron(e.ctx, gone.ID, due, next, &run, nil)
			require.ErrorIs(e.t, err, server.ErrNotFound)
			require.True(e.t, next.Equal(e.readCron(cb, gone.ID).NextRunAt), "the tick is taken")
		},
	},
	{
		name:         "fire-cron-race",
		explanation:  "two instances on one database firing the same ticks at once make one run per tick: one FireCron of each tick succeeds, the other fails with ErrTickTaken",
		twoInstances: true,
		run: func(e *env) {
			cb, cb2 := e.crons()
			due := e.now.Add(-time.Hour)
			c := e.cron(cb, e.newCron("", due))
			const ticks = 10
			var tids []string
			for tick := range ticks {
				next := due.Add(time.Minute)
				var errs [2]error
				concurrently(2, func(i int) {
					tid := fmt.Sprintf("%s-%d-%d", c.ID, tick, i)
					run := e.newRun(tid, "reject", `{}`)
					_, errs[i] = []server.CronBackend{cb, cb2}[i].FireCron(e.ctx, c.ID, due, next, &run,
						&server.ThreadRecord{ID: tid, CreatedAt: e.now, Status: "busy"})
				})
				won := 0
				for i, err := range errs {
					if err == nil {
						won++
						tids = append(tids, fmt.Sprintf("%s-%d-%d", c.ID, tick, i))
						continue
					}
					require.ErrorIs(e.t, err, server.ErrTickTaken, "tick %d", tick)
				}
				require.Equal(e.t, 1, won, "tick %d fired %d times", tick, won)
				due = next
			}
			for _, tid := range tids {
				require.Len(e.t, e.runsOf(tid), 1)
			}
			require.True(e.t, due.Equal(e.readCron(cb, c.ID).NextRunAt))
		},
	},
	{
		name:        "delete-thread-deletes-its-crons",
		explanation: "DeleteThread deletes the crons of the thread, and no other",
		run: func(e *env) {
			cb, _ := e.crons()
			th := e.thread(nil)
			mine := e.cron(cb, e.newCron(th.ID, e.now))
			free := e.cron(cb, e.newCron("", e.now))
			_, err := e.b.DeleteThread(e.ctx, th.ID)
			require.NoError(e.t, err)
			_, err = cb.Cron(e.ctx, mine.ID)
			require.ErrorIs(e.t, err, server.ErrNotFound)
			e.readCron(cb, free.ID)
		},
	},
}
