package backendtest

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server"
)

// watcher returns the backend as a [server.RunWatcher], skipping the
// case when it is not one.
func (e *env) watcher() server.RunWatcher {
	e.t.Helper()
	w, ok := e.b.(server.RunWatcher)
	if !ok {
		e.t.Skip("the backend is not a server.RunWatcher")
	}
	return w
}

// wakes watches run id as the server does — a watch made before each
// read, a wake followed by a new watch and a read — while change, made
// once the first watch and read are done, is applied (through the second
// instance when there is one); it fails unless a read shows the change
// (seen) before a generous bound, a bound on a watch that is never woken.
func (e *env) wakes(w server.RunWatcher, id, what string, change func(), seen func() bool) {
	e.t.Helper()
	ch, stop := w.WatchRun(id)
	defer func() { stop() }()
	require.False(e.t, seen(), "%s: seen before the change", what)
	change()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case <-ch:
		case <-timeout:
			e.t.Fatalf("%s: the watch of run %s was not woken", what, id)
		}
		prev := stop
		ch, stop = w.WatchRun(id)
		prev()
		if seen() {
			return
		}
	}
}

var watchCases = []testCase{
	{
		name: "watch-run-wakes-at-its-changes",
		explanation: "a RunWatcher's watch of a run is woken, without a poll of the caller's, once an event was appended " +
			"to the run, once the run finished, once a pending run was cancelled and once its thread was deleted, " +
			"whichever instance made the change",
		run: func(e *env) {
			w := e.watcher()
			th := e.thread(nil)
			r := e.run(th.ID, "enqueue")
			var c *server.Claim
			e.wakes(w, r.ID, "claimed", func() {
				c = e.claim(e.b2, "h2", time.Minute)
				require.NotNil(e.t, c)
			}, func() bool { return e.status(r.ID) == "running" })
			e.wakes(w, r.ID, "an event appended", func() {
				_, err := e.b2.AppendEvent(e.ctx, c, "values", json.RawMessage(`{"x":1}`))
				require.NoError(e.t, err)
			}, func() bool { return len(e.eventNames(r.ID, 0)) == 1 })
			e.wakes(w, r.ID, "finished", func() {
				require.NoError(e.t, e.b2.FinishRun(e.ctx, c, server.RunResult{Status: "success", Result: json.RawMessage(`null`),
					Thread: server.ThreadState{Status: "idle"}}))
			}, func() bool { return e.status(r.ID) == "success" })

			pending := e.run(th.ID, "enqueue")
			e.wakes(w, pending.ID, "a pending run cancelled", func() {
				_, err := e.b2.CancelRun(e.ctx, pending.ID, "test")
				require.NoError(e.t, err)
			}, func() bool { return e.status(pending.ID) == "interrupted" })

			deleted := e.run(th.ID, "enqueue")
			e.wakes(w, deleted.ID, "its thread deleted", func() {
				_, err := e.b2.DeleteThread(e.ctx, th.ID)
				require.NoError(e.t, err)
			}, func() bool {
				_, err := e.b.Run(e.ctx, deleted.ID)
				return errors.Is(err, server.ErrNotFound)
			})
		},
	},
}
