package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/examples/internal/sandboxnote"
	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/tools"
)

// defaultServeAddr is where `retrai serve` listens by default: loopback
// only.
const defaultServeAddr = "127.0.0.1:8484"

// minTokenLen is the shortest token `retrai serve --token` accepts: the
// token lets whoever has it run commands on this machine.
const minTokenLen = 16

// serveCommand is `retrai serve`.
func serveCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("retrai serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", defaultServeAddr, "address to listen on")
	token := fs.String("token", "", fmt.Sprintf("bearer token the API requires, at least %d characters (default: a random one, printed at start)", minTokenLen))
	db := fs.String("db", "", "SQLite file or postgres:// URL for runs and checkpoints (default "+runs.DefaultDB()+")")
	allowEndpoint := fs.Bool("allow-config-endpoint", false, "let a project's "+goals.ConfigFile+" choose the model's endpoint (a base URL in its model), where your API key is sent; also $"+allowEndpointEnv+"=1")
	// A server runs whatever its clients ask for: no sandbox, no
	// commands, unless --sandbox says otherwise.
	sandbox := tools.SandboxRequired
	fs.Func("sandbox", "auto|required|off: how the runs' commands, tests and goal checks are confined; required refuses them where there is no sandbox (default required)", func(v string) error {
		mode, err := tools.ParseSandboxMode(v)
		sandbox = mode
		return err
	})
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: retrai serve [flags]\n\nServes the run API (/api/…) and the dashboard (/).\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitAchieved
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "retrai serve: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "retrai:", err)
		return exitNotDone
	}
	switch {
	case *token == "":
		*token = rand.Text()
	case len(*token) < minTokenLen:
		fmt.Fprintf(stderr, "retrai serve: --token must be at least %d characters long (it lets whoever has it run commands on this machine); leave it out for a random one\n", minTokenLen)
		return exitUsage
	}
	if v := strings.TrimSpace(os.Getenv(allowEndpointEnv)); v == "1" || strings.EqualFold(v, "true") {
		*allowEndpoint = true
	}

	opts, err := managerOptions(*db, *allowEndpoint, sandbox)
	if err != nil {
		fmt.Fprintln(stderr, "retrai:", err)
		return exitUsage
	}
	m, err := runs.Open(ctx, opts)
	if err != nil {
		return fail(err)
	}
	defer m.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail(err)
	}
	s := newServer(m, *token, stderr)
	srv := &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	srv.RegisterOnShutdown(s.shutdown) // the WebSockets, which Shutdown does not track

	host := ln.Addr().String()
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		host = net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
	}
	fmt.Fprintf(stdout, "retrai serve: listening on %s (db %s)\n  dashboard: http://%s/?token=%s\n  API:       curl -H 'Authorization: Bearer %s' http://%s/api/runs\n",
		ln.Addr(), displayDB(m.DB()), host, *token, *token, host)
	fmt.Fprint(stdout, "  "+strings.ReplaceAll(strings.TrimSuffix(sandboxnote.Lines(tools.SandboxStatus(), sandbox), "\n"), "\n", "\n  ")+"\n")
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		fmt.Fprintln(stdout, "  warning: not a loopback address — anyone who can reach it and has the token can run commands on this machine")
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
		fmt.Fprintln(stdout, "retrai serve: shutting down")
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err = srv.Shutdown(sctx)
		cancel()
	}
	s.shutdown()
	s.wait()
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fail(err)
	}
	return exitAchieved
}

// server is the HTTP API and dashboard of `retrai serve`.
type server struct {
	m       *runs.Manager
	token   string
	log     *eventLog
	logw    io.Writer
	changes *changeTracker // the copies of the runs' projects
	page    []byte         // the dashboard, its graph drawn in

	base   context.Context // done on shutdown: the WebSockets close
	cancel context.CancelFunc
	ws     sync.WaitGroup // the WebSocket handlers
}

// newServer returns the server of m's runs, requiring token. It records
// the events of m's bus from now on, until the bus is closed; logw gets a
// line per run created or resumed.
func newServer(m *runs.Manager, token string, logw io.Writer) *server {
	base, cancel := context.WithCancel(context.Background())
	s := &server{m: m, token: token, logw: logw, base: base, cancel: cancel, changes: newChangeTracker(), page: dashboardPage()}
	s.log = newEventLog(base, m.Bus(), s.afterEvent)
	return s
}

