//go:build unix

package durabilitytest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/state"
)

var serverPauseTrials = flag.Int("serverpause.trials", 4, "SIGSTOP trials of TestPausedServer (the issue's measure: -serverpause.trials=20)")

// ServerBackend is a [server.Backend] under test, sharing its database
// with the checkpointer of Saver.
type ServerBackend struct {
	// Saver is the checkpointer on the same database: its Fresh makes the
	// database, its Open the saver the server processes share, its
	// WriteProbe sees a process inside a write transaction.
	Saver Backend
	// Open opens the server.Backend on the database addr (after the
	// saver, which makes a PostgreSQL schema), and returns the function
	// that closes it. On PostgreSQL its sessions carry [SessionName] as
	// their application_name, so that WriteProbe sees them.
	Open func(ctx context.Context, addr string) (server.Backend, func(), error)
}

// SessionName is the application_name of this process's PostgreSQL
// sessions, by which the PostgreSQL WriteProbe finds them.
func SessionName() string { return appName(os.Getpid()) }

// The server processes of PausedServer.
const (
	// ServerPauseTTL is both the run lease (server.WithRunLeaseTTL) and
	// the graph's thread lease (graph.WithLeaseTTL) of the servers.
	ServerPauseTTL = time.Second
	// serverStepDelay is how long each step of the served graph takes.
	serverStepDelay = 50 * time.Millisecond
	// serverSteps is how many steps a run makes in all.
	serverSteps = 12
	// serverGraph is the served graph's name.
	serverGraph = "spin"
)

// spinState is the state of the graph the server processes serve: each
// step counts N up and records the process that made it, in Pid and in
// Steps ("pid:n").
type spinState struct {
	Limit state.Value[int]     `json:"limit"`
	N     state.Value[int]     `json:"n"`
	Pid   state.Value[int]     `json:"pid"`
	Steps state.Append[string] `json:"steps"`
}

