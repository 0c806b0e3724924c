package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// memEnv is a MemoryBackend with a thread and helpers to run runs on it.
type memEnv struct {
	t   *testing.T
	ctx context.Context
	b   *MemoryBackend
	tid string
}

func newMemEnv(t *testing.T, keptRuns int, keptBytes int64) *memEnv {
	e := &memEnv{t: t, ctx: t.Context(), b: newMemoryBackend(keptRuns, keptBytes), tid: newUUID()}
	_, err := e.b.CreateThread(e.ctx, ThreadRecord{ID: e.tid, CreatedAt: time.Now(), Status: statusIdle}, "")
	require.NoError(t, err)
	return e
}

// create queues a run, stream_resumable or not, with the given id.
func (e *memEnv) create(id string, resumable bool) {
	e.t.Helper()
	kw := `{"input":{}}`
	if resumable {
		kw = `{"input":{},"stream_resumable":true}`
	}
	_, err := e.b.CreateRun(e.ctx, RunRecord{ID: id, ThreadID: e.tid, CreatedAt: time.Now(), Status: runPending,
		MultitaskStrategy: "enqueue", GraphID: "g", Kwargs: json.RawMessage(kw)}, nil)
	require.NoError(e.t, err)
}

// finish claims the run id, records "values" events of the given data,
// and finishes it (which records its end).
func (e *memEnv) finish(id string, data ...string) {
	e.t.Helper()
	c, err := e.b.ClaimRun(e.ctx, "h", time.Minute, nil)
	require.NoError(e.t, err)
	require.Equal(e.t, id, c.Run.ID)
	for _, d := range data {
		_, err := e.b.AppendEvent(e.ctx, c, "values", json.RawMessage(d))
		require.NoError(e.t, err)
	}
	require.NoError(e.t, e.b.FinishRun(e.ctx, c, RunResult{Status: runSuccess, Thread: ThreadState{Status: statusIdle}}))
}

func (e *memEnv) events(id string) ([]Event, error) { return e.b.Events(e.ctx, id, 0) }

func TestMemoryBackendDropsTheEventsOfAnEndedRunNoStreamReadsButItsEnd(t *testing.T) {
	e := newMemEnv(t, DefaultKeptRuns, DefaultKeptEventBytes)
	id := newUUID()
	e.create(id, false)
	e.finish(id, `{"a":1}`, `{"a":2}`)
	evs, err := e.events(id)
	require.NoError(t, err)
	require.Equal(t, []Event{{ID: 2, Name: "end", Data: json.RawMessage("null")}}, evs, "the end alone, with its id")
	evs, err = e.b.Events(e.ctx, id, 3)
	require.NoError(t, err)
	require.Empty(t, evs, "nothing after the end")
}

func TestMemoryBackendKeepsTheEventsAStreamHoldsUntilItLetsGo(t *testing.T) {
	e := newMemEnv(t, DefaultKeptRuns, DefaultKeptEventBytes)
	id := newUUID()
	release := e.b.holdEvents(id) // held before the run exists, as a new stream does
	e.create(id, false)
	e.finish(id, `{"a":1}`)
	evs, err := e.events(id)
	require.NoError(t, err)
	require.Len(t, evs, 2, "the stream reads every event of the ended run")
	release()
	evs, err = e.events(id)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, "end", evs[0].Name)
	require.Empty(t, e.b.readers, "no hold is left behind")
}

func TestMemoryBackendBoundsTheEventsOfEndedResumableRunsInBytes(t *testing.T) {
	big := `"` + strings.Repeat("x", 60) + `"`
	size := int64(len("values")+len(big)) + int64(len("end")+len("null"))
	e := newMemEnv(t, DefaultKeptRuns, size*3/2)
	first, second := newUUID(), newUUID()
	e.create(first, true)
	e.finish(first, big)
	evs, err := e.events(first)
	require.NoError(t, err)
	require.Len(t, evs, 2, "kept while within the bound")
	e.create(second, true)
	e.finish(second, big)
	_, err = e.events(first)
	require.True(t, errEventsDropped(err), "got %v", err)
	require.ErrorContains(t, err, "server.WithKeptEventBytes")
	evs, err = e.events(second)
	require.NoError(t, err)
	require.Len(t, evs, 2, "the newest run's events are whole")
	r, err := e.b.Run(e.ctx, first)
	require.NoError(t, err)
	require.Equal(t, runSuccess, r.Status, "the run itself stays")
}

func TestMemoryBackendForgetsTheOldestEndedRunsPastItsBound(t *testing.T) {
	e := newMemEnv(t, 2, DefaultKeptEventBytes)
	var ids []string
	for range 3 {
		id := newUUID()
		e.create(id, true)
		e.finish(id, `{}`)
		ids = append(ids, id)
	}
	_, err := e.b.Run(e.ctx, ids[0])
	require.ErrorIs(t, err, ErrNotFound)
	evs, err := e.events(ids[0])
	require.NoError(t, err)
	require.Empty(t, evs, "its events went with it")
	runs, total, err := e.b.ListRuns(e.ctx, e.tid, "", 10, 0)
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, ids[1:], []string{runs[0].ID, runs[1].ID})
	require.Equal(t, 2, e.b.kept.Len(), "the forgotten run left the runs keeping events")
	require.Equal(t, e.b.keptBytes, 2*int64(len("values{}")+len("endnull")), "and took its bytes with it")
}

func TestMemoryBackendBoundsTheEventsOfResumableRunsOnceNoStreamReadsThem(t *testing.T) {
	e := newMemEnv(t, DefaultKeptRuns, 1)
	id := newUUID()
	release := e.b.holdEvents(id)
	e.create(id, true)
	e.finish(id, `{"a":1}`)
	evs, err := e.events(id)
	require.NoError(t, err)
	require.Equal(t, []string{"values", "end"}, []string{evs[0].Name, evs[1].Name}, "the stream reads every event, past the bound")
	release()
	_, err = e.events(id)
	require.True(t, errEventsDropped(err), "dropped once let go: got %v", err)
	require.Zero(t, e.b.keptBytes)
	require.Zero(t, e.b.kept.Len())
}

func TestMemoryBackendForgetsAnEndedRunAStreamReadsOnlyOnceTheStreamLetsGo(t *testing.T) {
	e := newMemEnv(t, 1, DefaultKeptEventBytes)
	read := newUUID()
	release := e.b.holdEvents(read)
	e.create(read, true)
	e.finish(read, `{"a":1}`)
	later := newUUID()
	e.create(later, true)
	e.finish(later, `{}`)

	_, err := e.b.Run(e.ctx, read)
	require.NoError(t, err, "kept past the bound while a stream reads it")
	evs, err := e.events(read)
	require.NoError(t, err)
	require.Equal(t, []string{"values", "end"}, []string{evs[0].Name, evs[1].Name}, "with every event")
	_, err = e.b.Run(e.ctx, later)
	require.NoError(t, err, "the newer run is kept too")

	release()
	_, err = e.b.Run(e.ctx, read)
	require.ErrorIs(t, err, ErrNotFound, "forgotten once let go")
	runs, total, err := e.b.ListRuns(e.ctx, e.tid, "", 10, 0)
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, later, runs[0].ID)
}
