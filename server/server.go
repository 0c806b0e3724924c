package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/store"
)

// DefaultMaxBodyBytes is the largest request body a [Server] accepts when
// no [WithMaxBodyBytes] is given.
const DefaultMaxBodyBytes = 1 << 20

// Option configures [New].
type Option interface{ apply(*config) error }

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

type config struct {
	graphs  map[string]graphAdapter
	order   []string
	auth    Authenticator // see WithAuth, WithAuthToken
	authz   Authorizer    // see WithAuthorizer
	noAuth  bool
	maxBody int64
	saver   checkpoint.Saver
	store   store.Store
	now     func() time.Time
	origins []string
	kept    int // see WithKeptRuns
	// keptEventBytes bounds the events ended resumable runs keep (see
	// WithKeptEventBytes).
	keptEventBytes int64

	backend  Backend // see WithBackend; New makes a MemoryBackend without it
	workers  int
	leaseTTL time.Duration
	poll     time.Duration
	holder   string
}

// Graph registers a compiled graph under name; its system assistant gets
// the id every LangGraph server gives it (a UUIDv5 of the name), and the
// name itself is accepted wherever an assistant id is. The graph must
// have a checkpointer: threads live in it. Its state's fields are read
// from and written to JSON by their json names (see package doc).
func Graph[S any](name string, g *graph.Graph[S]) Option {
	return optionFunc(func(c *config) error {
		if name == "" {
			return errors.New("server: Graph: empty name")
		}
		if g == nil {
			return fmt.Errorf("server: Graph %q: nil graph", name)
		}
		if _, dup := c.graphs[name]; dup {
			return fmt.Errorf("server: Graph %q registered twice", name)
		}
		// With a checkpointer and no thread, GetState fails without
		// reading the saver; without one it says so.
		if _, err := g.GetState(context.Background()); errors.Is(err, graph.ErrNoCheckpointer) || errors.Is(err, graph.ErrNotCompiled) {
			return fmt.Errorf("server: Graph %q: %w (compile it with graph.WithCheckpointer)", name, err)
		}
		a, err := newAdapter(name, g)
		if err != nil {
			return err
		}
		c.graphs[name] = a
		c.order = append(c.order, name)
		return nil
	})
}

// WithAuthToken requires every request but GET /ok to carry token, as
// "Authorization: Bearer <token>" or as the "x-api-key" header the
// LangGraph SDKs send. Requests without it get 401, with a wrong one 403.
// It is [WithAuth] with the [TokenAuthenticator] of this one token, whose
// identity has the ID "token".
func WithAuthToken(token string) Option {
	return optionFunc(func(c *config) error {
		if token == "" {
			return errors.New("server: WithAuthToken: empty token")
		}
		a, err := TokenAuthenticator(map[string]Identity{token: {ID: "token"}})
		if err != nil {
			return err
		}
		return WithAuth(a).apply(c)
	})
}

// WithoutAuthLoopbackOnly turns authentication off (every request's
// identity has the ID "loopback"); the server then
// answers only requests from a loopback address (127.0.0.0/8, ::1) and
// refuses every other with 403. Since a web page the developer visits can
// send requests to localhost too, it also refuses a Host that is not
// localhost or a loopback address (DNS rebinding), an Origin that is not
// a local page or one WithCORS allows, and requests a proxy forwarded
// (Forwarded, X-Forwarded-For); and, as always, bodies that are not JSON.
// It is for local development and tests, never behind a proxy.
func WithoutAuthLoopbackOnly() Option {
	return optionFunc(func(c *config) error { c.noAuth = true; return nil })
}

// DefaultKeptEventBytes is how many bytes of events the ended resumable
// runs of a server keep when [WithKeptEventBytes] is not given.
const DefaultKeptEventBytes = 64 << 20

// WithKeptEventBytes bounds the events that ended resumable runs
// (stream_resumable) keep in memory for joins with Last-Event-ID, in
// bytes of event names and data (default [DefaultKeptEventBytes]):
// beyond it the events of the runs that ended first are dropped once no
// stream reads them, and a join of their stream then gets an "error"
// event with error "EventsDropped"
// (the run itself, its result and its thread stay). The events of an
// ended run that was not resumable are dropped once no stream reads them
// (a join then gets its "end" alone), and those of runs still pending or
// running are not bounded. It applies to a server without [WithBackend]
// (its [MemoryBackend]); a Backend given with WithBackend keeps events in
// its store until the run or its thread is deleted.
func WithKeptEventBytes(n int64) Option {
	return optionFunc(func(c *config) error {
		if n < 0 {
			return fmt.Errorf("server: WithKeptEventBytes(%d): must not be negative", n)
		}
		c.keptEventBytes = n
		return nil
	})
}