// serverNote is what a server child reports on its fd 3: its address, and
// each write it makes to the run store or the checkpointer, with its
// outcome.
type serverNote struct {
	// Op is url (the child serves at URL), claim (it claimed Run),
	// free (its worker asked for a next run: the attempt it executed
	// ended), or the write: renew, start, release, finish, append (an
	// event, Name), put or putwrites (a checkpoint of Pid, or writes).
	Op  string `json:"op"`
	URL string `json:"url,omitempty"`
	// T is when the call began, in Unix nanoseconds; End, for a write,
	// when it returned.
	T       int64  `json:"t"`
	End     int64  `json:"end,omitempty"`
	Pid     int    `json:"pid,omitempty"`
	Run     string `json:"run,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	Name    string `json:"name,omitempty"`
	// Kind is "" (the write landed), "lost" (refused: server.ErrLeaseLost),
	// "fenced" (refused: *checkpoint.FencedError), "cancelled" (given up:
	// the run's context was cancelled, as the server does once it learnt
	// that it lost the run), "timeout" (given up: the call's deadline
	// passed, waiting for the database) or "other"; Err is the error.
	Kind string `json:"kind,omitempty"`
	Err  string `json:"err,omitempty"`
}

func noteKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.As(err, new(*checkpoint.FencedError)):
		return "fenced"
	case errors.Is(err, server.ErrLeaseLost):
		return "lost"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "other"
}

// noteWriter sends notes to the parent.
type noteWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
	t   testing.TB
}

func (w *noteWriter) note(n serverNote) {
	w.mu.Lock()
	defer w.mu.Unlock()
	require.NoError(w.t, w.enc.Encode(n))
}

// observedBackend reports the claims and writes of a server.Backend.
type observedBackend struct {
	server.Backend
	w *noteWriter
	// claimed is set while the (single) worker executes a claimed run.
	mu      sync.Mutex
	claimed bool
}

func (b *observedBackend) ClaimRun(ctx context.Context, holder string, ttl time.Duration, graphs []string) (*server.Claim, error) {
	t := time.Now().UnixNano()
	b.mu.Lock()
	if b.claimed {
		// With one worker, the dispatcher asks again only once the run it
		// claimed last returned.
		b.claimed = false
		b.w.note(serverNote{Op: "free", T: t})
	}
	b.mu.Unlock()
	c, err := b.Backend.ClaimRun(ctx, holder, ttl, graphs)
	if c != nil {
		b.mu.Lock()
		b.claimed = true
		b.mu.Unlock()
		b.w.note(serverNote{Op: "claim", T: t, Run: c.Run.ID, Attempt: c.Run.Attempt})
	}
	return c, err
}

func (b *observedBackend) noteWrite(op string, t int64, c *server.Claim, name string, err error) {
	n := serverNote{Op: op, T: t, End: time.Now().UnixNano(), Run: c.Run.ID, Attempt: c.Run.Attempt, Name: name, Kind: noteKind(err)}
	if err != nil {
		n.Err = err.Error()
	}
	b.w.note(n)
}

func (b *observedBackend) RenewLease(ctx context.Context, c *server.Claim, ttl time.Duration) (string, error) {
	t := time.Now().UnixNano()
	why, err := b.Backend.RenewLease(ctx, c, ttl)
	b.noteWrite("renew", t, c, "", err)
	return why, err
}

func (b *observedBackend) StartRun(ctx context.Context, c *server.Claim, checkpointID string) error {
	t := time.Now().UnixNano()
	err := b.Backend.StartRun(ctx, c, checkpointID)
	b.noteWrite("start", t, c, "", err)
	return err
}

func (b *observedBackend) ReleaseRun(ctx context.Context, c *server.Claim) error {
	t := time.Now().UnixNano()
	err := b.Backend.ReleaseRun(ctx, c)
	b.noteWrite("release", t, c, "", err)
	return err
}

func (b *observedBackend) FinishRun(ctx context.Context, c *server.Claim, res server.RunResult) error {
	t := time.Now().UnixNano()
	err := b.Backend.FinishRun(ctx, c, res)
	b.noteWrite("finish", t, c, res.Status, err)
	return err
}

func (b *observedBackend) AppendEvent(ctx context.Context, c *server.Claim, name string, data json.RawMessage) (int, error) {
	t := time.Now().UnixNano()
	id, err := b.Backend.AppendEvent(ctx, c, name, data)
	b.noteWrite("append", t, c, name, err)
	return id, err
}

// observedSaver reports the checkpoint writes of a saver; it passes the
// context on, so the writes stay fenced by the lease it carries.
type observedSaver struct {
	Saver
	w *noteWriter
}

func (s observedSaver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	t := time.Now().UnixNano()
	err := s.Saver.Put(ctx, cp)
	n := serverNote{Op: "put", T: t, End: time.Now().UnixNano(), Pid: pidOf(cp.Value("Pid")), Kind: noteKind(err)}
	if err != nil {
		n.Err = err.Error()
	}
	s.w.note(n)
	return err
}

func (s observedSaver) PutWrites(ctx context.Context, ref checkpoint.Ref, writes []checkpoint.Write) error {
	t := time.Now().UnixNano()
	err := s.Saver.PutWrites(ctx, ref, writes)
	n := serverNote{Op: "putwrites", T: t, End: time.Now().UnixNano(), Kind: noteKind(err)}
	if err != nil {
		n.Err = err.Error()
	}
	s.w.note(n)
	return err
}

// pidOf decodes a pid channel's JSON value (0 for none).
func pidOf(raw []byte) int {
	var pid int
	if json.Unmarshal(raw, &pid) != nil {
		return 0
	}
	return pid
}

// spinServerGraph is the graph the server children serve: Start → step →
// step … → End once N reaches Limit; each step takes serverStepDelay.
func spinServerGraph(t testing.TB, saver checkpoint.Saver, ttl time.Duration) *graph.Graph[spinState] {
	pid := os.Getpid()
	b := graph.New[spinState]()
	b.AddNode("step", func(ctx context.Context, s spinState) (spinState, error) {
		select {
		case <-time.After(serverStepDelay):
		case <-ctx.Done():
			return spinState{}, context.Cause(ctx)
		}
		n := s.N.Get() + 1
		return spinState{N: state.Set(n), Pid: state.Set(pid), Steps: state.Items(fmt.Sprintf("%d:%d", pid, n))}, nil
	})
	b.AddEdge(graph.Start, "step")
	b.AddConditionalEdges("step", func(_ context.Context, s spinState) (string, error) {
		if s.N.Get() >= s.Limit.Get() {
			return graph.End, nil
		}
		return "step", nil
	})
	g, err := b.Compile(graph.WithCheckpointer(saver), graph.WithLeaseTTL(ttl))
	require.NoError(t, err)
	return g
}

// ServerChild is the body of ChildTest in a server backend's test package:
// a graph server on the backend, one worker, reporting its writes on fd
// 3, until its stdin closes. Run on its own it is skipped.
func ServerChild(t *testing.T, sb ServerBackend) {
	if os.Getenv(envRole) != "server" {
		t.Skip("child process of TestPausedServer")
	}
	ctx := context.Background()
	addr := os.Getenv(envAddr)
	ttl, ok := leaseTTLFromEnv(t)
	require.True(t, ok, "%s not set", envLeaseTTL)
	w := &noteWriter{enc: json.NewEncoder(os.NewFile(3, "notes")), t: t}
	saver, err := sb.Saver.Open(ctx, addr)
	require.NoError(t, err)
	defer saver.Close()
	backend, closeBackend, err := sb.Open(ctx, addr)
	require.NoError(t, err)
	defer closeBackend()
	obs := observedSaver{saver, w}
	srv, err := server.New(server.Graph(serverGraph, spinServerGraph(t, obs, ttl)),
		server.WithCheckpointer(obs), server.WithBackend(&observedBackend{Backend: backend, w: w}),
		server.WithoutAuthLoopbackOnly(), server.WithHolder(os.Getenv(envName)+"-"+strconv.Itoa(os.Getpid())),
		server.WithRunLeaseTTL(ttl), server.WithPollInterval(20*time.Millisecond), server.WithWorkers(1))
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	w.note(serverNote{Op: "url", URL: hs.URL, Pid: os.Getpid(), T: time.Now().UnixNano()})
	_, err = io.Copy(io.Discard, os.Stdin) // until the parent closes it
	require.NoError(t, err)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, srv.Shutdown(sctx))
}

// serverProc is a server child and the notes it sent.
type serverProc struct {
	*proc
	url string

	mu    sync.Mutex
	notes []serverNote
	// drained is closed once every note was read (the child exited).
	drained chan struct{}
}

// startServerProc starts a server child; [serverProc.started] waits until
// it serves.
func startServerProc(t *testing.T, addr, name string) *serverProc {
	t.Helper()
	p := &serverProc{proc: startProc(t, name, true, env(envRole, "server"), env(envAddr, addr), env(envLeaseTTL, ServerPauseTTL.String())),
		drained: make(chan struct{})}
	go func() {
		defer close(p.drained)
		for {
			var n serverNote
			if err := p.dec.Decode(&n); err != nil {
				return // the child exited
			}
			p.mu.Lock()
			p.notes = append(p.notes, n)
			p.mu.Unlock()
		}
	}()
	return p
}

// started waits until the child serves, and records its address.
func (p *serverProc) started(t *testing.T) {
	t.Helper()
	n := p.await(t, "its address", func(n serverNote) bool { return n.Op == "url" })
	require.Equal(t, p.pid(), n.Pid)
	p.url = n.URL
}

// claimed returns the note of the child's claim of run rid, if it sent one.
func (p *serverProc) claimed(rid string) (serverNote, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range p.notes {
		if n.Op == "claim" && n.Run == rid {
			return n, true
		}
	}
	return serverNote{}, false
}

// await waits until the child sent a note that match accepts, and
// returns it.
func (p *serverProc) await(t *testing.T, what string, match func(serverNote) bool) serverNote {
	t.Helper()
	var n serverNote
	eventually(t, fmt.Sprintf("process %s (pid %d): %s", p.name, p.pid(), what), func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, x := range p.notes {
			if match(x) {
				n = x
				return true
			}
		}
		return p.done()
	}, func() string { return p.out.String() })
	require.NotEmpty(t, n.Op, "process %s (pid %d) exited before %s: %s", p.name, p.pid(), what, p.out.String())
	return n
}

// notesCopy returns the notes of the child so far.
func (p *serverProc) notesCopy() []serverNote {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.notes)
}

// returnedSince returns the notes of the writes of the child that
// returned at or after t: those it began at or after t, and those in
// flight at t (begun before, returned after).
func (p *serverProc) returnedSince(t time.Time) []serverNote {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []serverNote
	for _, n := range p.notes {
		if n.End >= t.UnixNano() && n.Op != "url" && n.Op != "claim" && n.Op != "free" {
			out = append(out, n)
		}
	}
	return out
}

// eventually waits until cond returns true, failing after a minute;
// detail is added to the failure.
func eventually(t *testing.T, what string, cond func() bool, detail func() string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\n%s", what, detail())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// postJSON posts body to url and decodes the answer into out.
func postJSON(t *testing.T, url string, body, out any) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "POST %s: %s", url, raw)
	require.NoError(t, json.Unmarshal(raw, out))
}

// serverPauseStats are PausedServer's figures.
type serverPauseStats struct {
	trials, during                  int
	landed, landedCalls             int
	refusedCalls, cancelledCalls    int
	inFlight                        int
	fencedPuts                      int
	firstRenew, firstOther          int
	inTx, aSteps, bSteps, takeovers int
	takeover                        time.Duration
}

// PausedServer runs -serverpause.trials trials (4 by default) of the
// fencing promise for the runs of server processes sharing a
// server.Backend and a checkpointer. In each, two server processes (the
// test binary, re-executed as [ServerChild], each with one worker and run
// and thread leases of [ServerPauseTTL]) start; a run is created through
// the HTTP API of one, of a graph whose every step records the pid of the
// process that made it in the state. The process that claims the run, A,
// is SIGSTOPped at a random moment between write transactions once it
// made a few steps. The other, B, takes the run over once A's lease
// expired, resumes it from A's last checkpoint and runs it on; A is
// SIGCONTed once B finished it, or (every other trial) while B still runs
// it. Every other pair of trials streams no step events, so that A's first
// write once resumed is a checkpoint as often as a lease renewal. Then:
//
//   - the run ends as B finished it: success, attempt 2, B's values, its
//     steps A's up to where B took over and B's after;
//   - no event after B's metadata event is A's (no values or updates of
//     A's pid, no second error or end);
//   - no checkpoint or write of A's lands after it was resumed, in the
//     database and as A itself saw its calls: each write it began after
//     SIGCONT was refused (server.ErrLeaseLost or *checkpoint.FencedError)
//     or given up (cancelled by the server once it learnt it lost the run,
//     or past its deadline);
//   - A's attempt ends: its worker asks for a next run.
func PausedServer(t *testing.T, sb ServerBackend) {
	skipShort(t)
	ctx := t.Context()
	addr := sb.Saver.Fresh(t)
	saver := openParent(t, sb.Saver, addr)
	backend, closeBackend, err := sb.Open(ctx, addr)
	require.NoError(t, err)
	t.Cleanup(closeBackend)
	probe := sb.Saver.WriteProbe(t, addr)
	var st serverPauseStats
	for trial := range *serverPauseTrials {
		serverPauseTrial(t, sb, addr, saver, backend, probe, trial%2 == 1, trial/2%2 == 1, &st)
	}
	t.Logf("%s: %d trials (A resumed while B ran: %d), run and thread lease TTL %v, %d steps of %v: "+
		"checkpoints and writes of the paused process A found in the database after it resumed: %d; "+
		"its calls that landed after it resumed: %d, refused: %d (checkpoint writes refused with FencedError: %d), "+
		"given up (its run cancelled for the lost lease, or its deadline passed): %d, in flight across the pause: %d; "+
		"its first write once resumed was its run lease's renewal in %d trials, a checkpoint or event in %d; "+
		"B's runs succeeded: %d of %d, taking over %v after A stopped on average; steps by A %d, by B %d; "+
		"stops inside a write transaction (retried): %d",
		sb.Saver.Name, st.trials, st.during, ServerPauseTTL, serverSteps, serverStepDelay,
		st.landed, st.landedCalls, st.refusedCalls, st.fencedPuts, st.cancelledCalls, st.inFlight, st.firstRenew, st.firstOther,
		st.takeovers, st.trials, st.takeover/time.Duration(max(st.takeovers, 1)), st.aSteps, st.bSteps, st.inTx)
	require.Zero(t, st.landed)
	require.Zero(t, st.landedCalls)
}

// countPid counts the checkpoints of thread whose pid is pid, and the
// writes of pid against them.
func countPid(t *testing.T, saver Saver, thread string, pid int) int {
	t.Helper()
	n := 0
	for tup, err := range saver.List(t.Context(), thread, checkpoint.ListOptions{}) {
		require.NoError(t, err)
		if pidOf(tup.Value("Pid")) == pid {
			n++
		}
		for _, w := range tup.PendingWrites {
			if w.Channel == "Pid" && pidOf(w.Value) == pid {
				n++
			}
		}
	}
	return n
}

// latestPid returns the N and pid of thread's latest checkpoint.
func latestCheckpoint(t *testing.T, saver Saver, thread string) (n, pid int) {
	t.Helper()
	tup, err := saver.Get(t.Context(), checkpoint.Ref{ThreadID: thread})
	if errors.Is(err, checkpoint.ErrNotFound) {
		return 0, 0
	}
	require.NoError(t, err)
	return pidOf(tup.Value("N")), pidOf(tup.Value("Pid"))
}

func serverPauseTrial(t *testing.T, sb ServerBackend, addr string, saver Saver, backend server.Backend,
	probe func(int) bool, during, quiet bool, st *serverPauseStats) {
	ctx := t.Context()
	trial := st.trials
	st.trials++
	// Two servers start at once; the one that claims the run is A, the
	// other B (idle: A holds the only run).
	p1, p2 := startServerProc(t, addr, fmt.Sprintf("%d-1", trial)), startServerProc(t, addr, fmt.Sprintf("%d-2", trial))
	p1.started(t)
	p2.started(t)
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	postJSON(t, p1.url+"/threads", map[string]any{}, &th)
	tid := th.ThreadID
	var rn struct {
		RunID string `json:"run_id"`
	}
	// Every other pair of trials streams no step events: then A's next
	// write after it resumed is as likely a checkpoint as a lease renewal.
	modes := []string{"values", "updates"}
	if quiet {
		modes = []string{"custom"}
	}
	postJSON(t, p1.url+"/threads/"+tid+"/runs", map[string]any{"assistant_id": serverGraph,
		"input": map[string]any{"limit": serverSteps}, "stream_mode": modes}, &rn)
	rid := rn.RunID
	a, b := p1, p2
	eventually(t, "a claim of run "+rid, func() bool {
		if _, ok := p2.claimed(rid); ok {
			a, b = p2, p1
			return true
		}
		_, ok := p1.claimed(rid)
		return ok
	}, func() string { return p1.out.String() + p2.out.String() })
	eventually(t, "A's third step", func() bool {
		n, _ := latestCheckpoint(t, saver, tid)
		return n >= 3
	}, a.out.String)

	for {
		time.Sleep(rand.N(serverStepDelay))
		require.NoError(t, syscall.Kill(a.pid(), syscall.SIGSTOP))
		waitStopped(t, a.pid())
		if !probe(a.pid()) {
			break
		}
		// Stopped inside a write transaction, which B would wait for:
		// resume A and stop it again.
		st.inTx++
		require.NoError(t, syscall.Kill(a.pid(), syscall.SIGCONT))
	}
	stopped := time.Now()
	rec, err := backend.Run(ctx, rid)
	require.NoError(t, err)
	require.Equal(t, 1, rec.Attempt, "trial %d: A lost its run before it was stopped", trial)
	require.Equal(t, "running", rec.Status, "trial %d", trial)
	aN, aPid := latestCheckpoint(t, saver, tid)
	require.Equal(t, a.pid(), aPid, "trial %d: the latest checkpoint when A stopped", trial)

	// B takes the run over once A's lease expired, and runs it on.
	took := b.await(t, "taking run "+rid+" over", func(n serverNote) bool { return n.Op == "claim" && n.Run == rid })
	require.Equal(t, 2, took.Attempt, "trial %d", trial)
	// Where B took over: a checkpoint A had sent as it was stopped may
	// have been committed by the database since (A's lease still held
	// then), and B resumes from it.
	aN, aPid = latestCheckpoint(t, saver, tid)
	require.Equal(t, a.pid(), aPid, "trial %d: the latest checkpoint when B took the run over", trial)
	st.takeovers++
	st.takeover += time.Unix(0, took.T).Sub(stopped)
	ended := func() bool {
		rec, err := backend.Run(ctx, rid)
		require.NoError(t, err)
		return rec.Status != "running" && rec.Status != "pending"
	}
	bRunning := false // B still runs the run when A resumes
	if during {
		eventually(t, "B's first step", func() bool {
			_, pid := latestCheckpoint(t, saver, tid)
			return pid == b.pid() || ended()
		}, b.out.String)
		bRunning = !ended()
	} else {
		eventually(t, "B finishing the run", ended, b.out.String)
	}
	if bRunning {
		st.during++
	}
	before := countPid(t, saver, tid, a.pid())

	resumed := time.Now()
	require.NoError(t, syscall.Kill(a.pid(), syscall.SIGCONT))
	a.await(t, "ending its attempt", func(n serverNote) bool { return n.Op == "free" && n.T >= resumed.UnixNano() })
	eventually(t, "B finishing the run", ended, b.out.String)
	// Both exit (and A's notes are all read) before anything is counted:
	// nothing A does after that can land.
	b.close()
	a.close()
	<-a.drained
	st.landed += countPid(t, saver, tid, a.pid()) - before

	// A's own view: every write it began once resumed was refused. A
	// write in flight across the pause (A was stopped between its start
	// and its end, outside a transaction) may have landed before A was
	// stopped: what it did is judged by the database above, not here.
	calls := a.returnedSince(resumed)
	require.NotEmpty(t, calls, "trial %d: A made no write after it resumed; its notes: %+v", trial, a.notesCopy())
	var seq []string
	for _, n := range calls {
		inFlight := n.T < resumed.UnixNano()
		switch {
		case inFlight:
			st.inFlight++
		case n.Kind == "":
			st.landedCalls++
			t.Errorf("trial %d: a write of A landed after it resumed: %+v", trial, n)
		case n.Kind == "fenced" || n.Kind == "lost":
			st.refusedCalls++
			if n.Kind == "fenced" {
				st.fencedPuts++
			}
		case n.Kind == "cancelled" || n.Kind == "timeout":
			st.cancelledCalls++
		default:
			t.Errorf("trial %d: a write of A failed other than by its lost lease: %+v", trial, n)
		}
		op := n.Op
		if n.Name != "" {
			op += " " + n.Name
		}
		op += ": " + cmp.Or(n.Kind, "landed")
		if inFlight {
			op += " (in flight across the pause)"
		}
		seq = append(seq, op)
	}
	when := "after B finished the run"
	if bRunning {
		when = "while B ran it"
	}
	t.Logf("trial %d: A (pid %d) stopped after step %d; B (pid %d) took the run over %v later; A resumed %s; A's writes once resumed: %s",
		trial, a.pid(), aN, b.pid(), time.Unix(0, took.T).Sub(stopped).Round(time.Millisecond), when, strings.Join(seq, ", "))
	if calls[0].Op == "renew" {
		st.firstRenew++
	} else {
		st.firstOther++
	}

	// The run, its thread and its last checkpoint are B's.
	rec, err = backend.Run(ctx, rid)
	require.NoError(t, err)
	require.Equal(t, "success", rec.Status, "trial %d", trial)
	require.Equal(t, 2, rec.Attempt, "trial %d", trial)
	var res struct {
		N     int      `json:"n"`
		Pid   int      `json:"pid"`
		Steps []string `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(rec.Result, &res), "trial %d: result %s", trial, rec.Result)
	require.Equal(t, serverSteps, res.N, "trial %d", trial)
	require.Equal(t, b.pid(), res.Pid, "trial %d", trial)
	var want []string
	for i := 1; i <= serverSteps; i++ {
		pid := b.pid()
		if i <= aN {
			pid = a.pid()
		}
		want = append(want, fmt.Sprintf("%d:%d", pid, i))
	}
	require.Equal(t, want, res.Steps, "trial %d: steps (A made %d before it stopped)", trial, aN)
	st.aSteps += aN
	st.bSteps += serverSteps - aN
	thr, err := backend.Thread(ctx, tid)
	require.NoError(t, err)
	require.Equal(t, "idle", thr.Status, "trial %d", trial)
	require.JSONEq(t, string(rec.Result), string(thr.Values), "trial %d: the thread's values", trial)
	n, pid := latestCheckpoint(t, saver, tid)
	require.Equal(t, []int{serverSteps, b.pid()}, []int{n, pid}, "trial %d: the latest checkpoint", trial)

	// The events: A's up to B's metadata event, B's after it.
	evs, err := backend.Events(ctx, rid, 0)
	require.NoError(t, err)
	checkServerEvents(t, trial, evs, a.pid(), b.pid(), aN)
}

