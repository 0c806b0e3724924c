package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// shared is the run service of a Server: its dispatcher, which claims
// runs from the Backend, and the runs it executes.
type shared struct {
	ctx  context.Context // cancelled by Shutdown: no more claims
	stop context.CancelFunc
	wg   sync.WaitGroup // the dispatcher and the runs executing
	kick chan struct{}  // wakes the dispatcher: a run was queued or ended here

	mu      sync.Mutex
	local   map[string]*localRun // by run id
	watches map[string]*watch    // by run id: requests waiting for a run's events or end
}

// watch is what the requests waiting on one run share.
type watch struct {
	ch chan struct{} // closed and replaced when the run emits or ends here
	n  int           // requests watching
}

// localRun is a run this process executes.
type localRun struct {
	threadID string
	cancel   context.CancelCauseFunc
	poke     chan struct{} // renews the lease now (and reads the cancel flag)
}

// errShutdown cancels the runs of a server shutting down: they are
// released to other processes, not ended.
var errShutdown = errors.New("server shutting down")

// backoff is the next wait of a request polling the backend for a run
// another process executes, after wait passed with nothing new: twice as
// long, up to ten poll intervals.
func (c *config) backoff(wait time.Duration) time.Duration { return min(2*wait, 10*c.poll) }

// heartbeat is how often a claimed run's lease is renewed.
func (c *config) heartbeat() time.Duration { return min(c.leaseTTL/4, 5*c.poll) }

func (s *Server) startShared() {
	ctx, stop := context.WithCancel(context.Background())
	s.shared = &shared{ctx: ctx, stop: stop, kick: make(chan struct{}, 1), local: map[string]*localRun{}, watches: map[string]*watch{}}
	if s.cfg.holder == "" {
		s.cfg.holder = newUUID()
	}
	s.shared.wg.Add(1)
	go s.dispatch()
}

// watchRun returns a channel closed at the run's next event or end in
// this process, and the function to call once done with it.
func (sh *shared) watchRun(id string) (<-chan struct{}, func()) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	w := sh.watches[id]
	if w == nil {
		w = &watch{ch: make(chan struct{})}
		sh.watches[id] = w
	}
	w.n++
	return w.ch, func() {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		if w.n--; w.n == 0 && sh.watches[id] == w {
			delete(sh.watches, id)
		}
	}
}

// notify wakes the requests watching run id.
func (sh *shared) notify(id string) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if w := sh.watches[id]; w != nil {
		close(w.ch)
		w.ch = make(chan struct{})
	}
}

func (sh *shared) wake() {
	select {
	case sh.kick <- struct{}{}:
	default:
	}
}

// poke makes the local runs of thread tid (or the run rid) renew their
// leases now, so that they see a cancel flag at once.
func (sh *shared) poke(tid, rid string) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for id, lr := range sh.local {
		if id == rid || lr.threadID == tid {
			select {
			case lr.poke <- struct{}{}:
			default:
			}
		}
	}
}

// dispatch claims runs while fewer than WithWorkers execute, and executes
// each on a goroutine of its own, until the server shuts down. It alone
// polls the backend when idle.
func (s *Server) dispatch() {
	sh := s.shared
	defer sh.wg.Done()
	var slots chan struct{} // nil: no bound (a server's own MemoryBackend without WithWorkers)
	if s.cfg.workers > 0 {
		slots = make(chan struct{}, s.cfg.workers)
	}
	release := func() {
		if slots != nil {
			<-slots
		}
	}
	var warned time.Time // the last claim error logged: one every 10s at most
	// The runs its workers claim: of the graphs it serves.
	served := slices.Sorted(maps.Keys(s.cfg.graphs))
	for {
		if slots != nil {
			select {
			case slots <- struct{}{}:
			case <-sh.ctx.Done():
				return
			}
		} else if sh.ctx.Err() != nil {
			return
		}
		c, err := s.cfg.backend.ClaimRun(sh.ctx, s.cfg.holder, s.cfg.leaseTTL, served)
		if err == nil && c != nil {
			sh.wg.Add(1)
			go func() {
				defer sh.wg.Done()
				s.executeClaim(c)
				release()
				sh.wake() // the thread's next run may be claimable now
			}()
			continue
		}
		release()
		if err != nil && sh.ctx.Err() == nil && time.Since(warned) > 10*time.Second {
			warned = time.Now()
			slog.Warn("server: claiming a run", "holder", s.cfg.holder, "err", err)
		}
		select {
		case <-sh.ctx.Done():
			return
		case <-sh.kick:
		case <-time.After(s.cfg.poll):
		}
	}
}

// runKwargs is what a run was asked to do, as stored in its kwargs.
type runKwargs struct {
	Input           json.RawMessage `json:"input"`
	Command         *commandBody    `json:"command"`
	StreamMode      []string        `json:"stream_mode"`
	StreamSubgraphs bool            `json:"stream_subgraphs,omitempty"`
	StreamResumable bool            `json:"stream_resumable,omitempty"`
	InterruptBefore []string        `json:"interrupt_before"`
	InterruptAfter  []string        `json:"interrupt_after"`
	CheckpointID    string          `json:"checkpoint_id,omitempty"`
	OnCompletion    string          `json:"on_completion,omitempty"` // stateless runs: delete (default) or keep
	Stateless       bool            `json:"stateless,omitempty"`
	Config          struct {
		Configurable struct {
			ThreadID    string `json:"thread_id"`
			RunID       string `json:"run_id"`
			GraphID     string `json:"graph_id"`
			AssistantID string `json:"assistant_id"`
		} `json:"configurable"`
		RecursionLimit int `json:"recursion_limit,omitempty"`
	} `json:"config"`
}