// DefaultKeptRuns is how many ended runs a server remembers when
// [WithKeptRuns] is not given.
const DefaultKeptRuns = 10_000

// WithKeptRuns sets how many ended runs a server without [WithBackend]
// remembers (default [DefaultKeptRuns]): beyond them the oldest ended
// runs are forgotten — GET and join answer 404 for them, and they leave
// their threads' run lists — so that a long-lived server's memory stays
// bounded; a run whose stream is being read is forgotten once its last
// stream ends. Threads' checkpoints are not touched. A Backend given with
// WithBackend keeps every run until it or its thread is deleted.
func WithKeptRuns(n int) Option {
	return optionFunc(func(c *config) error {
		if n < 1 {
			return fmt.Errorf("server: WithKeptRuns(%d): must be at least 1", n)
		}
		c.kept = n
		return nil
	})
}

// WithMaxBodyBytes bounds the size of request bodies (default
// [DefaultMaxBodyBytes]); a larger body gets 413.
func WithMaxBodyBytes(n int64) Option {
	return optionFunc(func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("server: WithMaxBodyBytes(%d): must be positive", n)
		}
		c.maxBody = n
		return nil
	})
}

// WithCORS lets browser pages from origins ("*" for any) call the server,
// as LangGraph Studio and useStream do: it answers CORS preflight
// requests without authentication and exposes the headers the SDKs read
// (Content-Location, Location, X-Pagination-*). Requests still need the
// token.
func WithCORS(origins ...string) Option {
	return optionFunc(func(c *config) error {
		if len(origins) == 0 {
			return errors.New("server: WithCORS: no origin")
		}
		c.origins = append(c.origins, origins...)
		return nil
	})
}

// WithCheckpointer gives the server the saver its graphs were compiled
// with, so that deleting a thread deletes its checkpoints (when s
// implements [checkpoint.ThreadDeleter]).
func WithCheckpointer(s checkpoint.Saver) Option {
	return optionFunc(func(c *config) error { c.saver = s; return nil })
}

// WithStore serves s under /store (put, get, delete, search, namespaces).
// Without it those routes answer 404.
func WithStore(s store.Store) Option {
	return optionFunc(func(c *config) error { c.store = s; return nil })
}

// Server is an [http.Handler] speaking the LangGraph Server API for the
// graphs registered with [Graph]. Threads, runs and the assistants other
// than the graphs' own are kept in a [Backend]: the [Backend] given with
// [WithBackend], shared by every process using it, or else a
// [MemoryBackend] of the server's own. Either way the HTTP handlers call
// the run service (the dispatcher that claims runs and executes them),
// which calls the Backend.
type Server struct {
	cfg config
	mux *http.ServeMux

	mu         sync.Mutex
	assistants map[string]*assistant // the graphs' own, by assistant_id
	closed     bool                  // Shutdown was called

	// local: the Backend is the server's own MemoryBackend, which no
	// other process shares.
	local  bool
	shared *shared // the runs executed here
}

// New returns a Server for the graphs given with [Graph]. It needs
// one of [WithAuth], [WithAuthToken] or [WithoutAuthLoopbackOnly].
func New(opts ...Option) (*Server, error) {
	cfg := config{graphs: map[string]graphAdapter{}, maxBody: DefaultMaxBodyBytes, now: time.Now, kept: DefaultKeptRuns, keptEventBytes: DefaultKeptEventBytes,
		leaseTTL: DefaultRunLeaseTTL, poll: DefaultPollInterval}
	var errs []error
	for _, o := range opts {
		if err := o.apply(&cfg); err != nil {
			errs = append(errs, err)
		}
	}
	if cfg.auth == nil && !cfg.noAuth {
		errs = append(errs, errors.New("server: New needs WithAuth or WithAuthToken, or WithoutAuthLoopbackOnly to serve loopback without auth"))
	}
	if cfg.auth != nil && cfg.noAuth {
		errs = append(errs, errors.New("server: WithAuth (or WithAuthToken) and WithoutAuthLoopbackOnly exclude each other"))
	}
	if cfg.backend != nil && cfg.saver == nil {
		errs = append(errs, errors.New("server: WithBackend needs WithCheckpointer with the saver the graphs share"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	local := cfg.backend == nil
	if local {
		// Runs of one process: as many at once as there are threads
		// running (unless WithWorkers bounds them), none released to
		// another process.
		cfg.backend = newMemoryBackend(cfg.kept, cfg.keptEventBytes)
	} else if cfg.workers == 0 {
		cfg.workers = DefaultWorkers
	}
	s := &Server{cfg: cfg, assistants: map[string]*assistant{}, local: local}
	now := cfg.now()
	for _, name := range cfg.order {
		id := graphAssistantID(name)
		s.assistants[id] = &assistant{
			ID: id, GraphID: name, Config: map[string]any{}, Context: map[string]any{},
			Metadata: map[string]any{"created_by": "system"}, Name: name, Version: 1,
			CreatedAt: now, UpdatedAt: now,
		}
		s.assistants[id].snapshot(now)
	}
	s.routes()
	s.startShared()
	s.startCrons()
	return s, nil
}

// ServeHTTP authenticates the request (all but GET /ok, the health
// check), bounds its body and serves it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cors(w, r) {
		return
	}
	if r.Method != http.MethodGet || r.URL.Path != "/ok" {
		id, status, msg := s.authenticate(r)
		if status != 0 {
			writeError(w, status, msg)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), identityKey{}, id))
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.maxBody)
	}
	s.mux.ServeHTTP(w, r)
}