// afterEvent returns the events the server adds after ev on a run's
// stream: after a human check, the changes to the run's project since its
// start or its last check (see workspaceChanges). A run that has ended for
// good loses its copy of the project.
func (s *server) afterEvent(ev events.Event) []events.Event {
	switch ev.Kind() {
	case retrai.KindHumanCheck:
		return []events.Event{{RunID: ev.RunID, Step: ev.Step, Node: ev.Node, Time: time.Now(), Data: s.changes.changes(ev.RunID)}}
	case runs.KindEnded:
		if e, ok := ev.Data.(runs.Ended); ok && e.Status.Final() {
			s.changes.forget(ev.RunID)
		}
	}
	return nil
}

// shutdown closes the WebSockets (going away).
func (s *server) shutdown() { s.cancel() }

// wait waits for the WebSocket handlers to return.
func (s *server) wait() { s.ws.Wait() }

//go:embed dashboard.html
var dashboardHTML []byte

// handler returns the server's routes.
//
//	GET  /                        the dashboard (token: header or ?token=)
//	POST /api/runs                create and start a run
//	GET  /api/runs                list the runs, newest first
//	GET  /api/runs/{id}           a run
//	POST /api/runs/{id}/resume    answer a run's human check
//	GET  /api/runs/{id}/events    a WebSocket of the run's events (token: header or ?token=)
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	page, api := s.auth(true), s.auth(false)
	mux.Handle("GET /{$}", page(http.HandlerFunc(s.handleDashboard)))
	mux.Handle("POST /api/runs", api(http.HandlerFunc(s.handleCreate)))
	mux.Handle("GET /api/runs", api(http.HandlerFunc(s.handleList)))
	mux.Handle("GET /api/runs/{id}", api(http.HandlerFunc(s.handleGet)))
	mux.Handle("POST /api/runs/{id}/resume", api(http.HandlerFunc(s.handleResume)))
	mux.Handle("GET /api/runs/{id}/events", page(http.HandlerFunc(s.handleEvents)))
	// JSON answers for the other methods and paths under /api/.
	for path, allow := range map[string]string{
		"/api/runs":             "GET, POST",
		"/api/runs/{id}":        "GET",
		"/api/runs/{id}/resume": "POST",
		"/api/runs/{id}/events": "GET",
	} {
		mux.Handle(path, api(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, "method %s not allowed (allowed: %s)", r.Method, allow)
		})))
	}
	mux.Handle("/api/", api(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path)
	})))
	return mux
}

