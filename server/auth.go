package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/agentgraph/agentgraph/server/internal/jsonb"
)

// Identity is who a request comes from, as an [Authenticator] tells.
type Identity struct {
	// ID names the user; it must not be empty. [OwnerPolicy] records it
	// as the owner of what the user creates.
	ID string
	// DisplayName is the user's name for people, if any.
	DisplayName string
	// Permissions are what the Authenticator grants the user, for an
	// [Authorizer] to read.
	Permissions []string
}

// Authenticator turns a request into the identity it comes from. An
// error refuses the request with 401 and the error's text, or with 403
// when it wraps [ErrForbidden] (credentials that were read but are
// refused). It sees the request's headers, not its body.
type Authenticator interface {
	Authenticate(r *http.Request) (Identity, error)
}

// AuthenticatorFunc adapts a function to an [Authenticator].
type AuthenticatorFunc func(r *http.Request) (Identity, error)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (Identity, error) { return f(r) }

// ErrForbidden is wrapped by the errors that refuse a request with 403:
// an [Authenticator]'s refusal of credentials it read, and every
// [Authorizer] refusal.
var ErrForbidden = errors.New("forbidden")

// ErrNoCredentials is the error of a request that carries no credentials
// (no Authorization and no x-api-key header).
var ErrNoCredentials = errors.New("missing credentials: send Authorization: Bearer <token> or x-api-key")

// BearerToken returns the token a request carries, as "Authorization:
// Bearer <token>" or as the "x-api-key" header the LangGraph SDKs send;
// it fails with [ErrNoCredentials] when there is none.
func BearerToken(r *http.Request) (string, error) {
	got := r.Header.Get("X-Api-Key")
	if h := r.Header.Get("Authorization"); got == "" && h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return "", errors.New("authorization must be a Bearer token")
		}
		got = strings.TrimSpace(tok)
	}
	if got == "" {
		return "", ErrNoCredentials
	}
	return got, nil
}

// tokenAuth is the Authenticator of TokenAuthenticator.
type tokenAuth struct {
	tokens []string
	ids    []Identity
}

// TokenAuthenticator authenticates a request by its bearer token (see
// [BearerToken]) as the identity tokens maps it to: a request without a
// token gets 401, one with a token not in tokens 403. Tokens are compared
// in constant time. An empty token, or an identity without an ID, is an
// error.
func TokenAuthenticator(tokens map[string]Identity) (Authenticator, error) {
	if len(tokens) == 0 {
		return nil, errors.New("server: TokenAuthenticator: no token")
	}
	a := &tokenAuth{}
	for _, tok := range slices.Sorted(maps.Keys(tokens)) {
		if tok == "" {
			return nil, errors.New("server: TokenAuthenticator: empty token")
		}
		if tokens[tok].ID == "" {
			return nil, errors.New("server: TokenAuthenticator: an identity without an ID")
		}
		a.tokens = append(a.tokens, tok)
		a.ids = append(a.ids, tokens[tok])
	}
	return a, nil
}

// Authenticate implements [Authenticator].
func (a *tokenAuth) Authenticate(r *http.Request) (Identity, error) {
	got, err := BearerToken(r)
	if err != nil {
		return Identity{}, err
	}
	found := -1
	for i, tok := range a.tokens { // every token compared: the time says nothing of which
		if subtle.ConstantTimeCompare([]byte(got), []byte(tok)) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Identity{}, fmt.Errorf("invalid token: %w", ErrForbidden)
	}
	return a.ids[found], nil
}

// WithAuth authenticates every request but GET /ok (the health check,
// public) with a: its [Identity] is what an [Authorizer] decides on. It
// excludes [WithAuthToken] and [WithoutAuthLoopbackOnly].
func WithAuth(a Authenticator) Option {
	return optionFunc(func(c *config) error {
		if a == nil {
			return errors.New("server: WithAuth: nil authenticator")
		}
		if c.auth != nil {
			return errors.New("server: WithAuth and WithAuthToken given more than once")
		}
		c.auth = a
		return nil
	})
}

// Resource is a kind of thing the API serves, for an [Authorizer].
type Resource string