// loopbackHost reports whether a request's Host names this machine:
// localhost or a loopback address, with or without a port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// originAllowed reports whether WithCORS allows origin, or origin is a
// page served from this machine itself.
func (s *Server) originAllowed(origin string) bool {
	if slices.Contains(s.cfg.origins, "*") || slices.Contains(s.cfg.origins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && loopbackHost(u.Host)
}

// cors sets the CORS headers for an allowed origin and reports whether
// the request was a preflight, then answered.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || len(s.cfg.origins) == 0 {
		return false
	}
	if !slices.Contains(s.cfg.origins, "*") && !slices.Contains(s.cfg.origins, origin) {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Content-Location, Location, X-Pagination-Total, X-Pagination-Next")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key, Last-Event-ID")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// authenticate returns the identity of r, or the status and message that
// refuse it.
func (s *Server) authenticate(r *http.Request) (Identity, int, string) {
	if s.cfg.noAuth {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return Identity{}, http.StatusForbidden, "this server serves loopback clients only"
		}
		// A loopback address is not enough: a web page the developer
		// visits can send requests to localhost (cross-site requests,
		// DNS rebinding), and a proxy on the same host forwards anyone.
		if r.Header.Get("Forwarded") != "" || r.Header.Get("X-Forwarded-For") != "" {
			return Identity{}, http.StatusForbidden, "this server serves loopback clients only, not requests forwarded by a proxy"
		}
		if !loopbackHost(r.Host) {
			return Identity{}, http.StatusForbidden, "this server serves loopback clients only: the Host must be localhost or a loopback address"
		}
		if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o) {
			return Identity{}, http.StatusForbidden, "this server serves loopback clients only: origin " + o + " is not allowed (see WithCORS)"
		}
		return Identity{ID: "loopback"}, 0, ""
	}
	id, err := s.cfg.auth.Authenticate(r)
	switch {
	case errors.Is(err, ErrForbidden):
		return Identity{}, http.StatusForbidden, err.Error()
	case err != nil:
		return Identity{}, http.StatusUnauthorized, err.Error()
	case id.ID == "":
		return Identity{}, http.StatusUnauthorized, "the authenticator gave no identity"
	}
	return id, 0, ""
}

