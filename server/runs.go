package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/internal/backoff"
)

// Run statuses.
const (
	runPending     = "pending"
	runRunning     = "running"
	runSuccess     = "success"
	runError       = "error"
	runInterrupted = "interrupted"
)

// run is the API's Run, with its event log.
type run struct {
	ID                string         `json:"run_id"`
	ThreadID          string         `json:"thread_id"`
	AssistantID       string         `json:"assistant_id"`
	CreatedAt         time.Time      `json:"created_at"`
	UpdatedAt         time.Time      `json:"updated_at"`
	Status            string         `json:"status"`
	Metadata          map[string]any `json:"metadata"`
	MultitaskStrategy string         `json:"multitask_strategy"`
	Kwargs            map[string]any `json:"kwargs"`

	graph  graphAdapter
	params runParams
	thread *thread
	cancel context.CancelCauseFunc // set once running
	// cancelled says why the run was cancelled ("" if it was not).
	cancelled string
	// stateless runs were made on a thread of their own; temporary ones
	// delete it when they end.
	stateless, temporary bool
	// rollback: the run is cancelled and forgotten, and the thread's next
	// run starts from startCheckpoint, the thread's latest checkpoint
	// when this run started ("" for none).
	rollback        bool
	startCheckpoint string
	// cancelOnDisconnect: the stream that created it cancels it when its
	// client goes away (on_disconnect: cancel).
	cancelOnDisconnect bool
	// resumable runs (stream_resumable) keep their events once they
	// ended, for joins with Last-Event-ID; the others drop them when the
	// run ended and no stream reads them.
	resumable bool
	readers   int
	// created is the run's JSON when it was made.
	created []byte

	events     []sseEvent
	eventBytes int64 // of the events' data
	// eventsDropped: the run was resumable, and its events were dropped
	// past the server's WithKeptEventBytes.
	eventsDropped bool
	changed       chan struct{} // closed and replaced when events grow or the run ends
	done          chan struct{} // closed when the run has ended
	lastValues    json.RawMessage
	errData       *runErrorData
}

// sseEvent is one event of a run's stream.
type sseEvent struct {
	name string
	data json.RawMessage
}