// The resources an [Authorizer] decides on.
const (
	ResourceThreads    Resource = "threads"    // threads, their state and history
	ResourceRuns       Resource = "runs"       // runs, on a thread or stateless
	ResourceAssistants Resource = "assistants" // assistants other than the graphs' own
	ResourceCrons      Resource = "crons"      // scheduled runs
	ResourceStore      Resource = "store"      // the /store items
)

// Action is what a request does to a [Resource].
type Action string

// The actions an [Authorizer] decides on.
const (
	ActionCreate Action = "create"
	ActionRead   Action = "read"
	ActionUpdate Action = "update"
	ActionDelete Action = "delete"
	ActionSearch Action = "search"
)

// AuthRequest is what an [Authorizer] decides on: an identity doing an
// action to a resource.
type AuthRequest struct {
	Identity Identity
	Resource Resource
	Action   Action
	// ID is the thread, run, assistant or cron acted on; "" for a create
	// (of a thread or an assistant, unless the client chose its id), a
	// search and the store.
	ID string
	// ThreadID is the thread of a run or a cron ("" for a stateless one).
	ThreadID string
	// Metadata is, on a create or an update of a thread, a run, an
	// assistant or a cron, the metadata the request stores (merged into
	// the stored metadata on an update); the Authorizer may change it
	// (tag the resource, as [OwnerPolicy] sets "owner"). Nil otherwise.
	Metadata map[string]any
	// Namespace is, for the store, the item's namespace (a put, a get, a
	// delete: ActionUpdate, ActionRead, ActionDelete) or the prefix
	// searched or listed (ActionSearch); the Authorizer may change it
	// (narrow a search to a namespace of the user's).
	Namespace []string
}

// Authorizer decides what an identity may do, for [WithAuthorizer]. It
// refuses with an error, answered 403 with its text. Otherwise it returns
// a filter, metadata (JSON containment, as the search filters) that the
// resource must hold, nil for none: a thread, run, assistant or cron read,
// updated or deleted that does not hold it answers 404 (its existence is
// not told), a search returns only those that hold it, and a create whose
// result does not hold it (an existing thread or assistant returned by
// if_exists "do_nothing") answers 409. The filter of a run's create is
// held by its thread (when it exists); the store has no filter, only the
// Namespace.
type Authorizer interface {
	Authorize(ctx context.Context, req *AuthRequest) (filter map[string]any, err error)
}

// AuthorizerFunc adapts a function to an [Authorizer].
type AuthorizerFunc func(ctx context.Context, req *AuthRequest) (map[string]any, error)

// Authorize calls f(ctx, req).
func (f AuthorizerFunc) Authorize(ctx context.Context, req *AuthRequest) (map[string]any, error) {
	return f(ctx, req)
}

// WithAuthorizer has a decide every request on threads, runs, assistants
// other than the graphs' own (which every identity reads and runs) and
// the store (see [Authorizer]); [OwnerPolicy] is a ready one.
func WithAuthorizer(a Authorizer) Option {
	return optionFunc(func(c *config) error {
		if a == nil {
			return errors.New("server: WithAuthorizer: nil authorizer")
		}
		c.authz = a
		return nil
	})
}

// OwnerKey is the metadata key [OwnerPolicy] records the owner under, as
// LangGraph's owner-based auth does.
const OwnerKey = "owner"

// OwnerPolicy is an [Authorizer] that makes what a user creates theirs
// alone: a thread, run, assistant or cron created gets metadata "owner"
// set to the user's [Identity.ID] (whatever the request said), an update
// sets it again (so it can be neither given away nor taken), and every
// read, update, delete and search is filtered by it, so that another
// user's thread is answered 404 and never found. A store namespace must
// start with the user's ID (a put, get or delete of another is refused
// with 403); a search or a listing without a prefix is narrowed to the
// user's own namespace.
func OwnerPolicy() Authorizer {
	return AuthorizerFunc(func(_ context.Context, req *AuthRequest) (map[string]any, error) {
		id := req.Identity.ID
		if req.Resource == ResourceStore {
			switch {
			case len(req.Namespace) > 0 && req.Namespace[0] == id:
			case len(req.Namespace) == 0 && req.Action == ActionSearch:
				req.Namespace = []string{id}
			default:
				return nil, fmt.Errorf("the store namespace must start with your user id %q: %w", id, ErrForbidden)
			}
			return nil, nil
		}
		if req.Action == ActionCreate || req.Action == ActionUpdate {
			if req.Metadata == nil {
				req.Metadata = map[string]any{}
			}
			req.Metadata[OwnerKey] = id
		}
		return map[string]any{OwnerKey: id}, nil
	})
}