// params decodes a claimed run's kwargs into what the adapter runs.
func (s *Server) params(rec RunRecord) (runKwargs, graphAdapter, runParams, error) {
	var kw runKwargs
	if err := json.Unmarshal(rec.Kwargs, &kw); err != nil {
		return kw, nil, runParams{}, fmt.Errorf("server: run %s has kwargs that do not decode: %w", rec.ID, err)
	}
	g := s.cfg.graphs[kw.Config.Configurable.GraphID]
	if g == nil {
		return kw, nil, runParams{}, fmt.Errorf("server: run %s is of graph %q, which this server does not serve", rec.ID, kw.Config.Configurable.GraphID)
	}
	modes := map[string]bool{}
	for _, m := range kw.StreamMode {
		if !slices.Contains(supportedModes, m) {
			return kw, nil, runParams{}, fmt.Errorf("server: run %s asks for stream mode %q, which this server does not stream", rec.ID, m)
		}
		modes[m] = true
	}
	if len(modes) == 0 {
		modes["values"] = true
	}
	p := runParams{
		thread: rec.ThreadID, runID: rec.ID, checkpointID: kw.CheckpointID,
		input: kw.Input, command: kw.Command, modes: modes, subgraphs: kw.StreamSubgraphs,
		before: kw.InterruptBefore, after: kw.InterruptAfter,
		metadata:       checkpointMetadata(kw.Config.Configurable.GraphID, rec.AssistantID, rec.ThreadID, rec.Metadata),
		recursionLimit: kw.Config.RecursionLimit,
	}
	if !s.local {
		// A run taken over from a dead process finds the thread free: the
		// dead run's thread lease expires with its run lease.
		p.leaseTTL = s.cfg.leaseTTL
	}
	return kw, g, p, nil
}

// finishTimeout bounds the finishing of a run (reading its state,
// recording its result) when the run lease is shorter; the lease is
// renewed meanwhile.
const finishTimeout = time.Minute

// backendTry is a [retry] of a Backend or saver operation of a claimed
// run, each try bounded by the run lease's time: a try that hangs on a
// dead connection is a fault like any other.
func (s *Server) backendTry(ctx context.Context, op string, f func(context.Context) error) error {
	if s.local {
		// Its own MemoryBackend never hangs: only the saver's faults
		// (reading where a run starts) are retried.
		return retry(ctx, op, f)
	}
	return retry(ctx, op, func(ctx context.Context) error {
		ctx, stop := context.WithTimeout(ctx, s.cfg.leaseTTL)
		defer stop()
		return f(ctx)
	})
}

// recordedEvent looks for the event (name, data) that a try of a claim
// may have recorded in run's stream before its answer was lost, after
// the claim's last recorded event, whose id is last (-1 before the
// claim's first). A claim is its run's only writer, so an event after
// last is the one looked for; before the claim's first, the stream's last
// event is, when it has the same name and data (the first event of a
// claim, its "metadata", names the claim's attempt); either must have the
// same name and data. It returns the event's id and whether it is there;
// otherwise, last.
func recordedEvent(ctx context.Context, b Backend, run string, last int, name string, data json.RawMessage) (int, bool, error) {
	evs, err := b.Events(ctx, run, last+1)
	if err != nil {
		return last, false, err
	}
	if len(evs) == 0 {
		return last, false, nil
	}
	e := evs[0]
	if last < 0 {
		e = evs[len(evs)-1]
	}
	if e.Name != name || !bytes.Equal(e.Data, data) {
		return last, false, nil
	}
	return e.ID, true, nil
}

// faulted reports whether a claimed run's error is a fault of the
// Backend or the saver, not the graph's own, so that the run is released
// to run again from its last checkpoint rather than failed: a transient
// fault ([IsTransient]), or a write the saver fenced (this process lost
// the thread's lease, so the run is another's now).
func faulted(err error) bool {
	_, fenced := errors.AsType[*checkpoint.FencedError](err)
	return fenced || IsTransient(err)
}

// releasable reports whether claim c, whose run stopped on err, is
// released to run again from its last checkpoint rather than ended: on a
// fault of the Backend or the saver ([faulted]). A server with its own
// [MemoryBackend] releases a run only on a transient fault, when it has
// the graphs' saver to resume from ([WithCheckpointer]), and for
// [localFaultTries] attempts at most: no other process takes over what it
// gives up, and a fenced write means a holder outside the server took the
// thread over — running the run again would apply it a second time over
// that holder's work.
func (s *Server) releasable(c *Claim, err error) bool {
	if !s.local {
		return faulted(err)
	}
	_, fenced := errors.AsType[*checkpoint.FencedError](err)
	return !fenced && IsTransient(err) && s.cfg.saver != nil && c.Run.Attempt < localFaultTries
}

// localFaultTries bounds the attempts of a run that keeps stopping on a
// transient fault (a database that stays down) in a server with its own
// MemoryBackend: with the waits between them, about half a minute.
const localFaultTries = 30