type runErrorData struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// runCreate is the API's RunCreate body.
type runCreate struct {
	AssistantID string          `json:"assistant_id"`
	Input       json.RawMessage `json:"input"`
	Command     *commandBody    `json:"command"`
	Config      struct {
		RecursionLimit *int `json:"recursion_limit"` // nil: the graph's
	} `json:"config"`
	Metadata          map[string]any  `json:"metadata"`
	CheckpointID      checkpointArg   `json:"checkpoint_id"`
	Checkpoint        checkpointArg   `json:"checkpoint"`
	StreamMode        json.RawMessage `json:"stream_mode"`
	StreamSubgraphs   bool            `json:"stream_subgraphs"`
	StreamResumable   bool            `json:"stream_resumable"`
	OnDisconnect      string          `json:"on_disconnect"`
	OnCompletion      string          `json:"on_completion"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	IfNotExists       string          `json:"if_not_exists"`
	InterruptBefore   json.RawMessage `json:"interrupt_before"`
	InterruptAfter    json.RawMessage `json:"interrupt_after"`
	AfterSeconds      float64         `json:"after_seconds"`
	Webhook           string          `json:"webhook"`
}

// recursionLimit is the run's recursion limit, 0 for the graph's.
func (b *runCreate) recursionLimit() int {
	if l := b.Config.RecursionLimit; l != nil {
		return *l
	}
	return 0
}

// supportedModes are the stream modes the server streams.
var supportedModes = []string{"values", "updates", "custom", "messages", "messages-tuple", "tasks", "checkpoints", "debug"}

func parseModes(raw json.RawMessage) (map[string]bool, []string, error) {
	var list []string
	if b := bytes.TrimSpace(raw); len(b) == 0 || string(b) == "null" {
		list = []string{"values"}
	} else {
		var one string
		if json.Unmarshal(b, &one) == nil {
			list = []string{one}
		} else if err := json.Unmarshal(b, &list); err != nil {
			return nil, nil, errorf(http.StatusUnprocessableEntity, "stream_mode must be a string or a list of strings")
		}
	}
	modes := map[string]bool{}
	for _, m := range list {
		if m == "events" {
			return nil, nil, errorf(http.StatusUnprocessableEntity, "stream_mode \"events\" (LangChain's astream_events) is not supported by this server: use \"messages-tuple\" for model tokens, \"updates\" or \"tasks\" for node starts and ends, \"debug\" for both (supported: %v)", supportedModes)
		}
		if !slices.Contains(supportedModes, m) {
			return nil, nil, errorf(http.StatusUnprocessableEntity, "stream_mode %q is not supported by this server (supported: %v)", m, supportedModes)
		}
		modes[m] = true
	}
	return modes, list, nil
}

func parseNodes(raw json.RawMessage, field string) ([]string, error) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(b, &one) == nil {
		if one != "*" {
			return nil, errorf(http.StatusUnprocessableEntity, "%s must be \"*\" or a list of node names", field)
		}
		return []string{"*"}, nil
	}
	list := []string{} // given, even empty: not nil
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "%s must be \"*\" or a list of node names", field)
	}
	return list, nil
}

// errStrategy is the reply to a run refused by the reject strategy.
var errStrategy = errorf(http.StatusConflict, "Thread is already running a task. Wait for it to finish or choose a different multitask strategy.")

// runSpec is a validated RunCreate body, with the run's thread and graph.
type runSpec struct {
	stateless bool
	tid       string
	body      runCreate
	modes     map[string]bool
	modeList  []string
	before    []string
	after     []string
	strategy  string
	assistant *assistant
}

// parseRun reads and validates the RunCreate body of r, for the thread of
// r's path (a new one for the stateless routes).
func (s *Server) parseRun(r *http.Request) (*runSpec, error) {
	sp := &runSpec{stateless: r.PathValue("tid") == "", tid: newUUID()}
	if !sp.stateless {
		var err error
		if sp.tid, err = threadID(r); err != nil {
			return nil, err
		}
	}
	body := &sp.body
	if err := decodeBody(r, body); err != nil {
		return nil, err
	}
	var err error
	if sp.modes, sp.modeList, err = parseModes(body.StreamMode); err != nil {
		return nil, err
	}
	if body.Webhook != "" || body.AfterSeconds != 0 {
		return nil, errorf(http.StatusUnprocessableEntity, "webhook and after_seconds are not supported by this server yet")
	}
	if sp.before, err = parseNodes(body.InterruptBefore, "interrupt_before"); err != nil {
		return nil, err
	}
	if sp.after, err = parseNodes(body.InterruptAfter, "interrupt_after"); err != nil {
		return nil, err
	}
	sp.strategy = cmp.Or(body.MultitaskStrategy, "reject")
	switch sp.strategy {
	case "reject", "enqueue", "interrupt", "rollback":
	default:
		return nil, errorf(http.StatusUnprocessableEntity, "multitask_strategy must be reject, interrupt, rollback or enqueue")
	}
	if body.OnDisconnect != "" && body.OnDisconnect != "cancel" && body.OnDisconnect != "continue" {
		return nil, errorf(http.StatusUnprocessableEntity, "on_disconnect must be cancel or continue")
	}
	if body.OnCompletion != "" && body.OnCompletion != "delete" && body.OnCompletion != "keep" {
		return nil, errorf(http.StatusUnprocessableEntity, "on_completion must be delete or keep")
	}
	if body.AssistantID == "" {
		return nil, errorf(http.StatusUnprocessableEntity, "assistant_id is required")
	}
	if l := body.Config.RecursionLimit; l != nil && *l <= 0 {
		return nil, errorf(http.StatusUnprocessableEntity, "config.recursion_limit must be at least 1 (got %d)", *l)
	}

	if body.Command != nil && body.Input != nil && string(bytes.TrimSpace(body.Input)) != "null" {
		return nil, errorf(http.StatusUnprocessableEntity, "give input or command, not both")
	}
	// A run from a checkpoint the thread does not have is a bad request,
	// not a run that fails (checked before the lock: it reads the saver).
	if cp := string(cmp.Or(body.CheckpointID, body.Checkpoint)); cp != "" && s.cfg.saver != nil {
		_, err := s.cfg.saver.Get(r.Context(), checkpoint.Ref{ThreadID: sp.tid, ID: cp})
		switch {
		case errors.Is(err, checkpoint.ErrNotFound):
			return nil, errorf(http.StatusNotFound, "thread %s has no checkpoint %q", sp.tid, cp)
		case err != nil:
			return nil, errorf(http.StatusInternalServerError, "reading checkpoint %q of thread %s: %v", cp, sp.tid, err)
		}
	}
	if s.cfg.backend != nil {
		// Reading an assistant may read the Backend: not under s.mu.
		if sp.assistant, err = s.runAssistant(r.Context(), body.AssistantID); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errorf(http.StatusServiceUnavailable, "the server is shutting down")
	}
	if sp.assistant == nil {
		if sp.assistant, err = s.resolveAssistant(body.AssistantID); err != nil {
			return nil, err
		}
	}
	g := s.cfg.graphs[sp.assistant.GraphID]
	if err := g.validate(body.Input, body.Command); err != nil {
		return nil, err
	}
	if err := checkNodes(g, "interrupt_before", sp.before); err != nil {
		return nil, err
	}
	if err := checkNodes(g, "interrupt_after", sp.after); err != nil {
		return nil, err
	}
	return sp, nil
}

// checkpointMetadata is the metadata the run's checkpoints carry: the
// graph, assistant and thread, and the run's scalar metadata.
func checkpointMetadata(graphID, assistantID, tid string, runMD map[string]any) map[string]any {
	md := map[string]any{"graph_id": graphID, "assistant_id": assistantID, "thread_id": tid}
	for k, v := range runMD { // checkpoints keep scalar metadata
		switch v.(type) {
		case string, float64, bool:
			md[k] = v
		}
	}
	return md
}

// newRun validates body and creates a run on the thread of r's path,
// starting it or queueing it as its multitask strategy says.
// A streaming request counts as a reader of the run's events from the
// start, so that none is dropped before it reads them.
func (s *Server) newRun(r *http.Request, streaming bool) (*run, error) {
	sp, err := s.parseRun(r)
	if err != nil {
		return nil, err
	}
	stateless, tid, body, strategy, a := sp.stateless, sp.tid, &sp.body, sp.strategy, sp.assistant
	modes, modeList, before, after := sp.modes, sp.modeList, sp.before, sp.after

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errorf(http.StatusServiceUnavailable, "the server is shutting down")
	}
	t, ok := s.threads[tid]
	if !ok {
		if body.IfNotExists != "create" && !stateless {
			return nil, errorf(http.StatusNotFound, "Thread with ID %s not found", tid)
		}
		t = s.newThread(tid, map[string]any{})
	}
	if g, ok := t.Metadata["graph_id"].(string); ok && g != a.GraphID {
		return nil, errorf(http.StatusConflict, "thread %s holds the state of graph %q, not %q", tid, g, a.GraphID)
	}
	if t.updating {
		return nil, errorf(http.StatusConflict, "Thread is busy: its state is being updated")
	}
	busy := t.active != nil || len(t.queue) > 0
	if busy && strategy == "reject" {
		return nil, errStrategy
	}
	now := s.cfg.now()
	rn := &run{
		ID: newUUID(), ThreadID: tid, AssistantID: a.ID, CreatedAt: now, UpdatedAt: now, Status: runPending,
		Metadata: normalizeMap(body.Metadata), MultitaskStrategy: strategy,
		graph: s.cfg.graphs[a.GraphID], thread: t, cancelOnDisconnect: body.OnDisconnect == "cancel",
		stateless: stateless, temporary: stateless && body.OnCompletion != "keep",
		resumable: body.StreamResumable,
		changed:   make(chan struct{}), done: make(chan struct{}),
	}
	rn.Kwargs = map[string]any{
		"input": body.Input, "command": body.Command, "stream_mode": modeList,
		"interrupt_before": before, "interrupt_after": after,
		"config": map[string]any{"configurable": map[string]any{"thread_id": tid, "run_id": rn.ID, "graph_id": a.GraphID, "assistant_id": a.ID}},
	}
	md := checkpointMetadata(a.GraphID, a.ID, tid, rn.Metadata)
	rn.params = runParams{
		thread: tid, runID: rn.ID, checkpointID: string(cmp.Or(body.CheckpointID, body.Checkpoint)),
		input: body.Input, command: body.Command, modes: modes, subgraphs: body.StreamSubgraphs,
		before: before, after: after,
		metadata: md, recursionLimit: body.recursionLimit(),
	}
	t.Metadata["graph_id"] = a.GraphID
	t.Metadata["assistant_id"] = a.ID
	t.Status = statusBusy
	t.UpdatedAt = now
	t.runs = append(t.runs, rn)
	s.runs[rn.ID] = rn
	if streaming {
		rn.readers = 1
	}
	rn.appendLocked("metadata", map[string]any{"run_id": rn.ID, "thread_id": tid, "attempt": 1})
	switch {
	case strategy == "interrupt" && t.active != nil:
		t.active.cancelled = "interrupted by a new run (multitask_strategy interrupt)"
		t.active.cancel(errors.New(t.active.cancelled))
	case strategy == "rollback" && t.active != nil:
		t.active.cancelled = "rolled back by a new run (multitask_strategy rollback)"
		t.active.rollback = true
		t.active.cancel(errors.New(t.active.cancelled))
	}
	if strategy == "interrupt" || strategy == "rollback" {
		// The thread's pending runs end too, as in LangGraph: cancelled,
		// or forgotten for a rollback.
		for _, p := range slices.Clone(t.queue) {
			s.cancelLocked(p, "cancelled by a new run (multitask_strategy "+strategy+")")
			if strategy == "rollback" {
				delete(s.runs, p.ID)
				t.runs = slices.DeleteFunc(t.runs, func(x *run) bool { return x == p })
			}
		}
	}
	t.queue = append(t.queue, rn)
	rn.created, _ = json.Marshal(rn) // answered as created, pending, whatever happens next
	s.startNextLocked(t)
	return rn, nil
}

// appendLocked adds an event to the run's log; s.mu must be held.
func (rn *run) appendLocked(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		b, _ = json.Marshal(runErrorData{Error: "EncodingError", Message: fmt.Sprintf("encoding a %s event: %v", name, err)})
		name = "error"
	}
	if name == "values" {
		rn.lastValues = b
	}
	rn.events = append(rn.events, sseEvent{name: name, data: b})
	rn.eventBytes += int64(len(name) + len(b))
	close(rn.changed)
	rn.changed = make(chan struct{})
}

// dropEventsLocked frees the event log of an ended run no stream reads,
// unless the run is resumable; s.mu must be held.
func (rn *run) dropEventsLocked() {
	if !rn.resumable && rn.readers == 0 && isClosed(rn.done) {
		rn.events = nil
	}
}

// keepEventsLocked records the events of rn, a resumable run that
// ended, and drops those of the runs that ended first beyond the server's
// WithKeptEventBytes; s.mu must be held.
func (s *Server) keepEventsLocked(rn *run) {
	if !rn.resumable || rn.events == nil || s.runs[rn.ID] != rn { // a rollback is forgotten already
		return
	}
	s.keptEvents = append(s.keptEvents, rn)
	s.keptEventBytes += rn.eventBytes
	for s.keptEventBytes > s.cfg.keptEventBytes && len(s.keptEvents) > 0 {
		old := s.popKeptEventsLocked()
		old.eventsDropped = true
		close(old.changed) // its readers see the drop
		old.changed = make(chan struct{})
	}
}

// popKeptEventsLocked drops the events of the oldest run in keptEvents and
// returns the run; s.mu must be held.
func (s *Server) popKeptEventsLocked() *run {
	old := s.keptEvents[0]
	s.keptEvents[0] = nil
	s.keptEvents = s.keptEvents[1:]
	s.keptEventBytes -= old.eventBytes
	old.events, old.eventBytes = nil, 0
	return old
}

// droppedEvents is the error event of a join of a run whose events were
// dropped.
func droppedEvents(rn *run, keptBytes int64) *runErrorData {
	return &runErrorData{Error: "EventsDropped", Message: fmt.Sprintf(
		"the events of run %s were dropped: this server keeps at most %d bytes of ended runs' events (server.WithKeptEventBytes); the run's result and thread state remain", rn.ID, keptBytes)}
}

// forgetOldRunsLocked records that rn ended and forgets the oldest ended
// runs beyond the number the server keeps; s.mu must be held.
func (s *Server) forgetOldRunsLocked(rn *run) {
	s.keepEventsLocked(rn)
	s.ended = append(s.ended, rn)
	for len(s.ended) > s.cfg.kept {
		old := s.ended[0]
		s.ended[0] = nil
		s.ended = s.ended[1:]
		// keptEvents is in the order of ended: a forgotten run leaves it
		// from its front.
		if len(s.keptEvents) > 0 && s.keptEvents[0] == old {
			s.popKeptEventsLocked()
		}
		if s.runs[old.ID] == old {
			delete(s.runs, old.ID)
		}
		old.thread.runs = slices.DeleteFunc(old.thread.runs, func(x *run) bool { return x == old })
	}
}

// startNextLocked starts the thread's oldest pending run if none runs;
// s.mu must be held.
func (s *Server) startNextLocked(t *thread) {
	if t.active != nil || len(t.queue) == 0 {
		return
	}
	rn := t.queue[0]
	t.queue = t.queue[1:]
	t.active = rn
	rn.Status = runRunning
	rn.UpdatedAt = s.cfg.now()
	ctx, cancel := context.WithCancelCause(context.Background())
	rn.cancel = cancel
	go s.execute(ctx, rn)
}

// execute runs rn to its end, then starts the thread's next run.
func (s *Server) execute(ctx context.Context, rn *run) {
	emit := func(name string, data any) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if name == "values" && !rn.params.modes["values"] {
			// Not streamed, but wait and join answer the last values.
			if b, err := json.Marshal(data); err == nil {
				rn.lastValues = b
			}
			return
		}
		rn.appendLocked(name, data)
	}
	rn.params.abandoned = &rn.thread.abandoned
	err := retry(ctx, "starting run "+rn.ID, func(context.Context) error { return s.prepare(rn) })
	if err == nil {
		err = s.runThroughFaults(ctx, rn, emit)
	}
	rn.cancel(nil)
	// A cancelled run returns at once, leaving a node that ignores its
	// context running: the thread stays this run's until it returned.
	rn.thread.abandoned.Wait()

	s.mu.Lock()
	var runErr string
	rn.Status, rn.errData = runOutcome(rn.cancelled != "", err, false)
	if rn.errData != nil {
		runErr = err.Error()
		rn.appendLocked("error", rn.errData)
	}
	rn.UpdatedAt = s.cfg.now()
	t := rn.thread
	t.active = nil
	if rn.rollback {
		delete(s.runs, rn.ID)
		t.runs = slices.DeleteFunc(t.runs, func(x *run) bool { return x == rn })
		to := rn.startCheckpoint
		t.resetTo = &to
	}
	s.mu.Unlock()

	s.refreshThread(context.Background(), t, rn.graph, runErr)

	if rn.temporary {
		s.dropThread(t)
	}
	s.mu.Lock()
	rn.appendLocked("end", nil)
	close(rn.done)
	rn.dropEventsLocked()
	s.forgetOldRunsLocked(rn)
	if s.threads[t.ID] == t {
		s.startNextLocked(t)
		if t.active != nil {
			t.Status = statusBusy
		}
	}
	s.mu.Unlock()
}

// runThroughFaults runs rn's graph and, while it stops on a transient
// fault of the saver ([IsTransient]) and the server has the graph's saver
// ([WithCheckpointer]), runs it again after a wait, longer each time, up
// to localFaultTries runs: from the thread's last checkpoint when rn wrote
// it, else as it was asked to start. A thread lease held by another (a
// graph run of another process sharing the saver, or one a fault left
// held: a release that failed, an acquisition whose answer was lost) is
// waited out. A fenced write ends the run: another holder took the thread
// over, and nothing here hands the run on, so running it again would
// apply it a second time over the other holder's work.
func (s *Server) runThroughFaults(ctx context.Context, rn *run, emit func(string, any)) error {
	p := rn.params
	faults := 0
	for attempt := 1; ; attempt++ {
		err := rn.graph.run(ctx, p, emit)
		_, held := errors.AsType[*checkpoint.LeaseHeldError](err)
		_, fenced := errors.AsType[*checkpoint.FencedError](err)
		if err == nil || ctx.Err() != nil || fenced || !IsTransient(err) && !held || s.cfg.saver == nil {
			return err // without WithCheckpointer, where the run stopped is not known
		}
		if !held {
			if faults++; faults == localFaultTries {
				return err
			}
		}
		slog.Warn("server: running a run again after a fault", "run_id", rn.ID, "attempt", attempt, "err", err)
		if backoff.Sleep(ctx, retryDelay(attempt)) != nil {
			return err
		}
		tup, gerr := retry1(ctx, "reading the checkpoint run "+rn.ID+" resumes from", func(ctx context.Context) (*checkpoint.Tuple, error) {
			return s.cfg.saver.Get(ctx, checkpoint.Ref{ThreadID: rn.ThreadID})
		})
		switch {
		case gerr == nil && tup.Checkpoint.Metadata.RunID == rn.ID:
			p.input, p.command, p.checkpointID = nil, nil, ""
		case gerr != nil && !errors.Is(gerr, checkpoint.ErrNotFound):
			return gerr
		}
	}
}

// localFaultTries bounds the runs of a run that keeps stopping on a
// transient fault (a database that stays down) in a server without a
// Backend: with the waits between them, about half a minute.
const localFaultTries = 30

// runOutcome says how a run ended: interrupted when it was cancelled,
// error (with the error's data, a ValidationError for an *apiError of a
// 4xx or when invalid is set) when it failed other than by pausing, else
// success.
func runOutcome(cancelled bool, err error, invalid bool) (string, *runErrorData) {
	switch {
	case cancelled:
		return runInterrupted, nil
	case err != nil && !isPause(err):
		name := "Error"
		if ae, ok := errors.AsType[*apiError](err); ok && ae.status < 500 || invalid {
			name = "ValidationError"
		}
		return runError, &runErrorData{Error: name, Message: err.Error()}
	default:
		return runSuccess, nil
	}
}

// prepare readies rn to run: after a rollback it starts from the
// checkpoint the rolled-back run started from (on a thread that had none,
// the thread's checkpoints are deleted), and it records where it starts
// itself.
func (s *Server) prepare(rn *run) error {
	ctx := context.Background() // runs even for a run cancelled before it started
	s.mu.Lock()
	reset := rn.thread.resetTo
	rn.thread.resetTo = nil
	s.mu.Unlock()
	start, err := s.startPoint(ctx, rn.graph, rn.ThreadID, rn.ID, reset, &rn.params.checkpointID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	rn.startCheckpoint = start
	s.mu.Unlock()
	return nil
}

// startPoint readies the thread tid for run runID, which starts (not
// resumes) from *checkpointID ("" for the latest): after a rollback
// (reset not nil) with no checkpoint asked for, it starts from the
// checkpoint the rolled-back run started from, *reset — or, on a thread
// that had none, the thread's checkpoints are deleted. It returns the
// checkpoint the run starts from ("" for none).
func (s *Server) startPoint(ctx context.Context, g graphAdapter, tid, runID string, reset, checkpointID *string) (string, error) {
	if reset != nil && *checkpointID == "" {
		if *reset != "" {
			*checkpointID = *reset
		} else {
			del, ok := s.cfg.saver.(checkpoint.ThreadDeleter)
			if !ok {
				return "", errors.New("server: rolling back the first run of a thread needs WithCheckpointer with a saver that deletes threads")
			}
			if err := del.DeleteThread(ctx, tid); err != nil {
				return "", fmt.Errorf("server: rolling back thread %s: %w", tid, err)
			}
		}
	}
	st, err := g.state(ctx, tid, *checkpointID)
	if err != nil {
		return "", fmt.Errorf("server: reading the state run %s starts from: %w", runID, err)
	}
	if st.Checkpoint == nil {
		return "", nil
	}
	return st.Checkpoint.CheckpointID, nil
}

// cancel stops rn: a pending run is taken off its queue, a running one is
// cancelled. It returns at once.
func (s *Server) cancel(rn *run, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancelLocked(rn, why)
}

func (s *Server) cancelLocked(rn *run, why string) {
	switch rn.Status {
	case runPending:
		t := rn.thread
		if i := slices.Index(t.queue, rn); i >= 0 {
			t.queue = slices.Delete(t.queue, i, i+1)
		}
		rn.cancelled = why
		rn.Status = runInterrupted
		rn.UpdatedAt = s.cfg.now()
		rn.appendLocked("end", nil)
		close(rn.done)
		rn.dropEventsLocked()
		if t.active == nil && len(t.queue) == 0 && t.Status == statusBusy {
			t.Status = statusIdle
		}
	case runRunning:
		if rn.cancelled == "" {
			rn.cancelled = why
			rn.cancel(errors.New(why))
		}
	}
}

// result is what wait and join answer: the last values, or the error.
func (rn *run) result() any {
	if rn.errData != nil {
		return map[string]any{"__error__": rn.errData}
	}
	if rn.lastValues == nil {
		return nil
	}
	return rn.lastValues
}

func contentLocation(rn *run) string {
	if rn.stateless {
		return "/runs/" + rn.ID
	}
	return "/threads/" + rn.ThreadID + "/runs/" + rn.ID
}

func (s *Server) createRun(w http.ResponseWriter, r *http.Request) {
	rn, err := s.newRun(r, false)
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Location", contentLocation(rn))
	writeRaw(w, rn.created, nil)
}

func (s *Server) waitRun(w http.ResponseWriter, r *http.Request) {
	rn, err := s.newRun(r, false)
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Location", contentLocation(rn))
	s.answerWhenDone(w, r, rn)
}

func (s *Server) answerWhenDone(w http.ResponseWriter, r *http.Request, rn *run) {
	select {
	case <-rn.done:
	case <-r.Context().Done():
		return
	}
	s.mu.Lock()
	b, err := json.Marshal(rn.result())
	s.mu.Unlock()
	writeRaw(w, b, err)
}

// findRun returns the run of the path, on the thread of the path (any
// thread for the stateless routes).
func (s *Server) findRun(r *http.Request) (*run, error) {
	tid, rid, err := parseRunPath(r)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rn, ok := s.runs[rid]
	if !ok || tid != "" && rn.ThreadID != tid {
		return nil, errRunNotFound()
	}
	return rn, nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	rn, err := s.findRun(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	b, err := json.Marshal(rn)
	s.mu.Unlock()
	writeRaw(w, b, err)
}

func (s *Server) joinRun(w http.ResponseWriter, r *http.Request) {
	rn, err := s.findRun(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.answerWhenDone(w, r, rn)
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q, err := parseRunList(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	t, err := s.lookupThread(q.threadID)
	if err != nil {
		s.mu.Unlock()
		fail(w, err)
		return
	}
	var out []*run
	for _, rn := range t.runs {
		if q.status == "" || rn.Status == q.status {
			out = append(out, rn)
		}
	}
	out = paginate(w, out, q.limit, q.offset)
	b, err := json.Marshal(out)
	s.mu.Unlock()
	writeRaw(w, b, err)
}

func truthy(v string) bool { return v == "1" || v == "true" || v == "yes" }

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	rn, err := s.findRun(r)
	if err != nil {
		fail(w, err)
		return
	}
	wait, err := parseRunCancel(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.cancel(rn, "cancelled by request")
	if !wait {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	select {
	case <-rn.done:
		w.WriteHeader(http.StatusNoContent)
	case <-r.Context().Done():
	}
}

func (s *Server) streamRun(w http.ResponseWriter, r *http.Request) {
	rn, err := s.newRun(r, true)
	if err != nil {
		fail(w, err)
		return
	}
	s.sse(w, r, rn, 0, rn.cancelOnDisconnect)
}

func (s *Server) joinRunStream(w http.ResponseWriter, r *http.Request) {
	rn, err := s.findRun(r)
	if err != nil {
		fail(w, err)
		return
	}
	from, err := parseLastEventID(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	forgotten := rn.events == nil && isClosed(rn.done) && !rn.eventsDropped // ended, not resumable
	rn.readers++
	s.mu.Unlock()
	if forgotten {
		// Its events are gone: the stream says at least that it ended.
		s.mu.Lock()
		rn.readers--
		s.mu.Unlock()
		setStreamHeaders(w, contentLocation(rn), false)
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "event: end\ndata: null\n\n")
		return
	}
	s.sse(w, r, rn, from, truthy(r.URL.Query().Get("cancel_on_disconnect")))
}

// sse streams rn's events from index from, live, until the run ends or
// the client goes away (then cancelling the run when cancelOnGone). The
// caller counted itself among rn's readers; sse uncounts it.
func (s *Server) sse(w http.ResponseWriter, r *http.Request, rn *run, from int, cancelOnGone bool) {
	gone := true // the client went away, unless the run ended
	defer func() {
		s.mu.Lock()
		rn.readers--
		rn.dropEventsLocked()
		if gone && cancelOnGone {
			s.cancelLocked(rn, "client disconnected (on_disconnect cancel)")
		}
		s.mu.Unlock()
	}()
	setStreamHeaders(w, contentLocation(rn), rn.resumable)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	next := from
	for {
		s.mu.Lock()
		batch := slices.Clone(rn.events[min(next, len(rn.events)):])
		changed := rn.changed
		ended := isClosed(rn.done)
		dropped := rn.eventsDropped
		s.mu.Unlock()
		if dropped {
			data, _ := json.Marshal(droppedEvents(rn, s.cfg.keptEventBytes))
			_, _ = fmt.Fprintf(w, "event: error\ndata: %s\n\n", data)
			gone = false
			return
		}
		for _, ev := range batch {
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\nid: %d\n\n", ev.name, ev.data, next); err != nil {
				return
			}
			next++
		}
		if len(batch) > 0 {
			if err := rc.Flush(); err != nil {
				return
			}
		}
		if ended && len(batch) == 0 {
			gone = false
			return
		}
		select {
		case <-changed:
		case <-rn.done:
		case <-r.Context().Done():
			return
		}
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// isPause reports whether err is the pause of a run at an interrupt.
func isPause(err error) bool {
	var in *graph.Interrupted
	return errors.As(err, &in)
}

// dropThread forgets a temporary thread and deletes its checkpoints; its
// runs stay readable until the server forgets them.
func (s *Server) dropThread(t *thread) {
	s.mu.Lock()
	if s.threads[t.ID] == t {
		delete(s.threads, t.ID)
	}
	s.mu.Unlock()
	_ = s.deleteCheckpoints(context.Background(), t.ID) // best effort: the thread is unreachable anyway
}

// checkNodes refuses breakpoints on nodes the graph does not have.
func checkNodes(g graphAdapter, field string, nodes []string) error {
	d := g.drawing()
	for _, n := range nodes {
		if n == "*" {
			continue
		}
		if !slices.ContainsFunc(d.Nodes, func(x drawNode) bool { return x.ID == n && x.Type == "runnable" }) {
			return errorf(http.StatusUnprocessableEntity, "%s: the graph has no node %q", field, n)
		}
	}
	return nil
}

// Shutdown makes the server refuse new runs (503), cancels every pending
// and running run, and waits until they all ended or ctx is done. Call
// it after [http.Server.Shutdown] stopped taking requests, or before, to
// end the streams and waits it is still serving. With a [Backend] it
// instead stops claiming runs and gives the runs it executes back to the
// backend, unfinished, for another process to resume; pending runs stay
// queued.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.shared != nil {
		return s.shutdownShared(ctx)
	}
	s.mu.Lock()
	var all []*run
	for _, rn := range s.runs {
		if !isClosed(rn.done) {
			all = append(all, rn)
		}
	}
	for _, rn := range all { // pending first: none of them starts any more
		if rn.Status == runPending {
			s.cancelLocked(rn, "server shutting down")
		}
	}
	for _, rn := range all {
		s.cancelLocked(rn, "server shutting down")
	}
	s.mu.Unlock()
	for _, rn := range all {
		select {
		case <-rn.done:
		case <-ctx.Done():
			return fmt.Errorf("server: shutdown: %w", ctx.Err())
		}
	}
	return nil
}

func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) {
	rn, err := s.findRun(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !isClosed(rn.done) {
		fail(w, errorf(http.StatusConflict, "run %s is %s: cancel it first", rn.ID, rn.Status))
		return
	}
	delete(s.runs, rn.ID)
	rn.thread.runs = slices.DeleteFunc(rn.thread.runs, func(x *run) bool { return x == rn })
	w.WriteHeader(http.StatusNoContent)
}