// identityKey keys a request's Identity in its context.
type identityKey struct{}

// identity returns the identity ServeHTTP found for the request.
func identity(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}

// authorize asks the server's Authorizer about req for the identity in ctx and
// returns its filter; a refusal is a 403. Without an Authorizer every
// request is allowed, with no filter.
func (s *Server) authorize(ctx context.Context, req *AuthRequest) (map[string]any, error) {
	if s.cfg.authz == nil {
		return nil, nil
	}
	req.Identity = identity(ctx)
	f, err := s.cfg.authz.Authorize(ctx, req)
	if err != nil {
		return nil, &apiError{status: http.StatusForbidden, msg: err.Error(), err: errors.Join(ErrForbidden, err)}
	}
	return normalizeMap(f), nil
}

// holds reports whether metadata holds filter (nil holds nothing but
// allows everything).
func holds(metadata, filter map[string]any) bool {
	return len(filter) == 0 || jsonb.Contains(map[string]any(metadata), map[string]any(filter))
}

// narrow merges filter into a search's metadata filter q: both must hold.
// It reports false when no metadata can hold both (they disagree on a
// key's value).
func narrow(q, filter map[string]any) (map[string]any, bool) {
	if len(filter) == 0 {
		return q, true
	}
	out := maps.Clone(q)
	if out == nil {
		out = map[string]any{}
	}
	for k, fv := range filter {
		qv, ok := out[k]
		if !ok {
			out[k] = fv
			continue
		}
		qm, qIsMap := qv.(map[string]any)
		fm, fIsMap := fv.(map[string]any)
		if qIsMap && fIsMap {
			m, ok := narrow(qm, fm)
			if !ok {
				return nil, false
			}
			out[k] = m
			continue
		}
		if !reflect.DeepEqual(qv, fv) {
			return nil, false
		}
	}
	return out, true
}

// answerNone answers a search that the Authorizer's filter leaves
// nothing to find (an empty page; for a count, limit < 0, 0), or err.
func answerNone(w http.ResponseWriter, err error, limit, offset int) {
	switch {
	case err != nil:
		fail(w, err)
	case limit < 0:
		writeJSON(w, http.StatusOK, 0)
	default:
		setPages(w, 0, limit, offset)
		writeJSON(w, http.StatusOK, []any{})
	}
}

// errThreadNotFound is the answer for a thread that does not exist or
// that the identity may not see.
func errThreadNotFound(id string) error {
	return errorf(http.StatusNotFound, "Thread with ID %s not found", id)
}

// authorizedThread reads thread id for action by the identity in ctx: a thread
// the Authorizer's filter hides is not found. md is the metadata an
// update stores (the Authorizer may tag it); nil otherwise.
func (s *Server) authorizedThread(ctx context.Context, id string, action Action, md map[string]any) (ThreadRecord, map[string]any, error) {
	req := &AuthRequest{Resource: ResourceThreads, Action: action, ID: id, Metadata: md}
	f, err := s.authorize(ctx, req)
	if err != nil {
		return ThreadRecord{}, nil, err
	}
	t, err := s.sharedThread(ctx, id)
	var ae *apiError
	if s.cfg.authz != nil && errors.As(err, &ae) && ae.status == http.StatusNotFound || err == nil && !holds(t.Metadata, f) {
		// One answer for a thread that does not exist and one hidden.
		return ThreadRecord{}, nil, errThreadNotFound(id)
	}
	if err != nil {
		return ThreadRecord{}, nil, err
	}
	return t, req.Metadata, nil
}

// checkThread is authorizedThread for a handler that reads the thread
// itself, or not at all: without an Authorizer it does nothing.
func (s *Server) checkThread(ctx context.Context, id string, action Action) error {
	if s.cfg.authz == nil {
		return nil
	}
	_, _, err := s.authorizedThread(ctx, id, action, nil)
	return err
}