// executeClaim runs a claimed run to its end, renewing its lease, unless the
// lease is lost, the server shuts down or the Backend or the saver fails
// with a transient fault (then the run is released, to be claimed again
// and resumed from its last checkpoint).
func (s *Server) executeClaim(c *Claim) {
	sh, b, rec := s.shared, s.cfg.backend, c.Run
	runCtx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	lr := &localRun{threadID: rec.ThreadID, cancel: cancel, poke: make(chan struct{}, 1)}
	sh.mu.Lock()
	sh.local[rec.ID] = lr
	sh.mu.Unlock()
	defer func() {
		sh.mu.Lock()
		delete(sh.local, rec.ID)
		sh.mu.Unlock()
		sh.notify(rec.ID)
	}()
	if sh.ctx.Err() != nil && !s.local {
		cancel(errShutdown)
	}

	var cancelled atomic.Pointer[string]
	var lost atomic.Bool
	hbStop, hbDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(hbDone)
		s.keepLease(c, lr.poke, hbStop, cancel, &cancelled, &lost)
	}()

	var lastValues json.RawMessage
	var emitErr error
	appended := -1 // the id of the last event this claim recorded; -1 before its first
	kw, g, p, perr := s.params(rec)
	emit := func(name string, data any) {
		if emitErr != nil && faulted(emitErr) {
			return // the run is stopping, to be released
		}
		raw, err := json.Marshal(data)
		if err != nil {
			raw, _ = json.Marshal(runErrorData{Error: "EncodingError", Message: fmt.Sprintf("encoding a %s event: %v", name, err)})
			name = "error"
		}
		if name == "values" {
			lastValues = raw
			if !p.modes["values"] {
				return
			}
		}
		if s.local {
			// Its own MemoryBackend meets no fault to retry.
			_, err = b.AppendEvent(context.Background(), c, name, raw)
		} else {
			faulted := false
			err = s.backendTry(context.Background(), "recording a "+name+" event of run "+rec.ID, func(ctx context.Context) error {
				if faulted {
					// The try that failed may have been recorded all
					// the same (its answer lost): then it is not
					// recorded twice.
					id, found, err := recordedEvent(ctx, b, rec.ID, appended, name, raw)
					if err != nil || found {
						appended = id
						return err
					}
				}
				faulted = true
				id, err := b.AppendEvent(ctx, c, name, raw)
				if err == nil {
					appended = id
				}
				return err
			})
		}
		if err != nil {
			emitErr = fmt.Errorf("server: recording a %s event of run %s: %w", name, rec.ID, err)
			if errors.Is(err, ErrLeaseLost) {
				lost.Store(true)
			}
			cancel(emitErr)
		}
		sh.notify(rec.ID)
	}
	emit("metadata", map[string]any{"run_id": rec.ID, "thread_id": rec.ThreadID, "attempt": rec.Attempt})

	err := perr
	var wg sync.WaitGroup // nodes the run abandoned (see thread.abandoned)
	if err == nil && emitErr == nil {
		p.abandoned = &wg
		err = s.runClaimed(runCtx, c, g, p, emit)
	}
	wg.Wait()
	// The lease is renewed until the run is finished: reading and
	// recording a large state may outlast it.
	defer func() {
		close(hbStop)
		<-hbDone
	}()
	if emitErr != nil && (err == nil || errors.Is(context.Cause(runCtx), emitErr)) {
		err = emitErr // what stopped the run
	}
	if lost.Load() {
		return // the run is another process's now
	}
	ctx, stop := context.WithTimeout(context.Background(), max(s.cfg.leaseTTL, finishTimeout))
	defer stop()
	if !s.local && errors.Is(context.Cause(runCtx), errShutdown) && err != nil && !isPause(err) {
		s.release(ctx, c, "at shutdown", nil)
		return
	}
	if cancelled.Load() == nil && err != nil && s.releasable(c, err) {
		s.release(ctx, c, "after a fault", err)
		return
	}
	res := RunResult{Result: lastValues}
	var runErr *runErrorData
	res.Status, runErr = runOutcome(cancelled.Load() != nil, err, perr != nil)
	if runErr != nil {
		res.Result, _ = json.Marshal(map[string]any{"__error__": runErr})
	}
	if res.Result == nil {
		res.Result = json.RawMessage("null")
	}
	if g != nil {
		var serr error
		res.Thread, serr = retry1(ctx, "reading the state of thread "+rec.ThreadID, func(ctx context.Context) (ThreadState, error) {
			return s.latestState(ctx, g, rec.ThreadID, runErr != nil)
		})
		if serr != nil {
			if s.releasable(c, serr) {
				s.release(ctx, c, "after a fault", serr)
				return
			}
			// Given up: the thread keeps the values it showed.
			res.Thread = ThreadState{Status: statusIdle}
			if runErr != nil {
				res.Thread.Status = statusError
			}
		}
		if res.Status == runSuccess && lastValues == nil {
			// Resumed after its last checkpoint: nothing was left to run.
			res.Result = res.Thread.Values
		}
	} else {
		res.Thread = ThreadState{Status: statusError} // its values stay as they are
	}
	res.DropThread = kw.Stateless && kw.OnCompletion != "keep"
	if runErr != nil {
		res.Error, _ = json.Marshal(runErr)
	}
	// FinishRun records the stream's "error" and "end" with the run's
	// end: a client that read either finds the run ended and the thread
	// free for its next run.
	if lost.Load() {
		return
	}
	if emitErr != nil && s.releasable(c, emitErr) {
		s.release(ctx, c, "after a fault", emitErr)
		return
	}
	err = s.finish(ctx, c, res, "finishing run "+rec.ID)
	if err != nil {
		if errors.Is(err, ErrLeaseLost) {
			return
		}
		if faulted(err) {
			// The attempt that claims it again finds nothing left to run
			// past its last checkpoint, and ends it and its stream.
			s.release(ctx, c, "after a fault", err)
			return
		}
		slog.Warn("server: finishing a run", "run_id", rec.ID, "err", err)
		// The run ended, but its record could not take its result: end it
		// as failed with nothing but why, rather than leave it to be
		// claimed and run again at every lease.
		why := &runErrorData{Error: "StorageError", Message: fmt.Sprintf("the run ended but its result could not be recorded: %v", err)}
		res = RunResult{Status: runError, Thread: ThreadState{Status: statusError}, DropThread: res.DropThread}
		res.Result, _ = json.Marshal(map[string]any{"__error__": why})
		res.Error, _ = json.Marshal(why)
		// Tried as the first was: a transient fault here would otherwise
		// leave the run claimed, to be run again once its lease expired.
		if err := s.finish(ctx, c, res, "finishing run "+rec.ID+" as failed"); err != nil {
			if !errors.Is(err, ErrLeaseLost) {
				slog.Warn("server: finishing a run as failed", "run_id", rec.ID, "err", err)
			}
			return
		}
	}
	if res.DropThread {
		s.dropThread(ctx, rec)
	}
}