// checkServerEvents checks the events of a run that process a began and
// process b took over after a's step aN, and finished.
func checkServerEvents(t *testing.T, trial int, evs []server.Event, a, b, aN int) {
	t.Helper()
	takeover := -1
	for i, ev := range evs {
		require.Equal(t, i, ev.ID, "trial %d: event ids", trial)
		if ev.Name == "metadata" {
			var md struct {
				Attempt int `json:"attempt"`
			}
			require.NoError(t, json.Unmarshal(ev.Data, &md))
			if md.Attempt == 2 {
				require.Equal(t, -1, takeover, "trial %d: two metadata events of attempt 2", trial)
				takeover = i
			}
		}
	}
	require.Positive(t, takeover, "trial %d: no metadata event of B's attempt: %v", trial, evs)
	resumedFrom := false // B's values event of the state it resumed from
	for i, ev := range evs {
		owner := a
		if i >= takeover {
			owner = b
		}
		switch ev.Name {
		case "metadata":
		case "values", "updates":
			if ev.Name == "values" && i > takeover && !resumedFrom {
				// B's first values event shows the checkpoint of A's that
				// it resumes from.
				resumedFrom = true
				var v struct{ N, Pid int }
				require.NoError(t, json.Unmarshal(ev.Data, &v))
				if v.Pid == a {
					require.Equal(t, aN, v.N, "trial %d: event %d, the state B resumed from: %s", trial, i, ev.Data)
					continue
				}
			}
			for _, pid := range eventPids(t, ev.Data) {
				if pid != 0 { // 0: the input's values, before any step
					require.Equal(t, owner, pid, "trial %d: event %d (%s) %s", trial, i, ev.Name, ev.Data)
				}
			}
		case "end":
			require.Equal(t, len(evs)-1, i, "trial %d: an end event before the last: %v", trial, evs)
		default:
			t.Fatalf("trial %d: event %d: %s %s", trial, i, ev.Name, ev.Data)
		}
	}
	require.Equal(t, "end", evs[len(evs)-1].Name, "trial %d", trial)
}

// eventPids returns the pids a values or updates event names: {"pid": …}
// or {"step": {"pid": …}}.
func eventPids(t *testing.T, data json.RawMessage) []int {
	t.Helper()
	var v map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &v))
	if raw, ok := v["pid"]; ok {
		return []int{pidOf(raw)}
	}
	var out []int
	for _, upd := range v {
		var u map[string]json.RawMessage
		if json.Unmarshal(upd, &u) == nil {
			if raw, ok := u["pid"]; ok {
				out = append(out, pidOf(raw))
			}
		}
	}
	if strings.Contains(string(data), `"pid"`) {
		require.NotEmpty(t, out, "an event naming a pid: %s", data)
	}
	return out
}