// auth requires the server's token as "Authorization: Bearer <token>" or,
// with query, as the query parameter token (browsers cannot set headers
// on WebSockets, nor on the page they open).
func (s *server) auth(query bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got, ok := bearer(r.Header.Get("Authorization"))
			if !ok && query {
				got, ok = r.URL.Query().Get("token"), r.URL.Query().Has("token")
			}
			if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="retrai"`)
				msg := "missing or wrong token: send Authorization: Bearer <token> (the token retrai serve printed)"
				if query {
					msg = "missing or wrong token: open the dashboard URL retrai serve printed (…/?token=<token>)"
				}
				writeError(w, http.StatusUnauthorized, "%s", msg)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// bearer returns the token of an Authorization header of the Bearer
// scheme.
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return token, true
}

// errorBody is the body of every error answer.
type errorBody struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, errorBody{Error: fmt.Sprintf(format, args...)})
}

// decodeBody decodes the request's JSON object into v: unknown fields,
// trailing data and bodies over 1 MiB are errors.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the request body must be a JSON object")
		}
		return fmt.Errorf("bad JSON body: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("bad JSON body: data after the JSON object")
	}
	return nil
}

// runError writes the answer for an error of the manager.
func runError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, runs.ErrNotFound):
		writeError(w, http.StatusNotFound, "%v", err)
	case errors.Is(err, runs.ErrBusy), errors.Is(err, runs.ErrLive), errors.Is(err, runs.ErrFinal), errors.Is(err, runs.ErrNotPending),
		errors.Is(err, runs.ErrDecisionRequired), errors.Is(err, runs.ErrNotActive):
		writeError(w, http.StatusConflict, "%v", err)
	case errors.Is(err, runs.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, "%v", err)
	default:
		writeError(w, http.StatusInternalServerError, "%v", err)
	}
}

func (s *server) handleDashboard(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer") // the URL holds the token
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	_, _ = w.Write(s.page)
}

// createRequest is the body of POST /api/runs.
type createRequest struct {
	Goal          string `json:"goal"`
	Cwd           string `json:"cwd"`
	Model         string `json:"model"`
	MaxIterations int    `json:"max_iterations"`
	HITL          bool   `json:"hitl"`
}

// handleCreate is POST /api/runs: it creates the run and starts it. As with
// `retrai run`, a run without a model — none given, none in $RETRAI_MODEL
// or the .retrai.yml of cwd — and without cwd is the offline demo on a
// fresh copy of the sample named by goal (default go-test).
func (s *server) handleCreate(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if req.MaxIterations < 0 {
		writeError(w, http.StatusBadRequest, "max_iterations must not be negative")
		return
	}
	f := &runFlags{goal: req.Goal, model: req.Model, cwd: req.Cwd, maxIterations: req.MaxIterations, hitl: req.HITL, set: map[string]bool{}}
	if f.cwd == "" {
		f.cwd = "."
	} else {
		f.set["cwd"] = true
	}
	cfg, demo, err := newRunConfig(f)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	run, err := createRun(r.Context(), s.m, cfg, demo)
	if errors.Is(err, runs.ErrConfigEndpoint) {
		writeError(w, http.StatusBadRequest, "%v (send a model in the request, or start retrai serve with --allow-config-endpoint if you trust this project)", err)
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	// The project as it was before the agent touched it: what the first
	// human check is compared with.
	s.changes.mark(run.ID, run.Cwd, "start", false)
	if err := s.m.Start(r.Context(), run.ID); err != nil {
		s.changes.forget(run.ID)
		runError(w, err)
		return
	}
	if demo != "" {
		fmt.Fprintf(s.logw, "run %s: offline demo (scripted model) on the %s sample in %s\n", run.ID, demo, run.Cwd)
	} else {
		fmt.Fprintf(s.logw, "run %s: goal %s in %s, model %s\n", run.ID, run.Goal, run.Cwd, run.Model)
	}
	w.Header().Set("Location", "/api/runs/"+run.ID)
	writeJSON(w, http.StatusCreated, s.view(r.Context(), run.ID, run))
}

// apiRun is a run as the API shows it: its record, whether it can be
// resumed, and where it executes when another process does.
type apiRun struct {
	runs.Run
	// Resumable: POST /api/runs/{id}/resume continues it (interrupted,
	// error) or answers its human check (waiting).
	Resumable bool `json:"resumable"`
	// Live, for a running run that another process executes, says which
	// and until when it holds the run (see runs.LiveError).
	Live string `json:"live,omitempty"`
}

// view returns the run id as the API shows it, fresh from the manager
// (run, as the caller knows it, if it cannot be read).
func (s *server) view(ctx context.Context, id string, run runs.Run) apiRun {
	if cur, live, err := s.m.Inspect(ctx, id); err == nil {
		return apiRunOf(cur, live)
	}
	return apiRunOf(run, nil)
}

// apiRunOf returns run as the API shows it, with live as
// runs.Manager.Inspect returned it.
func apiRunOf(run runs.Run, live *runs.LiveError) apiRun {
	v := apiRun{Run: run, Resumable: run.Resumable()}
	if live != nil {
		v.Live = live.Error()
	}
	return v
}

// listResponse is the body of GET /api/runs.
type listResponse struct {
	Runs []apiRun `json:"runs"`
}

func (s *server) handleList(w http.ResponseWriter, r *http.Request) {
	rs, live, err := s.m.InspectAll(r.Context())
	if err != nil {
		runError(w, err)
		return
	}
	out := make([]apiRun, 0, len(rs))
	for i, run := range rs {
		out = append(out, apiRunOf(run, live[i]))
	}
	writeJSON(w, http.StatusOK, listResponse{Runs: out})
}

func (s *server) handleGet(w http.ResponseWriter, r *http.Request) {
	run, live, err := s.m.Inspect(r.Context(), r.PathValue("id"))
	if err != nil {
		runError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, apiRunOf(run, live))
}

// resumeRequest is the body of POST /api/runs/{id}/resume.
type resumeRequest struct {
	// Decision answers the human check of a waiting run: "approve" or
	// "abort". Other runs take none.
	Decision string `json:"decision"`
}

// handleResume is POST /api/runs/{id}/resume: it answers the human check of
// a waiting run, which goes on (approve) or ends (abort), or continues an
// interrupted run or one stopped on an error — one whose process died
// too, once its lease has expired — from its last checkpoint. A run that
// is live in another process is refused (409), and its record left alone.
func (s *server) handleResume(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req resumeRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if req.Decision != "" && req.Decision != runs.DecisionApprove && req.Decision != runs.DecisionAbort {
		writeError(w, http.StatusBadRequest, "decision must be %q or %q, not %q", runs.DecisionApprove, runs.DecisionAbort, req.Decision)
		return
	}
	run, err := s.m.Get(r.Context(), id)
	if err != nil {
		runError(w, err)
		return
	}
	switch {
	case run.Status == runs.StatusWaiting && req.Decision == "":
		writeError(w, http.StatusBadRequest, "run %s is waiting for a human check: the decision must be %q or %q", id, runs.DecisionApprove, runs.DecisionAbort)
		return
	case run.Status != runs.StatusWaiting && req.Decision != "":
		hint := ""
		if run.Resumable() {
			hint = ": resume it without a decision"
		}
		writeError(w, http.StatusConflict, "run %s is %s, not waiting for a human check%s", id, run.Status, hint)
		return
	case run.Status.Final():
		writeError(w, http.StatusConflict, "run %s has ended (%s): it cannot be resumed", id, run.Status)
		return
	}
	switch req.Decision {
	case runs.DecisionApprove:
		// What the human approved: the next check is compared with it.
		s.changes.mark(id, run.Cwd, "check", false)
	case "":
		// An interrupted run goes on from its last checkpoint: its
		// changes count from its start or last check if this server saw
		// them, else from now.
		s.changes.mark(id, run.Cwd, "resume", true)
	}
	if err := s.m.Resume(r.Context(), id, req.Decision); err != nil {
		runError(w, err)
		return
	}
	what := req.Decision
	if what == "" {
		what = "resumed"
	}
	fmt.Fprintf(s.logw, "run %s: %s\n", id, what)
	writeJSON(w, http.StatusAccepted, s.view(r.Context(), id, run))
}

// Messages of the events WebSocket besides the events themselves.
const (
	// wsKindState: the run's record, {"kind":"state","run_id":…,"run":{…}};
	// sent once, after the events recorded before the client connected
	// and before the live ones.
	wsKindState = "state"
	// wsKindLost: n events are missing here, {"kind":"lost","run_id":…,"n":…}.
	wsKindLost = "lost"
)

type wsState struct {
	Kind  string `json:"kind"`
	RunID string `json:"run_id"`
	Run   apiRun `json:"run"`
}

type wsLost struct {
	Kind  string `json:"kind"`
	RunID string `json:"run_id"`
	N     int    `json:"n"`
}

// handleEvents is GET /api/runs/{id}/events, a WebSocket that streams the
// run's events as JSON (events.Event: "kind", "run_id", "step", "node",
// "time", "data"): first those this server recorded before the client
// connected, then a "state" message with the run's record, then the events
// as they happen. The server closes it (normal closure) when the run's
// execution ends (runs.Ended) — at once if it had
// ended before, or if another process executes it (its events are that
// process's) — and keeps it open while the run waits for a human.
func (s *server) handleEvents(w http.ResponseWriter, r *http.Request) {
	// Counted before the connection is hijacked, while http.Server.Shutdown
	// still waits for it: wait then waits for every WebSocket.
	s.ws.Add(1)
	defer s.ws.Done()
	id := r.PathValue("id")
	// Follow the events before reading the run's state: whatever changes
	// after the state is read arrives as an event.
	subCtx, unsubscribe := context.WithCancel(s.base)
	defer unsubscribe()
	history, dropped, sub := s.log.follow(subCtx, id)
	run, live, err := s.m.Inspect(r.Context(), id)
	if err != nil {
		runError(w, err)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept wrote the answer
	}
	defer c.CloseNow()

	// The client sends nothing; CloseRead handles its control frames and
	// ends ctx when it goes away.
	ctx := c.CloseRead(context.WithoutCancel(r.Context()))
	stop := context.AfterFunc(ctx, unsubscribe)
	defer stop()
	send := func(v any) bool {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return wsjson.Write(wctx, c, v) == nil
	}

	if dropped > 0 && !send(wsLost{Kind: wsKindLost, RunID: id, N: dropped}) {
		return
	}
	for _, ev := range history {
		if !send(ev) {
			return
		}
	}
	if !send(wsState{Kind: wsKindState, RunID: id, Run: apiRunOf(run, live)}) {
		return
	}
	switch run.Status {
	case runs.StatusPending, runs.StatusWaiting:
	case runs.StatusRunning:
		if live != nil {
			c.Close(websocket.StatusNormalClosure, clip("another process executes the run: its events are not shown here", 120))
			return
		}
	default:
		// The execution has ended. Its last events may still be on their
		// way to the log if it recorded the run at all.
		if len(history) == 0 || history[len(history)-1].Kind() == runs.KindEnded {
			c.Close(websocket.StatusNormalClosure, "the run has ended")
			return
		}
	}
	for ev, err := range sub.Events() {
		if lost, ok := errors.AsType[*events.LostError](err); ok {
			if !send(wsLost{Kind: wsKindLost, RunID: id, N: lost.N}) {
				return
			}
			continue
		}
		if !send(ev) {
			return
		}
		if ev.Kind() == runs.KindEnded {
			c.Close(websocket.StatusNormalClosure, "the run has ended")
			return
		}
	}
	if ctx.Err() == nil { // the server is shutting down
		c.Close(websocket.StatusGoingAway, "the server is shutting down")
	}
}