// finish records res as the end of c's run (see Backend.FinishRun),
// through transient faults. A try whose answer was lost may have
// finished the run: the next one then finds the claim gone
// (ErrLeaseLost), as a holder whose run was taken over does. Then a
// stateless run's thread, if gone from the Backend, has its checkpoints
// deleted here (see dropThread): the try that dropped it could not say
// so. A run taken over and still running keeps its thread, and nothing
// is deleted under it.
func (s *Server) finish(ctx context.Context, c *Claim, res RunResult, op string) error {
	err := s.backendTry(ctx, op, func(ctx context.Context) error { return s.cfg.backend.FinishRun(ctx, c, res) })
	if errors.Is(err, ErrLeaseLost) && res.DropThread {
		if _, terr := s.cfg.backend.Thread(ctx, c.Run.ThreadID); errors.Is(terr, ErrNotFound) {
			s.dropThread(ctx, c.Run)
		}
	}
	return err
}

// dropThread deletes the checkpoints of the thread of rec, a stateless
// run that ended and dropped it, after telling the streams that follow
// the run here that it ended.
func (s *Server) dropThread(ctx context.Context, rec RunRecord) {
	s.shared.notify(rec.ID)
	_ = s.deleteCheckpoints(ctx, rec.ThreadID) // best effort: the thread is gone anyway
}

// release gives claim c back to the Backend, unfinished, to be claimed
// again (by any process) and resumed from its last checkpoint. After a
// fault (why not nil) it first waits a little, longer at each attempt, so
// that a fault that lasts is not met again at once. A release that fails
// leaves the run to be taken over once its lease expired.
func (s *Server) release(ctx context.Context, c *Claim, when string, why error) {
	if why != nil {
		slog.Warn("server: releasing a run "+when, "run_id", c.Run.ID, "attempt", c.Run.Attempt, "err", why)
		select {
		case <-time.After(min(retryDelay(c.Run.Attempt), s.cfg.leaseTTL/4)):
		case <-s.shared.ctx.Done():
		case <-ctx.Done():
		}
	}
	err := s.backendTry(ctx, "releasing run "+c.Run.ID, func(ctx context.Context) error { return s.cfg.backend.ReleaseRun(ctx, c) })
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		slog.Warn("server: releasing a run "+when, "run_id", c.Run.ID, "err", err)
	}
	s.shared.wake()
}

// runClaimed runs a claimed run's graph. A run claimed again after its
// process died resumes from the thread's latest checkpoint when the run
// wrote it; otherwise it starts as asked (after a rollback, from where the
// rolled-back run started). While the graph's own thread lease is held by
// a run that died, it waits for that lease to expire.
func (s *Server) runClaimed(ctx context.Context, c *Claim, g graphAdapter, p runParams, emit func(string, any)) error {
	for {
		q := p
		resumed := false
		if c.Run.Attempt > 1 && s.cfg.saver != nil {
			tup, err := retry1(ctx, "reading the checkpoint run "+c.Run.ID+" resumes from", func(ctx context.Context) (*checkpoint.Tuple, error) {
				return s.cfg.saver.Get(ctx, checkpoint.Ref{ThreadID: c.Run.ThreadID})
			})
			switch {
			case err == nil && tup.Checkpoint.Metadata.RunID == c.Run.ID:
				q.input, q.command, q.checkpointID = nil, nil, ""
				resumed = true
			case err != nil && !errors.Is(err, checkpoint.ErrNotFound):
				return fmt.Errorf("server: reading the checkpoint run %s resumes from: %w", c.Run.ID, err)
			}
		}
		var err error
		if !resumed {
			err = s.backendTry(ctx, "starting run "+c.Run.ID, func(ctx context.Context) error { return s.startClaimed(ctx, c, g, &q) })
		}
		if err == nil {
			err = g.run(ctx, q, emit)
		}
		var held *checkpoint.LeaseHeldError
		if !errors.As(err, &held) || ctx.Err() != nil {
			return err
		}
		// The thread's lease is still held by the graph run of a process
		// that lost this run: wait for it to end or expire.
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(s.cfg.heartbeat()):
		}
	}
}

// keepLease renews the lease of claim c every heartbeat, and at once when
// poked, until stop is closed. A cancellation the Backend reports (from
// any process) is recorded in cancelled and cancels the run; a lease lost,
// or not renewed for half its TTL (another process may take the run over
// at the TTL), sets lost and cancels the run.
func (s *Server) keepLease(c *Claim, poke, stop <-chan struct{}, cancel context.CancelCauseFunc,
	cancelled *atomic.Pointer[string], lost *atomic.Bool) {
	every := s.cfg.heartbeat()
	t := time.NewTicker(every)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-poke:
		}
		ctx, done := context.WithTimeout(context.Background(), every)
		why, err := s.cfg.backend.RenewLease(ctx, c, s.cfg.leaseTTL)
		done()
		switch {
		case err == nil:
			lastOK = time.Now()
			if why != "" && cancelled.CompareAndSwap(nil, &why) {
				cancel(errors.New(why))
			}
		case errors.Is(err, ErrLeaseLost):
			lost.Store(true)
			cancel(err)
			return
		case time.Since(lastOK) > s.cfg.leaseTTL/2:
			lost.Store(true)
			cancel(fmt.Errorf("%w: not renewed since %v: %w", ErrLeaseLost, lastOK.Format(time.RFC3339Nano), err))
			return
		}
	}
}

// startClaimed readies a run that starts (not resumes): after a rollback
// it starts from the checkpoint the rolled-back run started from (on a
// thread that had none, the thread's checkpoints are deleted), and it
// records where it starts itself.
func (s *Server) startClaimed(ctx context.Context, c *Claim, g graphAdapter, p *runParams) error {
	reset := c.ResetTo
	if reset != nil && *reset == "" && p.checkpointID == "" {
		if err := s.resetClaimed(ctx, c); err != nil {
			return err
		}
		reset = nil // done
	}
	start, err := s.startPoint(ctx, g, c.Run.ThreadID, c.Run.ID, reset, &p.checkpointID)
	if err != nil {
		return err
	}
	return s.cfg.backend.StartRun(ctx, c, start)
}

