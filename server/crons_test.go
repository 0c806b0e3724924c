package server_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	pgsaver "github.com/agentgraph/agentgraph/checkpoint/postgres"
	ckptsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/postgres"
	srvsqlite "github.com/agentgraph/agentgraph/server/sqlite"
)

// clock is a server's clock that the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2030, 1, 1, 0, 0, 30, 0, time.UTC)}
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// cronDB is one database that server processes share: a SQLite file, or
// a PostgreSQL schema.
type cronDB struct {
	saver checkpoint.Saver
	open  func(t *testing.T) server.Backend // a new instance, as a new process opens it
}

// sqliteCronDB is a SQLite file shared by the processes.
func sqliteCronDB(t *testing.T) cronDB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.db")
	saver, err := ckptsqlite.Open(t.Context(), path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, saver.Close()) })
	return cronDB{saver: saver, open: func(t *testing.T) server.Backend {
		b, err := srvsqlite.Open(t.Context(), path)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, b.Close()) })
		return b
	}}
}

// cronDBs are the databases the cron tests run on: SQLite, and
// PostgreSQL when AGENTGRAPH_TEST_POSTGRES_URL is set.
func cronDBs(t *testing.T) map[string]func(t *testing.T) cronDB {
	dbs := map[string]func(t *testing.T) cronDB{"sqlite": sqliteCronDB}
	if os.Getenv("AGENTGRAPH_TEST_POSTGRES_URL") != "" {
		dbs["postgres"] = postgresCronDB
	}
	return dbs
}

// postgresCronDB is a PostgreSQL schema shared by the processes, each
// with a pool of its own.
func postgresCronDB(t *testing.T) cronDB {
	t.Helper()
	url := pgdbtest.URL(t)
	schema := pgdbtest.FreshSchema(t, "srv_cron")
	saver, err := pgsaver.Open(t.Context(), url, pgsaver.WithSchema(schema), pgsaver.WithMaxConns(8))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, saver.Close()) })
	return cronDB{saver: saver, open: func(t *testing.T) server.Backend {
		cfg, err := pgxpool.ParseConfig(url)
		require.NoError(t, err)
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
		cfg.MaxConns = 8
		pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
		require.NoError(t, err)
		t.Cleanup(pool.Close) // after the server's own cleanup
		b, err := postgres.New(t.Context(), pool)
		require.NoError(t, err)
		return b
	}}
}

// cronProcess is a server process on db: its backend b, and an env to
// send it requests.
func cronProcess(t *testing.T, db cronDB, clk *clock, b server.Backend) (*server.Server, *env) {
	t.Helper()
	s, err := server.New(server.Graph("agent", agentGraph(t, db.saver)), server.WithCheckpointer(db.saver), server.WithBackend(b),
		server.WithAuthToken(token), server.WithClock(clk.now), server.WithPollInterval(10*time.Millisecond),
		server.WithRunLeaseTTL(2*time.Second))
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		require.NoError(t, s.Shutdown(context.Background()))
		hs.CloseClientConnections()
		hs.Close()
	})
	return s, &env{t: t, srv: hs}
}

// cronJSON is a cron as the API answers it.
type cronJSON struct {
	CronID         string         `json:"cron_id"`
	AssistantID    string         `json:"assistant_id"`
	ThreadID       *string        `json:"thread_id"`
	Schedule       string         `json:"schedule"`
	Timezone       *string        `json:"timezone"`
	EndTime        *time.Time     `json:"end_time"`
	NextRunDate    *time.Time     `json:"next_run_date"`
	Enabled        bool           `json:"enabled"`
	OnRunCompleted *string        `json:"on_run_completed"`
	Payload        map[string]any `json:"payload"`
	Metadata       map[string]any `json:"metadata"`
}

func (e *env) cron(id string) cronJSON {
	e.t.Helper()
	var out []cronJSON
	e.ok("POST", "/runs/crons/search", map[string]any{"limit": 1000}, &out)
	for _, c := range out {
		if c.CronID == id {
			return c
		}
	}
	e.t.Fatalf("no cron %s", id)
	return cronJSON{}
}