// authorizeCreate asks the Authorizer about a create of resource with
// metadata md and returns md as the Authorizer left it (tagged), with
// the filter the created resource must hold.
func (s *Server) authorizeCreate(ctx context.Context, resource Resource, id, threadID string, md map[string]any) (map[string]any, map[string]any, error) {
	if md == nil {
		md = map[string]any{}
	}
	req := &AuthRequest{Resource: resource, Action: ActionCreate, ID: id, ThreadID: threadID, Metadata: md}
	f, err := s.authorize(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	return normalizeMap(req.Metadata), f, nil
}

// authorizeSearch narrows a search of resource's metadata filter q by the
// Authorizer's filter; false when nothing can match both.
func (s *Server) authorizeSearch(ctx context.Context, resource Resource, q map[string]any) (map[string]any, bool, error) {
	f, err := s.authorize(ctx, &AuthRequest{Resource: resource, Action: ActionSearch})
	if err != nil {
		return nil, false, err
	}
	out, ok := narrow(q, f)
	return out, ok, nil
}

// authorizeRun checks that the identity in ctx may do action to run rec: a run
// the Authorizer's filter hides (checked on the run's metadata) is not
// found.
func (s *Server) authorizeRun(ctx context.Context, rec RunRecord, action Action) error {
	return s.authorizeOne(ctx, ResourceRuns, action, rec.ID, rec.ThreadID, rec.Metadata, errRunNotFound())
}

// authorizeOne checks that the identity in ctx may do action (read, update,
// delete) to the resource id, of thread tid, whose stored metadata is
// metadata: one the Authorizer's filter hides answers notFound, as one
// that does not exist. (The cron handlers call it as the runs' do.)
func (s *Server) authorizeOne(ctx context.Context, resource Resource, action Action, id, tid string, metadata map[string]any, notFound error) error {
	f, err := s.authorize(ctx, &AuthRequest{Resource: resource, Action: action, ID: id, ThreadID: tid})
	if err != nil {
		return err
	}
	if !holds(metadata, f) {
		return notFound
	}
	return nil
}

// authorizeNewRun asks the Authorizer about a run of assistant a to
// create on rec's thread (rec's metadata tagged as it says) and checks
// its filter against the thread, when it exists; a thread to create with
// the run (create not nil) is authorized as a thread's create, and the
// assistant, unless a graph's own, as an assistant's read. It returns the
// thread the Backend is to create with the run, if any: a thread the
// request names (if_not_exists "create") is made here, or found, and
// checked, so that a thread another identity creates under that id
// between the check and the run's creation does not receive the run.
func (s *Server) authorizeNewRun(ctx context.Context, a *assistant, rec *RunRecord, create *ThreadRecord, stateless bool) (*ThreadRecord, error) {
	if s.cfg.authz == nil {
		return create, nil
	}
	s.mu.Lock()
	_, system := s.assistants[a.ID]
	s.mu.Unlock()
	if _, err := s.authorizeAssistant(ctx, a, system, ActionRead, nil); err != nil {
		return nil, err
	}
	tid := rec.ThreadID
	if stateless {
		tid = ""
	}
	md, f, err := s.authorizeCreate(ctx, ResourceRuns, "", tid, rec.Metadata)
	if err != nil {
		return nil, err
	}
	rec.Metadata = md
	if create != nil {
		md, _, err := s.authorizeCreate(ctx, ResourceThreads, create.ID, "", create.Metadata)
		if err != nil {
			return nil, err
		}
		create.Metadata = md
	}
	if stateless {
		return create, nil // its thread's id is the server's own, new
	}
	var t ThreadRecord
	if create != nil {
		made := *create
		made.Status = statusIdle // until the run is queued on it
		t, err = retry1(ctx, "creating thread "+made.ID, func(ctx context.Context) (ThreadRecord, error) {
			return s.cfg.backend.CreateThread(ctx, made, "do_nothing")
		})
	} else {
		t, err = s.cfg.backend.Thread(ctx, rec.ThreadID)
	}
	switch {
	case err == nil && !holds(t.Metadata, f):
		return nil, errThreadNotFound(rec.ThreadID)
	case err != nil && !errors.Is(err, ErrNotFound):
		return nil, backendError(err)
	}
	return nil, nil
}

// authorizeAssistant checks that the identity in ctx may do action to assistant
// a (tagging md, on an update): one the Authorizer's filter hides is not
// found. The graphs' own assistants (system) are every identity's to read.
func (s *Server) authorizeAssistant(ctx context.Context, a *assistant, system bool, action Action, md map[string]any) (map[string]any, error) {
	if system {
		return md, nil
	}
	req := &AuthRequest{Resource: ResourceAssistants, Action: action, ID: a.ID, Metadata: md}
	f, err := s.authorize(ctx, req)
	if err != nil {
		return nil, err
	}
	if !holds(a.Metadata, f) {
		return nil, errorf(http.StatusNotFound, "No assistant found for %q", a.ID)
	}
	return req.Metadata, nil
}

// authorizeStore asks the Authorizer about a store action on namespace ns
// and returns the namespace as it left it.
func (s *Server) authorizeStore(ctx context.Context, action Action, ns []string) ([]string, error) {
	req := &AuthRequest{Resource: ResourceStore, Action: action, Namespace: slices.Clone(ns)}
	if _, err := s.authorize(ctx, req); err != nil {
		return nil, err
	}
	if s.cfg.authz == nil {
		return ns, nil
	}
	return req.Namespace, nil
}

// threadReader wraps a handler of a thread's state or history, which
// reads the thread of the path: with an Authorizer, a thread it hides
// answers 404 before h runs.
func (s *Server) threadReader(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := threadID(r)
		if err == nil {
			err = s.checkThread(r.Context(), id, ActionRead)
		}
		if err != nil {
			fail(w, err)
			return
		}
		h(w, r)
	}
}