// resetClaimed deletes the checkpoints of the claimed run's thread, for a
// rollback to a thread that had none, fenced as a graph's writes are: it
// takes the thread's lease, then checks that the run is still the
// claim's, and deletes under the lease. A process paused past its leases
// meanwhile wakes up to a delete refused with a *checkpoint.FencedError:
// the process that took the run over took the thread's lease over before
// it wrote. A lease held by another fails with a
// *checkpoint.LeaseHeldError, which the caller waits out.
func (s *Server) resetClaimed(ctx context.Context, c *Claim) error {
	tid := c.Run.ThreadID
	del, ok := s.cfg.saver.(checkpoint.ThreadDeleter)
	if !ok {
		return errors.New("server: rolling back the first run of a thread needs WithCheckpointer with a saver that deletes threads")
	}
	// A saver without leases fences no write.
	if leaser, ok := s.cfg.saver.(checkpoint.Leaser); ok {
		lease, err := leaser.AcquireLease(ctx, tid, s.cfg.holder, s.cfg.leaseTTL)
		if err != nil {
			return fmt.Errorf("server: rolling back thread %s: %w", tid, err)
		}
		defer func() { _ = leaser.ReleaseLease(context.WithoutCancel(ctx), lease) }()
		if _, err := s.cfg.backend.RenewLease(ctx, c, s.cfg.leaseTTL); err != nil {
			return fmt.Errorf("server: rolling back thread %s: %w", tid, err)
		}
		del = checkpoint.Fenced(s.cfg.saver, lease).(checkpoint.ThreadDeleter) // a deleter stays one
	}
	if err := del.DeleteThread(ctx, tid); err != nil {
		return fmt.Errorf("server: rolling back thread %s: %w", tid, err)
	}
	return nil
}

// latestState is what the thread shows of its latest state; failed says
// the run that just ended failed. A transient fault reading it (see
// [IsTransient]) is its error; another shows the thread without values.
func (s *Server) latestState(ctx context.Context, g graphAdapter, tid string, failed bool) (ThreadState, error) {
	ts := ThreadState{Status: statusIdle, Values: json.RawMessage("null"), Interrupts: json.RawMessage("{}")}
	st, err := g.state(ctx, tid, "")
	if IsTransient(err) {
		return ts, fmt.Errorf("server: reading the state of thread %s: %w", tid, err)
	}
	if err == nil {
		if b, err := json.Marshal(normalize(st.Values)); err == nil {
			ts.Values = b
		}
		if b, err := json.Marshal(st.interruptsByTask()); err == nil {
			ts.Interrupts = b
		}
	}
	switch {
	case failed:
		ts.Status = statusError
	case err == nil && len(st.Next) > 0:
		ts.Status = statusInterrupted
	}
	return ts, nil
}

// backendError answers a Backend's error: not found 404, conflicts 409.
func backendError(err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return errorf(http.StatusNotFound, "%v", err)
	case errors.Is(err, ErrThreadBusy):
		return errStrategy
	case errors.Is(err, ErrExists), errors.Is(err, ErrGraphMismatch):
		return errorf(http.StatusConflict, "%v", err)
	}
	return err
}

// ---- threads ----