func (s *Server) routes() {
	m := http.NewServeMux()
	// The handlers of a thread's state and history, and of an
	// assistant's drawing and schemas, are wrapped to ask the Authorizer.
	m.HandleFunc("GET /ok", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, map[string]bool{"ok": true}) })
	m.HandleFunc("GET /info", s.info)

	m.HandleFunc("POST /assistants", s.sharedCreateAssistant)
	m.HandleFunc("POST /assistants/search", s.sharedSearchAssistants)
	m.HandleFunc("POST /assistants/count", s.sharedCountAssistants)
	m.HandleFunc("GET /assistants/{id}", s.sharedGetAssistant)
	m.HandleFunc("PATCH /assistants/{id}", s.sharedPatchAssistant)
	m.HandleFunc("DELETE /assistants/{id}", s.sharedDeleteAssistant)
	m.HandleFunc("POST /assistants/{id}/versions", s.sharedAssistantVersions)
	m.HandleFunc("POST /assistants/{id}/latest", s.sharedSetLatestVersion)
	m.HandleFunc("GET /assistants/{id}/graph", s.assistantReader(s.assistantGraph))
	m.HandleFunc("GET /assistants/{id}/schemas", s.assistantReader(s.assistantSchemas))

	m.HandleFunc("POST /threads", s.sharedCreateThread)
	m.HandleFunc("POST /threads/search", s.sharedSearchThreads)
	m.HandleFunc("POST /threads/count", s.sharedCountThreads)
	m.HandleFunc("GET /threads/{tid}", s.sharedGetThread)
	m.HandleFunc("PATCH /threads/{tid}", s.sharedPatchThread)
	m.HandleFunc("POST /threads/{tid}/state/checkpoint", s.threadReader(s.getThreadStateAt))
	m.HandleFunc("DELETE /threads/{tid}", s.sharedDeleteThread)
	m.HandleFunc("POST /threads/{tid}/copy", s.sharedCopyThread)
	m.HandleFunc("GET /threads/{tid}/state", s.threadReader(s.getThreadState))
	m.HandleFunc("GET /threads/{tid}/state/{cid}", s.threadReader(s.getThreadState))
	m.HandleFunc("POST /threads/{tid}/state", s.sharedUpdateThreadState)
	m.HandleFunc("POST /threads/{tid}/history", s.threadReader(s.threadHistory))
	m.HandleFunc("GET /threads/{tid}/history", s.threadReader(s.threadHistory))

	m.HandleFunc("POST /threads/{tid}/runs", s.sharedCreateRun)
	m.HandleFunc("POST /threads/{tid}/runs/stream", s.sharedStreamRun)
	m.HandleFunc("POST /threads/{tid}/runs/wait", s.sharedWaitRun)
	m.HandleFunc("GET /threads/{tid}/runs", s.sharedListRuns)
	m.HandleFunc("GET /threads/{tid}/runs/{rid}", s.sharedGetRun)
	m.HandleFunc("DELETE /threads/{tid}/runs/{rid}", s.sharedDeleteRun)
	m.HandleFunc("GET /threads/{tid}/runs/{rid}/join", s.sharedJoinRun)
	m.HandleFunc("GET /threads/{tid}/runs/{rid}/stream", s.sharedJoinRunStream)
	m.HandleFunc("POST /threads/{tid}/runs/{rid}/cancel", s.sharedCancelRun)

	m.HandleFunc("POST /runs", s.sharedCreateRun)
	m.HandleFunc("POST /runs/stream", s.sharedStreamRun)
	m.HandleFunc("POST /runs/wait", s.sharedWaitRun)
	m.HandleFunc("GET /runs/{rid}", s.sharedGetRun)
	m.HandleFunc("GET /runs/{rid}/join", s.sharedJoinRun)
	m.HandleFunc("GET /runs/{rid}/stream", s.sharedJoinRunStream)
	m.HandleFunc("POST /runs/{rid}/cancel", s.sharedCancelRun)

	m.HandleFunc("POST /runs/crons", s.createCron)
	m.HandleFunc("POST /threads/{tid}/runs/crons", s.createCron)
	m.HandleFunc("POST /runs/crons/search", s.searchCrons)
	m.HandleFunc("POST /runs/crons/count", s.countCrons)
	m.HandleFunc("PATCH /runs/crons/{cid}", s.patchCron)
	m.HandleFunc("DELETE /runs/crons/{cid}", s.deleteCron)

	m.HandleFunc("PUT /store/items", s.storePut)
	m.HandleFunc("GET /store/items", s.storeGet)
	m.HandleFunc("DELETE /store/items", s.storeDelete)
	m.HandleFunc("POST /store/items/search", s.storeSearch)
	m.HandleFunc("POST /store/namespaces", s.storeNamespaces)

	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
	})
	s.mux = m
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"version": "agentgraph", "context": "go",
		"flags": map[string]bool{"assistants": true, "crons": s.crons() != nil, "langsmith": false},
	})
}

// apiError is an error with the HTTP status it is answered with, and the
// error it reports, if any (errors.Is and errors.As see it).
type apiError struct {
	status int
	msg    string
	err    error
}

func (e *apiError) Error() string { return e.msg }

func (e *apiError) Unwrap() error { return e.err }

func errorf(status int, format string, args ...any) error {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

// fail answers err: an *apiError of a 4xx with its status, a too-large
// body with 413, a transient fault of the backend or the saver (see
// [IsTransient]) with 503 and Retry-After (the SDKs retry it), another
// *apiError with its status, anything else with 500.
func fail(w http.ResponseWriter, err error) {
	var ae *apiError
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &ae) && ae.status < 500:
		writeError(w, ae.status, ae.msg)
	case errors.As(err, &mb):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", mb.Limit))
	case IsTransient(err):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, err.Error())
	case ae != nil:
		writeError(w, ae.status, ae.msg)
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// writeError answers in the API's error shape, {"detail": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"detail": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(map[string]string{"detail": "encoding the response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// decodeBody reads the JSON body of r into v. An empty body leaves v as
// is; unknown fields are ignored, as LangGraph servers do.
func decodeBody(r *http.Request, v any) error {
	if r.Body == nil {
		return nil
	}
	// Only JSON: a form or text/plain body is what a cross-site page can
	// send without a preflight.
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return errorf(http.StatusUnsupportedMediaType, "the body must be JSON (Content-Type: application/json), not %q", ct)
		}
	}
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return err
		}
		return errorf(http.StatusBadRequest, "malformed JSON body: %v", err)
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, "malformed JSON body: trailing data after the JSON value")
	}
	return nil
}