// waitFor polls cond until it holds, failing after a generous bound (a
// bound on a broken server, not a timing the test measures).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runsOn returns the runs of thread tid.
func (e *env) runsOn(tid string) []map[string]any {
	e.t.Helper()
	var runs []map[string]any
	e.ok("GET", "/threads/"+tid+"/runs?limit=1000", nil, &runs)
	return runs
}

func TestCronRoutesAnswer404WithoutACronBackend(t *testing.T) {
	memoryOnly(t, "the test gives a Backend of its own")
	// A Backend that is no CronBackend: the MemoryBackend's Backend
	// methods alone.
	noCrons := struct{ server.Backend }{server.NewMemoryBackend()}
	e := newEnv(t, server.WithBackend(noCrons))
	r := e.do("POST", "/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "* * * * *"})
	require.Equal(t, 404, r.status, "%s", r.body)
	require.Contains(t, string(r.body), "keeps no crons")
	var info struct {
		Flags map[string]bool `json:"flags"`
	}
	e.ok("GET", "/info", nil, &info)
	require.False(t, info.Flags["crons"])
}

// A server without WithBackend keeps crons in its own MemoryBackend.
func TestALocalServerServesCrons(t *testing.T) {
	memoryOnly(t, "a server without WithBackend")
	e := newEnv(t)
	var c map[string]any
	e.ok("POST", "/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "0 3 * * *", "input": map[string]any{"topic": "x"}}, &c)
	var found []map[string]any
	e.ok("POST", "/runs/crons/search", map[string]any{}, &found)
	require.Len(t, found, 1)
	require.Equal(t, c["cron_id"], found[0]["cron_id"])
	var info struct {
		Flags map[string]bool `json:"flags"`
	}
	e.ok("GET", "/info", nil, &info)
	require.True(t, info.Flags["crons"])
}

func TestCronCreateRefusesABadCron(t *testing.T) {
	db := sqliteCronDB(t)
	_, e := cronProcess(t, db, newClock(), db.open(t))
	tid := e.newThread(nil)
	for _, tc := range []struct {
		name, path string
		body       map[string]any
		status     int
		want       string
	}{
		{"no schedule", "/runs/crons", map[string]any{"assistant_id": "agent"}, 422, "schedule is required"},
		{"bad schedule", "/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "61 * * * *"}, 422, "schedule"},
		{"@every", "/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "@every 1s"}, 422, "@every"},
		{"six fields", "/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "* * * * * *"}, 422, "schedule"},
		{"bad timezone", "/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "@daily", "timezone": "Mars/Olympus"}, 422, "timezone"},
		{"bad end_time", "/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "@daily", "end_time": "tomorrow"}, 422, "end_time"},
		{"no assistant", "/runs/crons", map[string]any{"schedule": "@daily"}, 422, "assistant_id is required"},
		{"unknown assistant", "/runs/crons", map[string]any{"assistant_id": "nope", "schedule": "@daily"}, 404, "No assistant"},
		{"bad input", "/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "@daily", "input": map[string]any{"nope": 1}}, 400, "nope"},
		{"bad strategy", "/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "@daily", "multitask_strategy": "sometimes"}, 422, "multitask_strategy"},
		{"bad on_run_completed", "/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "@daily", "on_run_completed": "shred"}, 422, "on_run_completed"},
		{"on_run_completed on a thread", "/threads/" + tid + "/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "@daily", "on_run_completed": "keep"}, 422, "on_run_completed"},
		{"missing thread", "/threads/00000000-0000-4000-8000-00000000dead/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "@daily"}, 404, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", tc.path, tc.body)
			require.Equal(t, tc.status, r.status, "%s", r.body)
			require.Contains(t, string(r.body), tc.want)
		})
	}
	var n int
	e.ok("POST", "/runs/crons/count", map[string]any{}, &n)
	require.Zero(t, n, "no refused cron is stored")
}

func TestCronSearchCountPatchAndDelete(t *testing.T) {
	db := sqliteCronDB(t)
	clk := newClock()
	_, e := cronProcess(t, db, clk, db.open(t))
	tid := e.newThread(nil)
	var onThread, free cronJSON
	e.ok("POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "0 9 * * *",
		"timezone": "America/New_York", "input": map[string]any{"topic": "news"}, "metadata": map[string]any{"team": "a"}}, &onThread)
	require.Equal(t, tid, *onThread.ThreadID)
	require.Equal(t, time.Date(2030, 1, 1, 14, 0, 0, 0, time.UTC), onThread.NextRunDate.UTC(), "9:00 in New York is 14:00 UTC in January")
	require.Nil(t, onThread.OnRunCompleted, "on_run_completed is for crons without a thread")
	require.Equal(t, map[string]any{"input": map[string]any{"topic": "news"}, "metadata": map[string]any{"team": "a"}}, onThread.Payload)
	e.ok("POST", "/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "*/5 * * * *", "metadata": map[string]any{"team": "b"}}, &free)
	require.Nil(t, free.ThreadID)
	require.Equal(t, "delete", *free.OnRunCompleted, "a stateless cron's threads are deleted by default")
	require.Equal(t, time.Date(2030, 1, 1, 0, 5, 0, 0, time.UTC), free.NextRunDate.UTC())

	count := func(body map[string]any) int {
		t.Helper()
		var n int
		e.ok("POST", "/runs/crons/count", body, &n)
		return n
	}
	require.Equal(t, 2, count(map[string]any{}))
	require.Equal(t, 1, count(map[string]any{"thread_id": tid}))
	require.Equal(t, 2, count(map[string]any{"assistant_id": "agent"}), "a graph's name is its assistant")
	require.Equal(t, 1, count(map[string]any{"metadata": map[string]any{"team": "b"}}))

	var page []map[string]any
	r := e.ok("POST", "/runs/crons/search", map[string]any{"sort_by": "next_run_date", "sort_order": "asc", "limit": 1,
		"select": []string{"cron_id", "next_run_date"}}, &page)
	require.Len(t, page, 1)
	require.Equal(t, free.CronID, page[0]["cron_id"])
	require.Len(t, page[0], 2, "only the fields selected: %v", page[0])
	require.Equal(t, "2", r.header.Get("X-Pagination-Total"))
	require.Equal(t, 422, e.do("POST", "/runs/crons/search", map[string]any{"select": []string{"secret"}}).status)
	require.Equal(t, 422, e.do("POST", "/runs/crons/search", map[string]any{"sort_by": "schedule"}).status)

	var patched cronJSON
	e.ok("PATCH", "/runs/crons/"+onThread.CronID, map[string]any{"schedule": "30 * * * *", "input": map[string]any{"topic": "sports"}}, &patched)
	require.Equal(t, "30 * * * *", patched.Schedule)
	require.Equal(t, time.Date(2030, 1, 1, 0, 30, 0, 0, time.UTC), patched.NextRunDate.UTC(), "the next run follows the new schedule")
	require.Equal(t, map[string]any{"topic": "sports"}, patched.Payload["input"])
	require.Equal(t, map[string]any{"team": "a"}, patched.Payload["metadata"], "the fields not patched stay")
	e.ok("PATCH", "/runs/crons/"+onThread.CronID, map[string]any{"enabled": false}, &patched)
	require.False(t, patched.Enabled)
	require.Equal(t, 1, count(map[string]any{"thread_id": tid}))
	var enabled []cronJSON
	e.ok("POST", "/runs/crons/search", map[string]any{"enabled": true}, &enabled)
	require.Len(t, enabled, 1)
	require.Equal(t, free.CronID, enabled[0].CronID)
	r = e.do("PATCH", "/runs/crons/"+onThread.CronID, map[string]any{"schedule": "every day"})
	require.Equal(t, 422, r.status, "%s", r.body)
	r = e.do("PATCH", "/runs/crons/"+onThread.CronID, map[string]any{"input": map[string]any{"nope": 1}})
	require.Equal(t, 400, r.status, "a patched payload is checked as a run's: %s", r.body)
	require.Equal(t, "30 * * * *", e.cron(onThread.CronID).Schedule, "a refused patch changes nothing")

	require.Equal(t, 204, e.do("DELETE", "/runs/crons/"+onThread.CronID, nil).status)
	require.Equal(t, 404, e.do("DELETE", "/runs/crons/"+onThread.CronID, nil).status)
	require.Equal(t, 404, e.do("PATCH", "/runs/crons/"+onThread.CronID, map[string]any{"enabled": true}).status)
	require.Equal(t, 422, e.do("DELETE", "/runs/crons/not-a-uuid", nil).status)
	require.Equal(t, 1, count(map[string]any{}))
	require.Equal(t, 204, e.do("DELETE", "/threads/"+tid, nil).status)

	var info struct {
		Flags map[string]bool `json:"flags"`
	}
	e.ok("GET", "/info", nil, &info)
	require.True(t, info.Flags["crons"])
}

func TestCronFiresOnItsThreadAndSurvivesARestart(t *testing.T) {
	for name, newDB := range cronDBs(t) {
		t.Run(name, func(t *testing.T) {
			db := newDB(t)
			clk := newClock()
			first, e := cronProcess(t, db, clk, db.open(t))
			tid := e.newThread(nil)
			var c, gone, stateless cronJSON
			e.ok("POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "* * * * *",
				"input": map[string]any{"topic": "cron"}, "multitask_strategy": "enqueue"}, &c)
			other := e.newThread(nil)
			e.ok("POST", "/threads/"+other+"/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "* * * * *"}, &gone)
			e.ok("POST", "/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "* * * * *", "on_run_completed": "keep",
				"input": map[string]any{"topic": "alone"}, "metadata": map[string]any{"from": "cron"}}, &stateless)
			require.Equal(t, 204, e.do("DELETE", "/runs/crons/"+gone.CronID, nil).status)

			// The process stops before the tick: the next process fires it.
			require.NoError(t, first.Shutdown(context.Background()))
			clk.set(*c.NextRunDate)
			_, e = cronProcess(t, db, clk, db.open(t))
			waitFor(t, "the tick's run ends", func() bool {
				runs := e.runsOn(tid)
				return len(runs) == 1 && runs[0]["status"] == "success"
			})
			var st struct {
				Values map[string]any `json:"values"`
			}
			e.ok("GET", "/threads/"+tid+"/state", nil, &st)
			require.Equal(t, []any{"plan:cron"}, st.Values["log"], "the run ran the cron's input")
			require.Equal(t, c.NextRunDate.Add(time.Minute), e.cron(c.CronID).NextRunDate.UTC(), "the next tick is a minute on")
			require.Empty(t, e.runsOn(other), "a deleted cron does not fire (the crons due at the same time did)")

			var threads []map[string]any
			waitFor(t, "the stateless cron's run ends on a thread of its own, kept", func() bool {
				e.ok("POST", "/threads/search", map[string]any{"limit": 100}, &threads)
				for _, th := range threads {
					if th["thread_id"] != tid && th["thread_id"] != other {
						runs := e.runsOn(th["thread_id"].(string))
						return len(runs) == 1 && runs[0]["status"] == "success"
					}
				}
				return false
			})
		})
	}
}

func TestCronHonoursItsEndTime(t *testing.T) {
	db := sqliteCronDB(t)
	clk := newClock()
	_, e := cronProcess(t, db, clk, db.open(t))
	tid := e.newThread(nil)
	var c cronJSON
	// Ticks at 00:01, 00:02, …; it ends at 00:01:30, after its first.
	e.ok("POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "* * * * *",
		"input": map[string]any{"topic": "once"}, "end_time": "2030-01-01T00:01:30Z"}, &c)
	clk.set(*c.NextRunDate)
	waitFor(t, "the first tick is taken", func() bool { return e.cron(c.CronID).NextRunDate == nil })
	require.Len(t, e.runsOn(tid), 1)

	var late cronJSON
	e.ok("POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "* * * * *",
		"end_time": "2030-01-01T00:00:45Z"}, &late)
	require.Nil(t, late.NextRunDate, "a cron whose end comes before its first tick never fires")
}

// racingBackend is a process's Backend whose FireCron waits until every
// process tried the same tick, so that each tick is raced for by all.
type racingBackend struct {
	server.Backend
	server.CronBackend
	race *tickRace
}

// tickRace records the tries of each tick.
type tickRace struct {
	mu    sync.Mutex
	cond  *sync.Cond
	procs int
	tries map[time.Time][]error
	in    map[time.Time]int
}

func (b racingBackend) FireCron(ctx context.Context, id string, due, next time.Time, run *server.RunRecord, create *server.ThreadRecord) (server.RunRecord, error) {
	r, key := b.race, due.UTC()
	r.mu.Lock()
	r.in[key]++
	r.cond.Broadcast()
	for r.in[key] < r.procs && ctx.Err() == nil {
		r.cond.Wait()
	}
	r.mu.Unlock()
	out, err := b.CronBackend.FireCron(ctx, id, due, next, run, create)
	r.mu.Lock()
	r.tries[key] = append(r.tries[key], err)
	r.cond.Broadcast()
	r.mu.Unlock()
	return out, err
}

func TestCronTwoProcessesFireEachTickOnce(t *testing.T) {
	for name, newDB := range cronDBs(t) {
		t.Run(name, func(t *testing.T) {
			db := newDB(t)
			clk := newClock()
			race := &tickRace{procs: 2, tries: map[time.Time][]error{}, in: map[time.Time]int{}}
			race.cond = sync.NewCond(&race.mu)
			var envs []*env
			for range race.procs {
				b := db.open(t)
				_, e := cronProcess(t, db, clk, racingBackend{Backend: b, CronBackend: b.(server.CronBackend), race: race})
				envs = append(envs, e)
			}
			t.Cleanup(func() { // a failed test may leave a process waiting on the other
				race.mu.Lock()
				race.procs = 0
				race.cond.Broadcast()
				race.mu.Unlock()
			})
			e := envs[0]
			tid := e.newThread(nil)
			var c cronJSON
			e.ok("POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "* * * * *",
				"input": map[string]any{"topic": "tick"}, "multitask_strategy": "enqueue"}, &c)
			const ticks = 5
			due := *c.NextRunDate
			for tick := range ticks {
				clk.set(due)
				waitFor(t, "both processes tried the tick", func() bool {
					race.mu.Lock()
					defer race.mu.Unlock()
					return len(race.tries[due]) >= race.procs
				})
				race.mu.Lock()
				var won int
				for _, err := range race.tries[due] {
					if err == nil {
						won++
					} else {
						require.ErrorIs(t, err, server.ErrTickTaken, "tick %d", tick)
					}
				}
				race.mu.Unlock()
				require.Equal(t, 1, won, "tick %d fired %d times", tick, won)
				due = due.Add(time.Minute)
				require.Equal(t, due, envs[tick%2].cron(c.CronID).NextRunDate.UTC())
			}
			waitFor(t, "the ticks' runs end", func() bool {
				runs := envs[1].runsOn(tid)
				if len(runs) != ticks {
					return false
				}
				for _, r := range runs {
					if r["status"] != "success" {
						return false
					}
				}
				return true
			})
			require.Len(t, e.runsOn(tid), ticks, "one run per tick")
		})
	}
}

func TestOfficialJSClientDrivesCrons(t *testing.T) {
	node, entry := officialClient(t)
	db := sqliteCronDB(t)
	clk := newClock()
	_, e := cronProcess(t, db, clk, db.open(t))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a hung client fails instead of hanging the suite
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/crons.mjs")
	cmd.Env = append(os.Environ(), "API_URL="+e.srv.URL, "API_KEY="+token, "SDK_ENTRY="+entry,
		"LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var out []string
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		line := lines.Text()
		out = append(out, line)
		if due, ok := strings.CutPrefix(line, "crons: due "); ok {
			at, err := time.Parse(time.RFC3339Nano, due)
			require.NoError(t, err, "next_run_date %q", due)
			clk.set(at)
			_, err = io.WriteString(stdin, "ticked\n")
			require.NoError(t, err)
		}
	}
	err = cmd.Wait()
	require.NoError(t, err, "stdout: %s\nstderr: %s", strings.Join(out, "\n"), stderr.String())
	require.Contains(t, out, "crons: ok")
}