func (s *Server) sharedCreateThread(w http.ResponseWriter, r *http.Request) {
	body, md, err := s.parseThreadCreate(r)
	if err != nil {
		fail(w, err)
		return
	}
	md, filter, err := s.authorizeCreate(r.Context(), ResourceThreads, body.ThreadID, "", md)
	if err != nil {
		fail(w, err)
		return
	}
	now := s.cfg.now()
	rec := ThreadRecord{ID: cmp.Or(body.ThreadID, newUUID()), CreatedAt: now, UpdatedAt: now,
		Metadata: md, Status: statusIdle, Config: map[string]any{}, Values: json.RawMessage("null"), Interrupts: json.RawMessage("{}")}
	// After a fault, a thread found under the id is this request's when
	// the id is the server's, when an existing one is the answer anyway
	// (do_nothing), or when it was created at this request's instant.
	ours := func(t ThreadRecord) bool {
		return body.ThreadID == "" || body.IfExists == "do_nothing" || t.CreatedAt.Truncate(time.Microsecond).Equal(now.Truncate(time.Microsecond))
	}
	t, err := createOnce(r.Context(), "creating thread "+rec.ID,
		func(ctx context.Context) (ThreadRecord, bool, error) {
			t, err := s.cfg.backend.Thread(ctx, rec.ID)
			if errors.Is(err, ErrNotFound) {
				return t, false, nil
			}
			return t, err == nil && ours(t), err
		},
		func(ctx context.Context) (ThreadRecord, error) {
			return s.cfg.backend.CreateThread(ctx, rec, body.IfExists)
		})
	if err != nil {
		fail(w, backendError(err))
		return
	}
	if !holds(t.Metadata, filter) { // another's, returned by if_exists do_nothing
		fail(w, errorf(http.StatusConflict, "Thread with ID %s already exists", t.ID))
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// sharedThread returns the Backend's thread id, its errors answered as
// [backendError] does.
func (s *Server) sharedThread(ctx context.Context, id string) (ThreadRecord, error) {
	t, err := s.cfg.backend.Thread(ctx, id)
	if err != nil {
		return ThreadRecord{}, backendError(err)
	}
	return t, nil
}

func (s *Server) sharedGetThread(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err != nil {
		fail(w, err)
		return
	}
	t, _, err := s.authorizedThread(r.Context(), id, ActionRead, nil)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (s *Server) sharedSearchThreads(w http.ResponseWriter, r *http.Request) {
	q, err := parseThreadSearch(r)
	if err != nil {
		fail(w, err)
		return
	}
	var some bool
	if q.Metadata, some, err = s.authorizeSearch(r.Context(), ResourceThreads, q.Metadata); err != nil || !some {
		answerNone(w, err, q.Limit, q.Offset)
		return
	}
	out, total, err := s.cfg.backend.SearchThreads(r.Context(), q)
	if err != nil {
		fail(w, backendError(err))
		return
	}
	setPages(w, total, q.Limit, q.Offset)
	if out == nil {
		out = []ThreadRecord{}
	}
	writeJSON(w, http.StatusOK, out)
}

// setPages sets the pagination headers for a page of total items.
func setPages(w http.ResponseWriter, total, limit, offset int) {
	w.Header().Set("X-Pagination-Total", strconv.Itoa(total))
	if end := offset + limit; end < total {
		w.Header().Set("X-Pagination-Next", strconv.Itoa(end))
	}
}

func (s *Server) sharedCountThreads(w http.ResponseWriter, r *http.Request) {
	q, err := parseThreadCount(r)
	if err != nil {
		fail(w, err)
		return
	}
	var some bool
	if q.Metadata, some, err = s.authorizeSearch(r.Context(), ResourceThreads, q.Metadata); err != nil || !some {
		answerNone(w, err, -1, 0)
		return
	}
	_, total, err := s.cfg.backend.SearchThreads(r.Context(), q)
	if err != nil {
		fail(w, backendError(err))
		return
	}
	writeJSON(w, http.StatusOK, total)
}

func (s *Server) sharedPatchThread(w http.ResponseWriter, r *http.Request) {
	id, md, err := parseThreadPatch(r)
	if err != nil {
		fail(w, err)
		return
	}
	t, md, err := s.authorizedThread(r.Context(), id, ActionUpdate, md)
	if err != nil {
		fail(w, err)
		return
	}
	if err := s.checkGraphChange(id, t.Metadata, md); err != nil {
		fail(w, err)
		return
	}
	if t, err = s.cfg.backend.PatchThread(r.Context(), id, md); err != nil {
		fail(w, backendError(err))
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (s *Server) sharedDeleteThread(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err == nil {
		err = s.checkThread(r.Context(), id, ActionDelete)
	}
	if err != nil {
		fail(w, err)
		return
	}
	running, err := s.cfg.backend.DeleteThread(r.Context(), id)
	if err != nil {
		fail(w, backendError(err))
		return
	}
	s.shared.poke(id, "")
	for _, rid := range running {
		// Its checkpoints are deleted once it wrote its last one.
		if _, err := s.waitEnded(r.Context(), rid); err != nil && !errors.Is(err, ErrNotFound) {
			fail(w, err)
			return
		}
	}
	if err := s.deleteThreadCheckpoints(r.Context(), id); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) sharedUpdateThreadState(w http.ResponseWriter, r *http.Request) {
	u, err := parseStateUpdate(r)
	if err != nil {
		fail(w, err)
		return
	}
	id := u.threadID
	t, _, err := s.authorizedThread(r.Context(), id, ActionUpdate, nil)
	if err != nil {
		fail(w, err)
		return
	}
	g := s.graphOf(t.Metadata)
	if g == nil {
		fail(w, errNoGraph(id))
		return
	}
	// A run that starts meanwhile is kept apart by the graph's thread
	// lease, when the saver leases.
	if t.Status == statusBusy {
		fail(w, errorf(http.StatusConflict, "Thread is busy"))
		return
	}
	cid, err := g.update(r.Context(), id, u.values, u.asNode, u.checkpoint)
	if err != nil {
		fail(w, err)
		return
	}
	ts, err := s.latestState(r.Context(), g, id, false)
	if err != nil {
		fail(w, err)
		return
	}
	if err := s.cfg.backend.SetThreadState(r.Context(), id, ts); err != nil {
		fail(w, backendError(err))
		return
	}
	writeStateUpdated(w, id, cid)
}

// ---- runs ----

// sharedNewRun validates the body and queues the run in the Backend. For
// a stream (streaming set) it holds the run's events from before the run
// is made, when the Backend drops those of ended runs no stream reads
// ([eventHolder]), until sp.release is called.
func (s *Server) sharedNewRun(r *http.Request, streaming bool) (rec RunRecord, sp *runSpec, err error) {
	sp, err = s.parseRun(r)
	if err != nil {
		return RunRecord{}, nil, err
	}
	rec, create, err := s.runRecord(sp)
	if err != nil {
		return RunRecord{}, nil, err
	}
	if create, err = s.authorizeNewRun(r.Context(), sp.assistant, &rec, create, sp.stateless); err != nil {
		return RunRecord{}, nil, err
	}
	sp.release = func() {}
	if h, ok := s.cfg.backend.(eventHolder); ok && streaming {
		sp.release = h.holdEvents(rec.ID)
	}
	id := rec.ID
	rec, err = createOnce(r.Context(), "creating run "+id,
		func(ctx context.Context) (RunRecord, bool, error) {
			got, err := s.cfg.backend.Run(ctx, id)
			if errors.Is(err, ErrNotFound) {
				return got, false, nil
			}
			return got, err == nil, err
		},
		func(ctx context.Context) (RunRecord, error) { return s.cfg.backend.CreateRun(ctx, rec, create) })
	if err != nil {
		sp.release()
		if errors.Is(err, ErrNotFound) {
			return RunRecord{}, nil, errorf(http.StatusNotFound, "Thread with ID %s not found", sp.tid)
		}
		return RunRecord{}, nil, backendError(err)
	}
	s.shared.wake()
	if sp.strategy == "interrupt" || sp.strategy == "rollback" {
		s.shared.poke(sp.tid, "")
	}
	return rec, sp, nil
}

// runRecord is the pending run sp asks for, as the Backend stores it,
// and the thread to create for it (nil: the thread must exist).
func (s *Server) runRecord(sp *runSpec) (RunRecord, *ThreadRecord, error) {
	var err error
	a, body := sp.assistant, &sp.body
	now := s.cfg.now()
	rec := RunRecord{ID: newUUID(), ThreadID: sp.tid, AssistantID: a.ID, CreatedAt: now, UpdatedAt: now, Status: runPending,
		Metadata: normalizeMap(body.Metadata), MultitaskStrategy: sp.strategy, GraphID: a.GraphID}
	kw := runKwargs{Input: body.Input, Command: body.Command, StreamMode: sp.modeList, StreamSubgraphs: body.StreamSubgraphs,
		StreamResumable: body.StreamResumable, InterruptBefore: sp.before, InterruptAfter: sp.after,
		CheckpointID: string(cmp.Or(body.CheckpointID, body.Checkpoint)), Stateless: sp.stateless}
	if sp.stateless {
		kw.OnCompletion = cmp.Or(body.OnCompletion, "delete")
	}
	cf := &kw.Config.Configurable
	cf.ThreadID, cf.RunID, cf.GraphID, cf.AssistantID = sp.tid, rec.ID, a.GraphID, a.ID
	kw.Config.RecursionLimit = body.recursionLimit()
	if rec.Kwargs, err = json.Marshal(kw); err != nil {
		return RunRecord{}, nil, fmt.Errorf("server: encoding the kwargs of run %s: %w", rec.ID, err)
	}
	var create *ThreadRecord
	if body.IfNotExists == "create" || sp.stateless {
		create = &ThreadRecord{ID: sp.tid, CreatedAt: now, UpdatedAt: now, Metadata: map[string]any{"graph_id": a.GraphID, "assistant_id": a.ID},
			Status: statusBusy, Config: map[string]any{}, Values: json.RawMessage("null"), Interrupts: json.RawMessage("{}")}
	}
	return rec, create, nil
}

func sharedLocation(rec RunRecord) string {
	var kw struct {
		Stateless bool `json:"stateless"`
	}
	if bytes.Contains(rec.Kwargs, []byte(`"stateless"`)) && json.Unmarshal(rec.Kwargs, &kw) == nil && kw.Stateless {
		return "/runs/" + rec.ID
	}
	return "/threads/" + rec.ThreadID + "/runs/" + rec.ID
}

func (s *Server) sharedCreateRun(w http.ResponseWriter, r *http.Request) {
	rec, _, err := s.sharedNewRun(r, false)
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Location", sharedLocation(rec))
	writeJSON(w, http.StatusOK, rec)
}

func (s *Server) sharedWaitRun(w http.ResponseWriter, r *http.Request) {
	rec, _, err := s.sharedNewRun(r, false)
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Location", sharedLocation(rec))
	s.sharedAnswerWhenDone(w, r, rec.ID)
}

// waitEnded waits until the run ended and returns it. A transient fault
// of the Backend (see [IsTransient]) is waited out.
func (s *Server) waitEnded(ctx context.Context, id string) (RunRecord, error) {
	wait := s.cfg.poll
	changed, done := s.watchRun(id)
	defer func() { done() }()
	for {
		rec, err := s.cfg.backend.Run(ctx, id)
		if err != nil && !IsTransient(err) || err == nil && rec.ended() || ctx.Err() != nil {
			return rec, err
		}
		poll := s.pollAfter(wait)
		if err != nil {
			poll = time.After(wait) // a transient fault: tried again
		}
		select {
		case <-changed:
		case <-poll:
			wait = s.cfg.backoff(wait)
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			return rec, ctx.Err()
		}
		// The next watch is made before the last one ends, so that what
		// the watcher keeps of the run carries over.
		prev := done
		changed, done = s.watchRun(id)
		prev()
	}
}

func (s *Server) sharedAnswerWhenDone(w http.ResponseWriter, r *http.Request, id string) {
	rec, err := s.waitEnded(r.Context(), id)
	if r.Context().Err() != nil {
		return
	}
	if errors.Is(err, ErrNotFound) {
		// Deleted while it ran (rolled back, or its thread deleted): it
		// ended with nothing to show.
		writeRaw(w, []byte("null"), nil)
		return
	}
	if err != nil {
		fail(w, backendError(err))
		return
	}
	if rec.Result == nil {
		rec.Result = json.RawMessage("null")
	}
	writeRaw(w, rec.Result, nil)
}

// sharedFindRun returns the run of the path, on the thread of the path
// (any thread for the stateless routes), for action.
func (s *Server) sharedFindRun(r *http.Request, action Action) (RunRecord, error) {
	tid, rid, err := parseRunPath(r)
	if err != nil {
		return RunRecord{}, err
	}
	rec, err := s.cfg.backend.Run(r.Context(), rid)
	if errors.Is(err, ErrNotFound) || err == nil && tid != "" && rec.ThreadID != tid {
		return RunRecord{}, errRunNotFound()
	}
	if err == nil {
		err = s.authorizeRun(r.Context(), rec, action)
	}
	return rec, err
}

func (s *Server) sharedGetRun(w http.ResponseWriter, r *http.Request) {
	rec, err := s.sharedFindRun(r, ActionRead)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func (s *Server) sharedJoinRun(w http.ResponseWriter, r *http.Request) {
	rec, err := s.sharedFindRun(r, ActionRead)
	if err != nil {
		fail(w, err)
		return
	}
	s.sharedAnswerWhenDone(w, r, rec.ID)
}

func (s *Server) sharedListRuns(w http.ResponseWriter, r *http.Request) {
	q, err := parseRunList(r)
	if err != nil {
		fail(w, err)
		return
	}
	if _, _, err := s.authorizedThread(r.Context(), q.threadID, ActionRead, nil); err != nil {
		fail(w, err)
		return
	}
	out, total, err := s.cfg.backend.ListRuns(r.Context(), q.threadID, q.status, q.limit, q.offset)
	if err != nil {
		fail(w, backendError(err))
		return
	}
	setPages(w, total, q.limit, q.offset)
	if out == nil {
		out = []RunRecord{}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) sharedCancelRun(w http.ResponseWriter, r *http.Request) {
	rec, err := s.sharedFindRun(r, ActionUpdate)
	if err != nil {
		fail(w, err)
		return
	}
	wait, err := parseRunCancel(r)
	if err != nil {
		fail(w, err)
		return
	}
	if _, err := s.cfg.backend.CancelRun(r.Context(), rec.ID, "cancelled by request"); err != nil {
		fail(w, backendError(err))
		return
	}
	s.shared.poke("", rec.ID)
	s.shared.notify(rec.ID)
	if !wait {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if _, err := s.waitEnded(r.Context(), rec.ID); err == nil || errors.Is(err, ErrNotFound) {
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) sharedDeleteRun(w http.ResponseWriter, r *http.Request) {
	rec, err := s.sharedFindRun(r, ActionDelete)
	if err != nil {
		fail(w, err)
		return
	}
	if err := s.cfg.backend.DeleteRun(r.Context(), rec.ID); err != nil {
		if errors.Is(err, ErrThreadBusy) {
			fail(w, errorf(http.StatusConflict, "run %s is not ended: cancel it first", rec.ID))
			return
		}
		fail(w, backendError(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) sharedStreamRun(w http.ResponseWriter, r *http.Request) {
	rec, sp, err := s.sharedNewRun(r, true)
	if err != nil {
		fail(w, err)
		return
	}
	defer sp.release()
	s.sharedSSE(w, r, rec, 0, sp.body.OnDisconnect == "cancel", sp.body.StreamResumable)
}

func (s *Server) sharedJoinRunStream(w http.ResponseWriter, r *http.Request) {
	rec, err := s.sharedFindRun(r, ActionRead)
	if err != nil {
		fail(w, err)
		return
	}
	from, err := parseLastEventID(r)
	if err != nil {
		fail(w, err)
		return
	}
	var kw runKwargs
	_ = json.Unmarshal(rec.Kwargs, &kw)
	s.sharedSSE(w, r, rec, from, truthy(r.URL.Query().Get("cancel_on_disconnect")), kw.StreamResumable)
}

// sharedSSE streams the run's events from id from on, whichever process
// executes it, until the run ended or the client went away (cancelling
// the run then when cancelOnGone).
func (s *Server) sharedSSE(w http.ResponseWriter, r *http.Request, rec RunRecord, from int, cancelOnGone, resumable bool) {
	if h, ok := s.cfg.backend.(eventHolder); ok {
		defer h.holdEvents(rec.ID)()
	}
	gone := true
	defer func() {
		if gone && cancelOnGone {
			ctx, stop := context.WithTimeout(context.Background(), s.cfg.leaseTTL)
			defer stop()
			if _, err := s.cfg.backend.CancelRun(ctx, rec.ID, "client disconnected (on_disconnect cancel)"); err == nil {
				s.shared.poke("", rec.ID)
			}
		}
	}()
	setStreamHeaders(w, sharedLocation(rec), resumable)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	ctx := r.Context()
	next, wait := from, s.cfg.poll
	done := func() {}
	defer func() { done() }()
	for {
		prev := done
		var changed <-chan struct{}
		changed, done = s.watchRun(rec.ID)
		prev() // after the next watch: what the watcher keeps of the run carries over
		cur, err := s.cfg.backend.Run(ctx, rec.ID)
		if errors.Is(err, ErrNotFound) {
			// Deleted (rolled back, or its thread deleted) with its
			// events: the stream ends.
			gone = false
			_, _ = fmt.Fprintf(w, "event: end\ndata: null\nid: %d\n\n", next)
			return
		}
		var evs []Event
		if err == nil {
			evs, err = s.cfg.backend.Events(ctx, rec.ID, next)
		}
		if errEventsDropped(err) {
			// Dropped past the Backend's bound: the stream says so.
			gone = false
			data, _ := json.Marshal(runErrorData{Error: "EventsDropped", Message: err.Error()})
			_, _ = fmt.Fprintf(w, "event: error\ndata: %s\n\n", data)
			return
		}
		if err != nil && !IsTransient(err) || ctx.Err() != nil {
			return
		}
		if err != nil {
			// A transient fault: waited out, as a run with nothing new.
			select {
			case <-time.After(wait):
				wait = s.cfg.backoff(wait)
			case <-ctx.Done():
				return
			}
			continue
		}
		for _, ev := range evs {
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\nid: %d\n\n", ev.Name, ev.Data, ev.ID); err != nil {
				return
			}
			next = ev.ID + 1
		}
		if len(evs) > 0 {
			if err := rc.Flush(); err != nil {
				return
			}
			wait = s.cfg.poll
			if cur.ended() || !s.pushed() {
				continue
			}
			// Pushed: the watch, made before the reads, tells of what
			// came after them.
		} else if cur.ended() {
			gone = false
			return
		}
		select {
		case <-changed:
		case <-s.pollAfter(wait):
			wait = s.cfg.backoff(wait)
		case <-ctx.Done():
			return
		}
	}
}

// shutdownShared stops claiming runs and releases the runs executing here
// to other processes, waiting until they returned or ctx is done.
// A server with its own MemoryBackend cancels its runs instead: they end
// "interrupted".
func (s *Server) shutdownShared(ctx context.Context) error {
	sh := s.shared
	if s.local {
		s.cancelLocal(ctx)
	}
	sh.stop()
	if !s.local {
		sh.mu.Lock()
		for _, lr := range sh.local {
			lr.cancel(errShutdown)
		}
		sh.mu.Unlock()
	}
	done := make(chan struct{})
	go func() { sh.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("server: shutdown: %w", ctx.Err())
	}
	if s.local {
		s.cancelLocal(ctx) // runs a request queued meanwhile
	}
	return nil
}

// cancelLocal cancels every pending and running run of the server's own
// MemoryBackend: a pending run ends at once, a running one at its next
// lease renewal, made now.
func (s *Server) cancelLocal(ctx context.Context) {
	for _, id := range s.cfg.backend.(*MemoryBackend).activeRuns() {
		if _, err := s.cfg.backend.CancelRun(ctx, id, "server shutting down"); err == nil {
			s.shared.poke("", id)
			s.shared.notify(id)
		}
	}
}
