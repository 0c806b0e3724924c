package backendtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server"
)

var cases = []testCase{
	{
		name:        "thread-create-and-read",
		explanation: "CreateThread stores a thread that Thread returns as stored (times to the microsecond, null values, no interrupts); a second thread with the id fails with ErrExists unless ifExists is do_nothing, which returns the stored one; a missing thread is ErrNotFound",
		run: func(e *env) {
			in := server.ThreadRecord{ID: e.id(0), CreatedAt: e.now, Status: "idle", Metadata: map[string]any{"owner": "ann"}, Config: map[string]any{"c": "d"}}
			_, err := e.b.CreateThread(e.ctx, in, "")
			require.NoError(e.t, err)
			got, err := e.b2.Thread(e.ctx, in.ID)
			require.NoError(e.t, err)
			require.Equal(e.t, in.ID, got.ID)
			require.True(e.t, e.now.Equal(got.CreatedAt), "created_at %v, want %v", got.CreatedAt, e.now)
			require.Equal(e.t, map[string]any{"owner": "ann"}, got.Metadata)
			require.Equal(e.t, map[string]any{"c": "d"}, got.Config)
			require.Equal(e.t, "idle", got.Status)
			require.JSONEq(e.t, `null`, string(got.Values))
			require.JSONEq(e.t, `{}`, string(got.Interrupts))

			dup := in
			dup.Metadata = map[string]any{"owner": "mallory"}
			_, err = e.b.CreateThread(e.ctx, dup, "")
			require.ErrorIs(e.t, err, server.ErrExists)
			kept, err := e.b.CreateThread(e.ctx, dup, "do_nothing")
			require.NoError(e.t, err)
			require.Equal(e.t, "ann", kept.Metadata["owner"], "do_nothing returns the stored thread, unchanged")
			_, err = e.b.Thread(e.ctx, "00000000-0000-4000-8000-ffffffffffff")
			require.ErrorIs(e.t, err, server.ErrNotFound)
		},
	},
	{
		name:        "search-threads",
		explanation: "SearchThreads selects by ids, status and JSON containment of metadata and values (nested objects, numbers, array elements), sorts by the column asked with either direction, pages, and counts all it selects; Limit 0 only counts",
		run: func(e *env) {
			var ts []server.ThreadRecord
			for i := range 4 {
				owner := []string{"ann", "bob"}[i%2]
				ts = append(ts, e.thread(map[string]any{"owner": owner, "n": i, "tags": []any{"a", fmt.Sprint(i)}, "deep": map[string]any{"k": owner}}))
			}
			require.NoError(e.t, e.b.SetThreadState(e.ctx, ts[2].ID, server.ThreadState{Status: "interrupted",
				Values: json.RawMessage(`{"x": 1, "list": [1, 2], "o": {"p": "q"}}`)}))
			search := func(q server.ThreadQuery) ([]string, int) {
				e.t.Helper()
				if q.Limit == 0 {
					q.Limit = 100
				}
				out, total, err := e.b.SearchThreads(e.ctx, q)
				require.NoError(e.t, err)
				return ids(out), total
			}
			asc := func(q server.ThreadQuery) server.ThreadQuery { q.SortBy = "created_at"; return q }
			got, total := search(asc(server.ThreadQuery{Metadata: map[string]any{"owner": "ann"}}))
			require.Equal(e.t, []string{ts[0].ID, ts[2].ID}, got)
			require.Equal(e.t, 2, total)
			got, _ = search(asc(server.ThreadQuery{Metadata: map[string]any{"n": 3}}))
			require.Equal(e.t, []string{ts[3].ID}, got, "numbers compare by value")
			got, _ = search(asc(server.ThreadQuery{Metadata: map[string]any{"tags": []any{"1"}}}))
			require.Equal(e.t, []string{ts[1].ID}, got, "an array contains the elements asked")
			got, _ = search(asc(server.ThreadQuery{Metadata: map[string]any{"deep": map[string]any{"k": "bob"}}}))
			require.Equal(e.t, []string{ts[1].ID, ts[3].ID}, got, "nested objects are contained")
			got, _ = search(asc(server.ThreadQuery{Metadata: map[string]any{"owner": "ann", "n": 1}}))
			require.Empty(e.t, got, "every key must match")
			got, _ = search(asc(server.ThreadQuery{Values: map[string]any{"list": []any{2}, "o": map[string]any{"p": "q"}}}))
			require.Equal(e.t, []string{ts[2].ID}, got)
			got, _ = search(asc(server.ThreadQuery{Status: "interrupted"}))
			require.Equal(e.t, []string{ts[2].ID}, got)
			got, _ = search(asc(server.ThreadQuery{IDs: []string{ts[3].ID, ts[1].ID, "nobody"}}))
			require.Equal(e.t, []string{ts[1].ID, ts[3].ID}, got)
			got, _ = search(server.ThreadQuery{SortBy: "created_at", Desc: true})
			require.Equal(e.t, []string{ts[3].ID, ts[2].ID, ts[1].ID, ts[0].ID}, got)
			got, _ = search(server.ThreadQuery{SortBy: "status"})
			require.Equal(e.t, ts[2].ID, got[3], "idle before interrupted")
			got, total = search(server.ThreadQuery{SortBy: "thread_id", Limit: 2, Offset: 1})
			require.Equal(e.t, []string{ts[1].ID, ts[2].ID}, got)
			require.Equal(e.t, 4, total, "the total counts every thread selected, not the page")
			out, total, err := e.b.SearchThreads(e.ctx, server.ThreadQuery{Metadata: map[string]any{"owner": "bob"}})
			require.NoError(e.t, err)
			require.Empty(e.t, out)
			require.Equal(e.t, 2, total)
		},
	},
	{
		name:        "patch-thread-merges-metadata",
		explanation: "PatchThread merges the keys given into the thread's metadata, replacing those it names and keeping the others; a missing thread is ErrNotFound",
		run: func(e *env) {
			th := e.thread(map[string]any{"a": 1, "b": "old"})
			got, err := e.b.PatchThread(e.ctx, th.ID, map[string]any{"b": "new", "c": true})
			require.NoError(e.t, err)
			require.Equal(e.t, map[string]any{"a": float64(1), "b": "new", "c": true}, normal(got.Metadata))
			read, err := e.b2.Thread(e.ctx, th.ID)
			require.NoError(e.t, err)
			require.Equal(e.t, normal(got.Metadata), normal(read.Metadata))
			_, err = e.b.PatchThread(e.ctx, "00000000-0000-4000-8000-ffffffffffff", map[string]any{"a": 1})
			require.ErrorIs(e.t, err, server.ErrNotFound)
		},
	},
	{
		name:        "set-thread-state",
		explanation: "SetThreadState records values, interrupts and status; nil values or interrupts keep the stored ones; a thread with a pending run stays busy; a missing thread is ErrNotFound",
		run: func(e *env) {
			th := e.thread(nil)
			require.NoError(e.t, e.b.SetThreadState(e.ctx, th.ID, server.ThreadState{Status: "interrupted",
				Values: json.RawMessage(`{"x":1}`), Interrupts: json.RawMessage(`{"task":[{"value":"why"}]}`)}))
			require.NoError(e.t, e.b.SetThreadState(e.ctx, th.ID, server.ThreadState{Status: "idle"}))
			got, err := e.b.Thread(e.ctx, th.ID)
			require.NoError(e.t, err)
			require.Equal(e.t, "idle", got.Status)
			require.JSONEq(e.t, `{"x":1}`, string(got.Values))
			require.JSONEq(e.t, `{"task":[{"value":"why"}]}`, string(got.Interrupts))
			e.run(th.ID, "reject")
			require.NoError(e.t, e.b.SetThreadState(e.ctx, th.ID, server.ThreadState{Status: "idle", Values: json.RawMessage(`{"x":2}`)}))
			require.Equal(e.t, "busy", e.threadStatus(th.ID), "a thread with a pending run stays busy")
			require.ErrorIs(e.t, e.b.SetThreadState(e.ctx, "00000000-0000-4000-8000-ffffffffffff", server.ThreadState{Status: "idle"}), server.ErrNotFound)
		},
	},
	{
		name:        "create-run",
		explanation: "CreateRun stores a pending run (attempt 0, kwargs and metadata as given) and makes its thread busy, recording the graph and assistant in the thread's metadata; a missing thread is ErrNotFound unless create is given, which is stored first",
		run: func(e *env) {
			r := e.newRun("00000000-0000-4000-8000-fffffffffff0", "reject", `{"input":{"x":[1,2]},"stream_mode":["values"]}`)
			_, err := e.b.CreateRun(e.ctx, r, nil)
			require.ErrorIs(e.t, err, server.ErrNotFound)
			_, err = e.b.Run(e.ctx, r.ID)
			require.ErrorIs(e.t, err, server.ErrNotFound, "a refused run is not stored")
			got, err := e.b.CreateRun(e.ctx, r, &server.ThreadRecord{ID: r.ThreadID, CreatedAt: e.now, Metadata: map[string]any{"m": "n"}})
			require.NoError(e.t, err)
			require.Equal(e.t, "pending", got.Status)
			require.Equal(e.t, 0, got.Attempt)
			require.Equal(e.t, "agent", got.GraphID)
			read, err := e.b2.Run(e.ctx, r.ID)
			require.NoError(e.t, err)
			require.Equal(e.t, r.ThreadID, read.ThreadID)
			require.Equal(e.t, "asst", read.AssistantID)
			require.Equal(e.t, "reject", read.MultitaskStrategy)
			require.Equal(e.t, map[string]any{"k": "v"}, read.Metadata)
			require.JSONEq(e.t, string(r.Kwargs), string(read.Kwargs))
			require.True(e.t, e.now.Equal(read.CreatedAt))
			th, err := e.b.Thread(e.ctx, r.ThreadID)
			require.NoError(e.t, err)
			require.Equal(e.t, "busy", th.Status)
			require.Equal(e.t, map[string]any{"m": "n", "graph_id": "agent", "assistant_id": "asst"}, th.Metadata)
		},
	},
	{
		name:        "graph-mismatch",
		explanation: "CreateRun on a thread whose metadata names another graph fails with ErrGraphMismatch and stores nothing",
		run: func(e *env) {
			th := e.thread(map[string]any{"graph_id": "other"})
			r := e.newRun(th.ID, "reject", `{}`)
			_, err := e.b.CreateRun(e.ctx, r, nil)
			require.ErrorIs(e.t, err, server.ErrGraphMismatch)
			require.Equal(e.t, "idle", e.threadStatus(th.ID))
			_, n, err := e.b.ListRuns(e.ctx, th.ID, "", 10, 0)
			require.NoError(e.t, err)
			require.Zero(e.t, n)
		},
	},
	{
		name:        "reject-is-atomic",
		explanation: "of runs created at once with multitask_strategy reject on an idle thread, from both instances, exactly one is stored; the others fail with ErrThreadBusy",
		run: func(e *env) {
			th := e.thread(nil)
			var mu sync.Mutex
			var ok, busy int
			concurrently(8, func(i int) {
				b := []server.Backend{e.b, e.b2}[i%2]
				_, err := b.CreateRun(e.ctx, e.newRun(th.ID, "reject", `{}`), nil)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, server.ErrThreadBusy):
					busy++
				default:
					e.t.Errorf("CreateRun: %v", err)
				}
			})
			require.Equal(e.t, 1, ok)
			require.Equal(e.t, 7, busy)
			_, n, err := e.b.ListRuns(e.ctx, th.ID, "", 10, 0)
			require.NoError(e.t, err)
			require.Equal(e.t, 1, n)
		},
	},
	{
		name:        "interrupt-flags-the-running-run",
		explanation: "a run created with multitask_strategy interrupt flags the thread's running run cancelled (RenewLease returns why) and waits for it to end before it is claimed",
		run: func(e *env) {
			th := e.thread(nil)
			first := e.run(th.ID, "reject")
			c := e.claimRun(first.ID)
			why, err := e.b.RenewLease(e.ctx, c, time.Minute)
			require.NoError(e.t, err)
			require.Empty(e.t, why, "not cancelled yet")
			second := e.run(th.ID, "interrupt")
			why, err = e.b.RenewLease(e.ctx, c, time.Minute)
			require.NoError(e.t, err)
			require.NotEmpty(e.t, why)
			e.noClaim(e.b2)
			e.finish(c, "interrupted")
			require.Equal(e.t, "interrupted", e.status(first.ID))
			e.claimRun(second.ID)
		},
	},
	{
		name:        "rollback-deletes-the-run-and-resets",
		explanation: "a run created with multitask_strategy rollback flags the running run cancelled; when it finishes it is deleted with its events, and the next run's claim carries ResetTo, the checkpoint the rolled-back run started from (nil on claims after no rollback)",
		run: func(e *env) {
			th := e.thread(nil)
			first := e.run(th.ID, "reject")
			c := e.claimRun(first.ID)
			require.Nil(e.t, c.ResetTo)
			require.NoError(e.t, e.b.StartRun(e.ctx, c, "ckpt-1"))
			_, err := e.b.AppendEvent(e.ctx, c, "values", json.RawMessage(`{}`))
			require.NoError(e.t, err)
			second := e.run(th.ID, "rollback")
			why, err := e.b.RenewLease(e.ctx, c, time.Minute)
			require.NoError(e.t, err)
			require.NotEmpty(e.t, why)
			e.finish(c, "interrupted")
			_, err = e.b.Run(e.ctx, first.ID)
			require.ErrorIs(e.t, err, server.ErrNotFound, "the rolled-back run is deleted")
			require.Empty(e.t, e.eventNames(first.ID, 0))
			c2 := e.claimRun(second.ID)
			require.NotNil(e.t, c2.ResetTo)
			require.Equal(e.t, "ckpt-1", *c2.ResetTo)
			e.finish(c2, "success")
			third := e.run(th.ID, "reject")
			require.Nil(e.t, e.claimRun(third.ID).ResetTo, "the rollback point is taken once")
		},
	},
	{
		name:        "interrupt-and-rollback-end-pending-runs",
		explanation: "a run created with multitask_strategy interrupt cancels the thread's pending runs (interrupted, with an end event), one created with rollback deletes them with their events, as LangGraph does; the new run is the one claimed next",
		run: func(e *env) {
			for _, strategy := range []string{"interrupt", "rollback"} {
				th := e.thread(nil)
				first := e.run(th.ID, "reject")
				c := e.claimRun(first.ID)
				queued := e.run(th.ID, "enqueue")
				last := e.run(th.ID, strategy)
				if strategy == "interrupt" {
					require.Equal(e.t, "interrupted", e.status(queued.ID), "the pending run is cancelled")
					require.Equal(e.t, []string{"end"}, e.eventNames(queued.ID, 0))
				} else {
					_, err := e.b.Run(e.ctx, queued.ID)
					require.ErrorIs(e.t, err, server.ErrNotFound, "the pending run is deleted")
				}
				e.finish(c, "interrupted")
				e.claimRun(last.ID)
			}
		},
	},
	{
		name:        "claims-only-served-graphs",
		explanation: "ClaimRun with graphs claims only runs whose thread's graph is one of them, so that a process never claims a run of a graph it does not serve; nil claims any",
		run: func(e *env) {
			older := e.thread(nil)
			first := e.run(older.ID, "reject") // of graph "agent"
			th := e.thread(nil)
			r := e.newRun(th.ID, "reject", `{"input":{"x":1}}`)
			r.GraphID = "other"
			second, err := e.b.CreateRun(e.ctx, r, nil)
			require.NoError(e.t, err)

			c, err := e.b.ClaimRun(e.ctx, "h1", time.Minute, []string{"other", "third"})
			require.NoError(e.t, err)
			require.NotNil(e.t, c)
			require.Equal(e.t, second.ID, c.Run.ID, "the older run is of a graph not served")
			c, err = e.b.ClaimRun(e.ctx, "h2", time.Minute, []string{"third"})
			require.NoError(e.t, err)
			require.Nil(e.t, c)
			c, err = e.b.ClaimRun(e.ctx, "h2", time.Minute, nil)
			require.NoError(e.t, err)
			require.NotNil(e.t, c)
			require.Equal(e.t, first.ID, c.Run.ID)
		},
	},
	{
		name:        "patch-thread-keeps-its-graph",
		explanation: "PatchThread refuses, atomically with the write, a graph_id other than the one a run gave the thread (ErrGraphMismatch), and sets one on a thread that has none",
		run: func(e *env) {
			th := e.thread(nil)
			e.run(th.ID, "reject") // labels the thread with graph "agent"
			_, err := e.b.PatchThread(e.ctx, th.ID, map[string]any{"graph_id": "other"})
			require.ErrorIs(e.t, err, server.ErrGraphMismatch)
			got, err := e.b.PatchThread(e.ctx, th.ID, map[string]any{"graph_id": "agent", "k": "v"})
			require.NoError(e.t, err)
			require.Equal(e.t, "agent", got.Metadata["graph_id"])
			require.Equal(e.t, "v", got.Metadata["k"])
			free := e.thread(nil)
			got, err = e.b.PatchThread(e.ctx, free.ID, map[string]any{"graph_id": "other"})
			require.NoError(e.t, err)
			require.Equal(e.t, "other", got.Metadata["graph_id"])
			_, err = e.b.PatchThread(e.ctx, "00000000-0000-4000-8000-000000000000", map[string]any{"graph_id": "x"})
			require.ErrorIs(e.t, err, server.ErrNotFound)
		},
	},
	{
		name:        "enqueue-order",
		explanation: "runs enqueued on a thread are claimed one at a time, in creation order: the next only once the previous ended",
		run: func(e *env) {
			th := e.thread(nil)
			var runs []server.RunRecord
			for i := range 4 {
				runs = append(runs, e.run(th.ID, []string{"reject", "enqueue"}[min(i, 1)]))
			}
			for _, r := range runs {
				c := e.claimRun(r.ID)
				e.noClaim(e.b2)
				e.finish(c, "success")
			}
			e.noClaim(e.b)
			require.Equal(e.t, "idle", e.threadStatus(th.ID))
		},
	},
	{
		name:        "claims-are-exclusive",
		explanation: "claimers racing on both instances never get one run twice, nor two runs of one thread at once: of 10 threads of 2 runs each, exactly each thread's first run is claimed",
		run: func(e *env) {
			want := map[string]string{} // run → thread
			for range 10 {
				th := e.thread(nil)
				r := e.run(th.ID, "reject")
				e.run(th.ID, "enqueue")
				want[r.ID] = th.ID
			}
			var mu sync.Mutex
			claimed := map[string]string{}
			concurrently(8, func(h int) {
				b := []server.Backend{e.b, e.b2}[h%2]
				for {
					c, err := b.ClaimRun(e.ctx, fmt.Sprintf("h%d", h), time.Minute, nil)
					if err != nil {
						e.t.Errorf("ClaimRun: %v", err)
						return
					}
					if c == nil {
						return
					}
					mu.Lock()
					if _, dup := claimed[c.Run.ID]; dup {
						e.t.Errorf("run %s claimed twice", c.Run.ID)
					}
					claimed[c.Run.ID] = c.Run.ThreadID
					mu.Unlock()
				}
			})
			require.Equal(e.t, want, claimed)
		},
	},
	{
		name:        "claim-takes-a-lease",
		explanation: "a claim makes the run running, attempt 1, held by the claimer; a live lease is not taken over by another claimer",
		run: func(e *env) {
			th := e.thread(nil)
			r := e.run(th.ID, "reject")
			c := e.claimRun(r.ID)
			require.Equal(e.t, 1, c.Run.Attempt)
			require.Equal(e.t, "running", c.Run.Status)
			require.Equal(e.t, "h1", c.Holder)
			require.JSONEq(e.t, `{"input":{"x":1}}`, string(c.Run.Kwargs))
			e.noClaim(e.b2)
			require.Equal(e.t, "running", e.status(r.ID))
		},
	},
	{
		name:        "expired-lease-is-taken-over",
		explanation: "once a claim's lease expires unrenewed, another claimer takes the run over with a higher attempt",
		run: func(e *env) {
			th := e.thread(nil)
			r := e.run(th.ID, "reject")
			stale, fresh := e.takeOver(r.ID)
			require.Equal(e.t, r.ID, fresh.Run.ID)
			require.Equal(e.t, "h2", fresh.Holder)
			require.Equal(e.t, stale.Run.Attempt+1, fresh.Run.Attempt)
		},
	},
	{
		name:        "lost-lease-refuses-every-write",
		explanation: "a holder whose run was taken over is refused with ErrLeaseLost on RenewLease, StartRun, AppendEvent, ReleaseRun and FinishRun, and changes nothing; the new holder's writes succeed",
		run: func(e *env) {
			th := e.thread(nil)
			r := e.run(th.ID, "reject")
			stale, fresh := e.takeOver(r.ID)
			_, err := e.b.RenewLease(e.ctx, stale, time.Minute)
			require.ErrorIs(e.t, err, server.ErrLeaseLost)
			require.ErrorIs(e.t, e.b.StartRun(e.ctx, stale, "x"), server.ErrLeaseLost)
			_, err = e.b.AppendEvent(e.ctx, stale, "values", json.RawMessage(`{"stale":true}`))
			require.ErrorIs(e.t, err, server.ErrLeaseLost)
			require.ErrorIs(e.t, e.b.ReleaseRun(e.ctx, stale), server.ErrLeaseLost)
			require.ErrorIs(e.t, e.b.FinishRun(e.ctx, stale, server.RunResult{Status: "error", Thread: server.ThreadState{Status: "error"}}), server.ErrLeaseLost)
			require.Equal(e.t, "running", e.status(r.ID))
			require.Empty(e.t, e.eventNames(r.ID, 0))
			e.noClaim(e.b)

			id, err := e.b2.AppendEvent(e.ctx, fresh, "values", json.RawMessage(`null`))
			require.NoError(e.t, err)
			require.Zero(e.t, id)
			require.NoError(e.t, e.b2.FinishRun(e.ctx, fresh, server.RunResult{Status: "success", Result: json.RawMessage(`{"ok":true}`), Thread: server.ThreadState{Status: "idle"}}))
			evs, err := e.b.Events(e.ctx, r.ID, 1)
			require.NoError(e.t, err)
			require.Equal(e.t, []server.Event{{ID: 1, Name: "end", Data: json.RawMessage("null")}}, evs, "the new holder's end, once")
			got, err := e.b.Run(e.ctx, r.ID)
			require.NoError(e.t, err)
			require.Equal(e.t, "success", got.Status)
			require.JSONEq(e.t, `{"ok":true}`, string(got.Result))
			require.Equal(e.t, "idle", e.threadStatus(th.ID))
		},
	},
	{
		name:        "lease-fence-counts-attempts",
		explanation: "a claim is fenced by its attempt, not only its holder's name: a holder that takes its own expired run over again (a restarted process with the same name) makes its earlier claim lost",
		run: func(e *env) {
			th := e.thread(nil)
			r := e.run(th.ID, "reject")
			stale := e.claim(e.b, "same", time.Millisecond)
			require.NotNil(e.t, stale)
			var fresh *server.Claim
			e.eventually("the lease expires and its holder takes the run again", func() bool {
				fresh = e.claim(e.b2, "same", time.Minute)
				return fresh != nil
			})
			require.Equal(e.t, r.ID, fresh.Run.ID)
			require.Equal(e.t, 2, fresh.Run.Attempt)
			_, err := e.b.RenewLease(e.ctx, stale, time.Minute)
			require.ErrorIs(e.t, err, server.ErrLeaseLost)
			_, err = e.b.AppendEvent(e.ctx, stale, "values", json.RawMessage(`{}`))
			require.ErrorIs(e.t, err, server.ErrLeaseLost)
			require.ErrorIs(e.t, e.b.FinishRun(e.ctx, stale, server.RunResult{Status: "error", Thread: server.ThreadState{Status: "error"}}), server.ErrLeaseLost)
			_, err = e.b2.RenewLease(e.ctx, fresh, time.Minute)
			require.NoError(e.t, err)
		},
	},
	{
		name:        "release-hands-the-run-on-at-once",
		explanation: "ReleaseRun leaves the run running but claimable at once, by another holder, with a higher attempt; the releaser's claim is then lost",
		run: func(e *env) {
			th := e.thread(nil)
			r := e.run(th.ID, "reject")
			c := e.claimRun(r.ID)
			require.NoError(e.t, e.b.ReleaseRun(e.ctx, c))
			require.Equal(e.t, "running", e.status(r.ID))
			next := e.claim(e.b2, "h2", time.Minute)
			require.NotNil(e.t, next)
			require.Equal(e.t, r.ID, next.Run.ID)
			require.Equal(e.t, 2, next.Run.Attempt)
			_, err := e.b.RenewLease(e.ctx, c, time.Minute)
			require.ErrorIs(e.t, err, server.ErrLeaseLost)
		},
	},
	{
		name:        "cancel-pending-run",
		explanation: "CancelRun ends a pending run interrupted at once, with an end event; it is never claimed, and its thread is idle again",
		run: func(e *env) {
			th := e.thread(nil)
			r := e.run(th.ID, "reject")
			got, err := e.b2.CancelRun(e.ctx, r.ID, "cancelled by a test")
			require.NoError(e.t, err)
			require.Equal(e.t, "interrupted", got.Status)
			require.Equal(e.t, []string{"end"}, e.eventNames(r.ID, 0))
			require.Equal(e.t, "idle", e.threadStatus(th.ID))
			e.noClaim(e.b)
			_, err = e.b.CancelRun(e.ctx, "00000000-0000-4000-9000-ffffffffffff", "x")
			require.ErrorIs(e.t, err, server.ErrNotFound)
		},
	},
	{
		name:        "cancel-running-run-sets-the-flag",
		explanation: "CancelRun of a running run leaves it running with the cancel flag that RenewLease returns (the first reason stays); an ended run is left as it is",
		run: func(e *env) {
			th := e.thread(nil)
			r := e.run(th.ID, "reject")
			c := e.claimRun(r.ID)
			got, err := e.b2.CancelRun(e.ctx, r.ID, "first reason")
			require.NoError(e.t, err)
			require.Equal(e.t, "running", got.Status)
			_, err = e.b2.CancelRun(e.ctx, r.ID, "second reason")
			require.NoError(e.t, err)
			why, err := e.b.RenewLease(e.ctx, c, time.Minute)
			require.NoError(e.t, err)
			require.Equal(e.t, "first reason", why)
			e.finish(c, "interrupted")
			got, err = e.b.CancelRun(e.ctx, r.ID, "late")
			require.NoError(e.t, err)
			require.Equal(e.t, "interrupted", got.Status)
			require.JSONEq(e.t, `{"done":true}`, string(got.Result), "an ended run is left as it is")
		},
	},
	{
		name:        "dead-cancelled-run-ends-without-running-again",
		explanation: "a cancelled run whose lease expired (its process died) is ended interrupted, with an end event, by the next claim instead of being handed out again, and its thread's next run is claimed",
		run: func(e *env) {
			th := e.thread(nil)
			r := e.run(th.ID, "reject")
			c := e.claim(e.b, "h1", time.Millisecond)
			require.NotNil(e.t, c)
			_, err := e.b.CancelRun(e.ctx, r.ID, "cancelled")
			require.NoError(e.t, err)
			next := e.run(th.ID, "enqueue")
			var got *server.Claim
			e.eventually("the dead run's lease expires", func() bool {
				got = e.claim(e.b2, "h2", time.Minute)
				return got != nil
			})
			require.Equal(e.t, next.ID, got.Run.ID)
			require.Equal(e.t, "interrupted", e.status(r.ID))
			require.Equal(e.t, []string{"end"}, e.eventNames(r.ID, 0))
		},
	},
	{
		name:        "delete-thread-with-a-running-run",
		explanation: "DeleteThread deletes the thread and its ended and pending runs, flags its running run cancelled and returns its id; that run's FinishRun deletes it",
		run: func(e *env) {
			th := e.thread(nil)
			done := e.run(th.ID, "reject")
			e.finish(e.claimRun(done.ID), "success")
			running := e.run(th.ID, "reject")
			c := e.claimRun(running.ID)
			queued := e.run(th.ID, "enqueue")
			got, err := e.b2.DeleteThread(e.ctx, th.ID)
			require.NoError(e.t, err)
			require.Equal(e.t, []string{running.ID}, got)
			_, err = e.b.Thread(e.ctx, th.ID)
			require.ErrorIs(e.t, err, server.ErrNotFound)
			for _, id := range []string{done.ID, queued.ID} {
				_, err = e.b.Run(e.ctx, id)
				require.ErrorIs(e.t, err, server.ErrNotFound)
			}
			why, err := e.b.RenewLease(e.ctx, c, time.Minute)
			require.NoError(e.t, err)
			require.NotEmpty(e.t, why)
			e.noClaim(e.b)
			e.finish(c, "interrupted")
			_, err = e.b.Run(e.ctx, running.ID)
			require.ErrorIs(e.t, err, server.ErrNotFound)
			_, err = e.b.DeleteThread(e.ctx, th.ID)
			require.ErrorIs(e.t, err, server.ErrNotFound)
		},
	},
	{
		name:        "delete-run",
		explanation: "DeleteRun deletes an ended run and its events; a pending or running run fails with ErrThreadBusy, a missing one with ErrNotFound",
		run: func(e *env) {
			th := e.thread(nil)
			r := e.run(th.ID, "reject")
			require.ErrorIs(e.t, e.b.DeleteRun(e.ctx, r.ID), server.ErrThreadBusy)
			c := e.claimRun(r.ID)
			require.ErrorIs(e.t, e.b.DeleteRun(e.ctx, r.ID), server.ErrThreadBusy)
			_, err := e.b.AppendEvent(e.ctx, c, "values", json.RawMessage(`null`))
			require.NoError(e.t, err)
			e.finish(c, "success")
			require.NoError(e.t, e.b2.DeleteRun(e.ctx, r.ID))
			_, err = e.b.Run(e.ctx, r.ID)
			require.ErrorIs(e.t, err, server.ErrNotFound)
			require.Empty(e.t, e.eventNames(r.ID, 0))
			require.ErrorIs(e.t, e.b.DeleteRun(e.ctx, r.ID), server.ErrNotFound)
		},
	},
	{
		name:        "events-in-order-from-an-offset",
		explanation: "AppendEvent numbers a run's events 0, 1, 2…; Events returns those from an offset, oldest first, with their data, on either instance, and nothing of other runs",
		run: func(e *env) {
			th, other := e.thread(nil), e.thread(nil)
			r := e.run(th.ID, "reject")
			o := e.run(other.ID, "reject")
			c := e.claimRun(r.ID)
			oc := e.claim(e.b, "h1", time.Minute)
			require.Equal(e.t, o.ID, oc.Run.ID)
			for i := range 5 {
				id, err := e.b.AppendEvent(e.ctx, c, fmt.Sprintf("e%d", i), json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)))
				require.NoError(e.t, err)
				require.Equal(e.t, i, id)
				_, err = e.b.AppendEvent(e.ctx, oc, "other", json.RawMessage(`1`))
				require.NoError(e.t, err)
			}
			evs, err := e.b2.Events(e.ctx, r.ID, 3)
			require.NoError(e.t, err)
			require.Len(e.t, evs, 2)
			for i, ev := range evs {
				require.Equal(e.t, 3+i, ev.ID)
				require.Equal(e.t, fmt.Sprintf("e%d", 3+i), ev.Name)
				require.JSONEq(e.t, fmt.Sprintf(`{"i":%d}`, 3+i), string(ev.Data))
			}
			require.Equal(e.t, []string{"e0", "e1", "e2", "e3", "e4"}, e.eventNames(r.ID, 0))
			require.Empty(e.t, e.eventNames(r.ID, 5))
		},
	},
	{
		name:        "finish-run-ends-the-stream",
		explanation: "FinishRun appends one \"end\" event after the run's events (after the \"error\" event RunResult.Error gives), in the same change that ends the run: the end is the stream's last event, read on either instance with the run ended",
		run: func(e *env) {
			th := e.thread(nil)
			r := e.run(th.ID, "reject")
			c := e.claimRun(r.ID)
			_, err := e.b.AppendEvent(e.ctx, c, "values", json.RawMessage(`{"v":1}`))
			require.NoError(e.t, err)
			require.Equal(e.t, []string{"values"}, e.eventNames(r.ID, 0), "no end while the run runs")
			e.finish(c, "success")
			evs, err := e.b2.Events(e.ctx, r.ID, 1)
			require.NoError(e.t, err)
			require.Len(e.t, evs, 1)
			require.Equal(e.t, server.Event{ID: 1, Name: "end", Data: json.RawMessage("null")}, evs[0])
			require.Equal(e.t, "success", e.status(r.ID))

			// A failed run's error comes with its end, before it (a
			// resumable run: a MemoryBackend keeps its events).
			r, err = e.b.CreateRun(e.ctx, e.newRun(th.ID, "reject", `{"input":{},"stream_resumable":true}`), nil)
			require.NoError(e.t, err)
			c = e.claimRun(r.ID)
			require.NoError(e.t, e.b.FinishRun(e.ctx, c, server.RunResult{Status: "error", Result: json.RawMessage(`{"__error__":{"error":"E"}}`),
				Thread: server.ThreadState{Status: "error"}, Error: json.RawMessage(`{"error":"E","message":"m"}`)}))
			evs, err = e.b2.Events(e.ctx, r.ID, 0)
			require.NoError(e.t, err)
			require.Equal(e.t, []server.Event{{ID: 0, Name: "error", Data: json.RawMessage(`{"error":"E","message":"m"}`)},
				{ID: 1, Name: "end", Data: json.RawMessage("null")}}, evs)
			require.Equal(e.t, "error", e.status(r.ID))
			require.Equal(e.t, "error", e.threadStatus(th.ID))
		},
	},
	{
		name:        "finish-run-updates-the-thread",
		explanation: "FinishRun records the run's status and result and the thread's values, interrupts and status (busy while another run is queued); DropThread deletes the thread and keeps the run",
		run: func(e *env) {
			th := e.thread(nil)
			r := e.run(th.ID, "reject")
			c := e.claimRun(r.ID)
			next := e.run(th.ID, "enqueue")
			require.NoError(e.t, e.b.FinishRun(e.ctx, c, server.RunResult{Status: "success", Result: json.RawMessage(`{"v":1}`),
				Thread: server.ThreadState{Status: "interrupted", Values: json.RawMessage(`{"v":1}`), Interrupts: json.RawMessage(`{"t":[]}`)}}))
			got, err := e.b2.Thread(e.ctx, th.ID)
			require.NoError(e.t, err)
			require.Equal(e.t, "busy", got.Status, "the queued run keeps the thread busy")
			require.JSONEq(e.t, `{"v":1}`, string(got.Values))
			require.JSONEq(e.t, `{"t":[]}`, string(got.Interrupts))
			c = e.claimRun(next.ID)
			require.NoError(e.t, e.b.FinishRun(e.ctx, c, server.RunResult{Status: "error", Result: json.RawMessage(`{"__error__":{}}`),
				Thread: server.ThreadState{Status: "error"}}))
			require.Equal(e.t, "error", e.threadStatus(th.ID))
			require.Equal(e.t, "error", e.status(next.ID))

			stateless := e.thread(nil)
			sr := e.run(stateless.ID, "reject")
			c = e.claimRun(sr.ID)
			require.NoError(e.t, e.b.FinishRun(e.ctx, c, server.RunResult{Status: "success", DropThread: true}))
			_, err = e.b.Thread(e.ctx, stateless.ID)
			require.ErrorIs(e.t, err, server.ErrNotFound)
			require.Equal(e.t, "success", e.status(sr.ID))
		},
	},
	{
		name:        "list-runs",
		explanation: "ListRuns returns a thread's runs in creation order, of one status or all, paged, with the count of all it selects",
		run: func(e *env) {
			th, other := e.thread(nil), e.thread(nil)
			var all []server.RunRecord
			for i := range 4 {
				all = append(all, e.run(th.ID, []string{"reject", "enqueue"}[min(i, 1)]))
			}
			e.run(other.ID, "reject")
			e.finish(e.claimRun(all[0].ID), "success")
			out, total, err := e.b2.ListRuns(e.ctx, th.ID, "", 10, 0)
			require.NoError(e.t, err)
			require.Equal(e.t, runIDs(all), runIDs(out))
			require.Equal(e.t, 4, total)
			out, total, err = e.b.ListRuns(e.ctx, th.ID, "pending", 2, 1)
			require.NoError(e.t, err)
			require.Equal(e.t, []string{all[2].ID, all[3].ID}, runIDs(out))
			require.Equal(e.t, 3, total)
			out, total, err = e.b.ListRuns(e.ctx, th.ID, "success", 10, 0)
			require.NoError(e.t, err)
			require.Equal(e.t, []string{all[0].ID}, runIDs(out))
			require.Equal(e.t, 1, total)
		},
	},
	{
		name:        "kwargs-of-any-shape-do-not-block-the-queue",
		explanation: "a run whose kwargs are JSON of the wrong shape is stored and handed to its claimer verbatim (the server fails it clearly), and once it ends the thread's next run is claimed",
		run: func(e *env) {
			th := e.thread(nil)
			bad, err := e.b.CreateRun(e.ctx, e.newRun(th.ID, "reject", `{"stream_mode": 42, "config": "nope"}`), nil)
			require.NoError(e.t, err)
			good := e.run(th.ID, "enqueue")
			c := e.claimRun(bad.ID)
			require.JSONEq(e.t, `{"stream_mode": 42, "config": "nope"}`, string(c.Run.Kwargs))
			require.NoError(e.t, e.b.FinishRun(e.ctx, c, server.RunResult{Status: "error", Result: json.RawMessage(`{"__error__":{"error":"ValidationError"}}`),
				Thread: server.ThreadState{Status: "error"}}))
			e.claimRun(good.ID)
		},
	},
	{
		name:         "second-instance-shares-the-queue",
		explanation:  "two instances on one database are two processes: a thread and run created on one are claimed on the other, which records events the first reads",
		twoInstances: true,
		run: func(e *env) {
			th, err := e.b.CreateThread(e.ctx, server.ThreadRecord{ID: e.id(0), CreatedAt: e.now, Status: "idle"}, "")
			require.NoError(e.t, err)
			r := e.run(th.ID, "reject")
			c := e.claim(e.b2, "p2", time.Minute)
			require.NotNil(e.t, c)
			require.Equal(e.t, r.ID, c.Run.ID)
			e.noClaim(e.b)
			_, err = e.b2.AppendEvent(e.ctx, c, "values", json.RawMessage(`{"a":1}`))
			require.NoError(e.t, err)
			require.Equal(e.t, []string{"values"}, e.eventNames(r.ID, 0))
			require.NoError(e.t, e.b2.FinishRun(e.ctx, c, server.RunResult{Status: "success", Thread: server.ThreadState{Status: "idle"}}))
			require.Equal(e.t, "success", e.status(r.ID))
		},
	},
}

// normal returns m as its JSON decodes, so that numbers compare.
func normal(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}