// assistantReader wraps a handler that reads the assistant of the path
// (its graph, its schemas): with an Authorizer, an assistant it hides
// answers 404 before h runs.
func (s *Server) assistantReader(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.authz != nil {
			a, system, err := s.sharedAssistant(r.Context(), r.PathValue("id"))
			if err == nil {
				_, err = s.authorizeAssistant(r.Context(), a, system, ActionRead, nil)
			}
			if err != nil {
				fail(w, err)
				return
			}
		}
		h(w, r)
	}
}

// errCronNotFound is the answer for a cron that does not exist or that
// the identity may not see.
func errCronNotFound(id string) error {
	return errorf(http.StatusNotFound, "Cron with ID %s not found", id)
}

// authorizedCron reads cron id for action by the identity in ctx: one the
// Authorizer's filter hides is not found, as one that does not exist.
func (s *Server) authorizedCron(ctx context.Context, cb CronBackend, id string, action Action) (CronRecord, error) {
	c, err := cb.Cron(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return CronRecord{}, errCronNotFound(id)
	case err != nil:
		return CronRecord{}, backendError(err)
	}
	if err := s.authorizeOne(ctx, ResourceCrons, action, id, c.ThreadID, c.Metadata, errCronNotFound(id)); err != nil {
		return CronRecord{}, err
	}
	return c, nil
}

// authorizeNewCron asks the Authorizer about the create of cron c (its
// metadata tagged as it says) by the identity in ctx; a cron on a thread the
// identity may not change is refused as if the thread did not exist
// (unless the thread does not exist and the cron's runs create it).
// The runs the cron makes are authorized when it fires, as its user's.
func (s *Server) authorizeNewCron(ctx context.Context, c *CronRecord, sp *runSpec) error {
	if s.cfg.authz == nil {
		return nil
	}
	if c.ThreadID != "" {
		err := s.checkThread(ctx, c.ThreadID, ActionUpdate)
		if err != nil && !(sp.body.IfNotExists == "create" && s.threadMissing(ctx, c.ThreadID)) {
			return err
		}
	}
	md, _, err := s.authorizeCreate(ctx, ResourceCrons, c.ID, c.ThreadID, c.Metadata)
	if err != nil {
		return err
	}
	c.Metadata = md
	return nil
}

// threadMissing reports whether the Backend says thread id does not exist.
func (s *Server) threadMissing(ctx context.Context, id string) bool {
	_, err := s.cfg.backend.Thread(ctx, id)
	return errors.Is(err, ErrNotFound)
}

// asUser is ctx carrying the identity of the user with the given id, for
// the Authorizer's questions about what is done on their behalf without a
// request of theirs (a cron's runs): it carries the ID alone, not the
// permissions the user's requests had.
func asUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, identityKey{}, Identity{ID: user})
}
