package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// assistant is the API's Assistant.
type assistant struct {
	ID          string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Config      map[string]any `json:"config"`
	Context     any            `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
	Version     int            `json:"version"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`

	versions []assistantVersion // oldest first
}

// assistantVersion is the API's AssistantVersion.
type assistantVersion struct {
	ID          string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Config      map[string]any `json:"config"`
	Context     any            `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
	Version     int            `json:"version"`
	CreatedAt   time.Time      `json:"created_at"`
}

// snapshot records a's current settings as its version a.Version.
func (a *assistant) snapshot(now time.Time) {
	md := make(map[string]any, len(a.Metadata))
	for k, v := range a.Metadata {
		md[k] = v
	}
	a.versions = append(a.versions, assistantVersion{ID: a.ID, GraphID: a.GraphID, Config: a.Config, Context: a.Context,
		Metadata: md, Name: a.Name, Description: a.Description, Version: a.Version, CreatedAt: now})
}

// thread is the API's Thread, with the runs waiting on it.
type thread struct {
	ID         string                    `json:"thread_id"`
	CreatedAt  time.Time                 `json:"created_at"`
	UpdatedAt  time.Time                 `json:"updated_at"`
	Metadata   map[string]any            `json:"metadata"`
	Status     string                    `json:"status"`
	Config     map[string]any            `json:"config"`
	Values     any                       `json:"values"`
	Interrupts map[string][]apiInterrupt `json:"interrupts"`

	active   *run // the run executing on the thread
	updating bool // a state update is being written
	// abandoned counts the nodes a run of the thread left running when it
	// was cancelled (graph.WithAbandonedNodes): the thread's next run waits
	// for them, so that two runs never work on one thread at once.
	abandoned sync.WaitGroup
	// resetTo, after a rollback, is the checkpoint the next run starts
	// from ("" for an empty thread).
	resetTo *string
	queue   []*run // pending runs, oldest first
	runs    []*run // every run of the thread, in creation order
}

// Thread statuses.
const (
	statusIdle        = "idle"
	statusBusy        = "busy"
	statusInterrupted = "interrupted"
	statusError       = "error"
)

// normalize returns v as encoding/json decodes it into an any, so that
// metadata filters compare like with like.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func normalizeMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	out, _ := normalize(m).(map[string]any)
	if out == nil {
		return map[string]any{}
	}
	return out
}

// contains reports whether target contains filter, JSONB-style: every key
// of an object filter is in target with a value that contains the
// filter's; other values are equal.
func contains(target, filter any) bool {
	fm, ok := filter.(map[string]any)
	if !ok {
		return reflect.DeepEqual(target, filter)
	}
	tm, ok := target.(map[string]any)
	if !ok {
		return false
	}
	for k, fv := range fm {
		tv, ok := tm[k]
		if !ok || !contains(tv, fv) {
			return false
		}
	}
	return true
}

// page is limit and offset of a search, checked.
type page struct {
	Limit  *int `json:"limit"`
	Offset int  `json:"offset"`
}

// pagedBody is a request body that embeds a page.
type pagedBody interface {
	bounds(def int) (limit, offset int, err error)
}

// decodePaged reads the JSON body of r into body, a pointer to a struct
// embedding page, and returns its checked limit (def when none is given)
// and offset.
func decodePaged(r *http.Request, body pagedBody, def int) (limit, offset int, err error) {
	if err := decodeBody(r, body); err != nil {
		return 0, 0, err
	}
	return body.bounds(def)
}

func (p page) bounds(def int) (limit, offset int, err error) {
	limit = def
	if p.Limit != nil {
		limit = *p.Limit
	}
	if limit < 1 || limit > 1000 {
		return 0, 0, errorf(http.StatusBadRequest, "limit must be between 1 and 1000, got %d", limit)
	}
	if p.Offset < 0 {
		return 0, 0, errorf(http.StatusBadRequest, "offset must not be negative, got %d", p.Offset)
	}
	return limit, p.Offset, nil
}

// paginate cuts items to [offset, offset+limit) and sets the pagination
// headers.
func paginate[T any](w http.ResponseWriter, items []T, limit, offset int) []T {
	setPages(w, len(items), limit, offset)
	if offset >= len(items) {
		return []T{}
	}
	return items[offset:min(offset+limit, len(items))]
}

// ---- assistants ----

// resolveAssistant returns the assistant in memory with the given id, or
// the system assistant of the graph so named; the caller holds s.mu.
// With a Backend, memory holds only the graphs' own (see runAssistant).
func (s *Server) resolveAssistant(id string) (*assistant, error) {
	id = assistantKey(id)
	if a, ok := s.assistants[id]; ok {
		return a, nil
	}
	if _, ok := s.cfg.graphs[id]; ok {
		return s.assistants[graphAssistantID(id)], nil
	}
	return nil, errorf(http.StatusNotFound, "No assistant found for %q", id)
}

// runAssistant resolves the assistant a run or a drawing names: from
// memory, else, with a Backend, from it (see sharedResolveAssistant). It
// holds s.mu for the lookup in memory only, never while it reads the
// Backend.
func (s *Server) runAssistant(ctx context.Context, id string) (*assistant, error) {
	s.mu.Lock()
	a, err := s.resolveAssistant(id)
	s.mu.Unlock()
	if err == nil || s.cfg.backend == nil {
		return a, err
	}
	return s.sharedResolveAssistant(ctx, assistantKey(id))
}

// assistantKey returns id lower-cased when it is a UUID, so that a UUID
// names one assistant however its hex digits are written; a graph name,
// accepted wherever an assistant id is, stays as it is.
func assistantKey(id string) string {
	if l := strings.ToLower(id); validUUID(l) {
		return l
	}
	return id
}

// assistantCreate is the body of POST /assistants.
type assistantCreate struct {
	GraphID     string         `json:"graph_id"`
	AssistantID string         `json:"assistant_id"`
	Config      map[string]any `json:"config"`
	Context     any            `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	IfExists    string         `json:"if_exists"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
}

// parseAssistantCreate reads and checks the body of POST /assistants.
func (s *Server) parseAssistantCreate(r *http.Request) (assistantCreate, error) {
	var body assistantCreate
	if err := decodeBody(r, &body); err != nil {
		return body, err
	}
	if body.GraphID == "" {
		return body, errorf(http.StatusUnprocessableEntity, "graph_id is required")
	}
	if _, ok := s.cfg.graphs[body.GraphID]; !ok {
		return body, errorf(http.StatusNotFound, "no graph %q is registered", body.GraphID)
	}
	body.AssistantID = assistantKey(body.AssistantID)
	if body.AssistantID != "" && !validUUID(body.AssistantID) {
		return body, errorf(http.StatusUnprocessableEntity, "assistant_id must be a UUID")
	}
	if body.AssistantID != "" && body.AssistantID[14] == '5' {
		// The graphs' own assistants are UUIDv5s of their names, on every
		// process, also those serving other graphs: no other may take one.
		return body, errorf(http.StatusConflict, "assistant_id %s is a UUID of version 5, which names the graphs' own assistants; give a version 4 UUID or none", body.AssistantID)
	}
	if body.IfExists != "" && body.IfExists != "raise" && body.IfExists != "do_nothing" {
		return body, errorf(http.StatusUnprocessableEntity, "if_exists must be raise or do_nothing")
	}
	return body, nil
}

func (s *Server) createAssistant(w http.ResponseWriter, r *http.Request) {
	body, err := s.parseAssistantCreate(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := cmp.Or(body.AssistantID, newUUID())
	if old, ok := s.assistants[id]; ok {
		if body.IfExists == "do_nothing" {
			writeJSON(w, http.StatusOK, old)
			return
		}
		fail(w, errorf(http.StatusConflict, "Assistant already exists"))
		return
	}
	now := s.cfg.now()
	a := &assistant{ID: id, GraphID: body.GraphID, Config: normalizeMap(body.Config), Context: normalize(cmp.Or[any](body.Context, map[string]any{})),
		Metadata: normalizeMap(body.Metadata), Name: cmp.Or(body.Name, "Untitled"), Description: body.Description, Version: 1,
		CreatedAt: now, UpdatedAt: now}
	a.snapshot(now)
	s.assistants[id] = a
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) getAssistant(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.resolveAssistant(r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// assistantFilter is the filter of POST /assistants/search and count.
type assistantFilter struct {
	GraphID  string         `json:"graph_id"`
	Name     string         `json:"name"`
	Metadata map[string]any `json:"metadata"`
}

// matches reports whether f selects a.
func (f assistantFilter) matches(a *assistant) bool {
	return (f.GraphID == "" || a.GraphID == f.GraphID) &&
		(f.Name == "" || strings.Contains(strings.ToLower(a.Name), strings.ToLower(f.Name))) &&
		contains(map[string]any(a.Metadata), map[string]any(f.Metadata))
}

// matchingAssistants returns the assistants held in memory that f
// selects, the newest first; s.mu is held.
func (s *Server) matchingAssistants(f assistantFilter) []*assistant {
	var out []*assistant
	for _, a := range s.assistants {
		if f.matches(a) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, compareAssistants)
	return out
}

// compareAssistants orders assistants the newest first, then by id.
func compareAssistants(x, y *assistant) int {
	return cmp.Or(y.CreatedAt.Compare(x.CreatedAt), strings.Compare(x.ID, y.ID))
}

// parseAssistantSearch reads and checks POST /assistants/search.
func parseAssistantSearch(r *http.Request) (f assistantFilter, limit, offset int, err error) {
	var body struct {
		page
		assistantFilter
	}
	limit, offset, err = decodePaged(r, &body, 10)
	body.Metadata = normalizeMap(body.Metadata)
	return body.assistantFilter, limit, offset, err
}

// parseAssistantCount reads POST /assistants/count.
func parseAssistantCount(r *http.Request) (assistantFilter, error) {
	var f assistantFilter
	err := decodeBody(r, &f)
	f.Metadata = normalizeMap(f.Metadata)
	return f, err
}

func (s *Server) searchAssistants(w http.ResponseWriter, r *http.Request) {
	f, limit, offset, err := parseAssistantSearch(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	out := s.matchingAssistants(f)
	out = paginate(w, out, limit, offset)
	b, err := json.Marshal(out)
	s.mu.Unlock()
	writeRaw(w, b, err)
}

// writeRaw answers JSON encoded under the lock.
func writeRaw(w http.ResponseWriter, b []byte, err error) {
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

func (s *Server) assistantAdapter(r *http.Request) (graphAdapter, error) {
	a, err := s.runAssistant(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return s.cfg.graphs[a.GraphID], nil
}

func (s *Server) assistantGraph(w http.ResponseWriter, r *http.Request) {
	g, err := s.assistantAdapter(r)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, g.drawing())
}

func (s *Server) assistantSchemas(w http.ResponseWriter, r *http.Request) {
	g, err := s.assistantAdapter(r)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, g.schemas())
}

// ---- threads ----

// threadID returns the thread id of the request's path, lower-cased: a
// UUID names one thread however its hex digits are written.
func threadID(r *http.Request) (string, error) {
	id := strings.ToLower(r.PathValue("tid"))
	if !validUUID(id) {
		return "", errorf(http.StatusUnprocessableEntity, "thread_id %q is not a UUID", id)
	}
	return id, nil
}

// lookupThread returns the thread; s.mu must be held.
func (s *Server) lookupThread(id string) (*thread, error) {
	t, ok := s.threads[id]
	if !ok {
		return nil, errorf(http.StatusNotFound, "Thread with ID %s not found", id)
	}
	return t, nil
}

func (s *Server) newThread(id string, metadata map[string]any) *thread {
	now := s.cfg.now()
	t := &thread{ID: id, CreatedAt: now, UpdatedAt: now, Metadata: metadata, Status: statusIdle,
		Config: map[string]any{}, Interrupts: map[string][]apiInterrupt{}}
	s.threads[id] = t
	return t
}

func (s *Server) createThread(w http.ResponseWriter, r *http.Request) {
	body, md, err := s.parseThreadCreate(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := cmp.Or(body.ThreadID, newUUID())
	if old, ok := s.threads[id]; ok {
		if body.IfExists == "do_nothing" {
			writeJSON(w, http.StatusOK, old)
			return
		}
		fail(w, errorf(http.StatusConflict, "Thread already exists"))
		return
	}
	writeJSON(w, http.StatusOK, s.newThread(id, md))
}

func (s *Server) getThread(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.lookupThread(id)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// threadOrders are the orders of POST /threads/search by its sort_by.
var threadOrders = map[string]func(x, y *thread) int{
	"created_at": func(x, y *thread) int { return x.CreatedAt.Compare(y.CreatedAt) },
	"updated_at": func(x, y *thread) int { return x.UpdatedAt.Compare(y.UpdatedAt) },
	"thread_id":  func(x, y *thread) int { return strings.Compare(x.ID, y.ID) },
	"status":     func(x, y *thread) int { return strings.Compare(x.Status, y.Status) },
}

// matches reports whether t passes the filters of q (its ids, status,
// metadata and values).
func (t *thread) matches(q ThreadQuery) bool {
	return (len(q.IDs) == 0 || slices.Contains(q.IDs, t.ID)) &&
		(q.Status == "" || t.Status == q.Status) &&
		contains(map[string]any(t.Metadata), map[string]any(q.Metadata)) &&
		(len(q.Values) == 0 || contains(normalize(t.Values), map[string]any(q.Values)))
}

func (s *Server) searchThreads(w http.ResponseWriter, r *http.Request) {
	q, err := parseThreadSearch(r)
	if err != nil {
		fail(w, err)
		return
	}
	order := threadOrders[q.SortBy]
	s.mu.Lock()
	var out []*thread
	for _, t := range s.threads {
		if t.matches(q) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(x, y *thread) int {
		c := cmp.Or(order(x, y), strings.Compare(x.ID, y.ID))
		if q.Desc {
			return -c
		}
		return c
	})
	out = paginate(w, out, q.Limit, q.Offset)
	b, err := json.Marshal(out)
	s.mu.Unlock()
	writeRaw(w, b, err)
}

func (s *Server) deleteThread(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	t, err := s.lookupThread(id)
	if err != nil {
		s.mu.Unlock()
		fail(w, err)
		return
	}
	delete(s.threads, id)
	for _, rn := range t.runs {
		delete(s.runs, rn.ID)
	}
	for _, rn := range slices.Clone(t.queue) {
		s.cancelLocked(rn, "thread deleted")
	}
	active := t.active
	if active != nil {
		s.cancelLocked(active, "thread deleted")
	}
	s.mu.Unlock()
	if active != nil {
		// Its checkpoints are deleted once it wrote its last one.
		select {
		case <-active.done:
		case <-r.Context().Done():
			return
		}
	}
	if err := s.deleteThreadCheckpoints(r.Context(), id); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// deleteThreadCheckpoints deletes thread id's checkpoints, when the saver
// is a [checkpoint.ThreadDeleter], fenced as a graph's writes are: when
// the saver leases threads ([checkpoint.Leaser]) it takes the thread's
// lease — waiting while another holds it: a run of a process paused past
// its run lease, whose graph still holds the thread, until that lease
// expired — and deletes under it. A process that held the thread and
// wakes up afterwards has its writes refused with a
// *checkpoint.FencedError (its lease was taken over), so that the thread
// stays deleted. A transient fault is retried.
func (s *Server) deleteThreadCheckpoints(ctx context.Context, id string) error {
	del, ok := s.cfg.saver.(checkpoint.ThreadDeleter)
	if !ok {
		return nil
	}
	leaser, ok := s.cfg.saver.(checkpoint.Leaser)
	if !ok {
		return retry(ctx, "deleting the checkpoints of thread "+id, func(ctx context.Context) error { return del.DeleteThread(ctx, id) })
	}
	for n := 1; ; n++ {
		lease, err := leaser.AcquireLease(ctx, id, "server "+s.cfg.holder+" deleting the thread", s.cfg.leaseTTL)
		if err == nil {
			defer func() { _ = leaser.ReleaseLease(context.WithoutCancel(ctx), lease) }()
			fenced := checkpoint.Fenced(s.cfg.saver, lease).(checkpoint.ThreadDeleter) // a deleter stays one
			return retry(ctx, "deleting the checkpoints of thread "+id, func(ctx context.Context) error { return fenced.DeleteThread(ctx, id) })
		}
		if _, held := errors.AsType[*checkpoint.LeaseHeldError](err); !held && !IsTransient(err) {
			return fmt.Errorf("server: deleting the checkpoints of thread %s: %w", id, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server: deleting the checkpoints of thread %s: %w", id, context.Cause(ctx))
		case <-time.After(min(retryDelay(n), s.cfg.heartbeat())):
		}
	}
}

// deleteCheckpoints deletes thread id's checkpoints when the saver is a
// [checkpoint.ThreadDeleter], and does nothing otherwise.
func (s *Server) deleteCheckpoints(ctx context.Context, id string) error {
	if del, ok := s.cfg.saver.(checkpoint.ThreadDeleter); ok {
		return del.DeleteThread(ctx, id)
	}
	return nil
}

// threadGraph returns the thread and the graph its state belongs to (nil
// before any run or graph_id).
func (s *Server) threadGraph(ctx context.Context, id string) (*thread, graphAdapter, error) {
	if s.cfg.backend != nil {
		t, err := s.sharedThread(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		return nil, s.graphOf(t.Metadata), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.lookupThread(id)
	if err != nil {
		return nil, nil, err
	}
	return t, s.graphOf(t.Metadata), nil
}

func (s *Server) getThreadState(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err != nil {
		fail(w, err)
		return
	}
	_, g, err := s.threadGraph(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	if g == nil {
		writeJSON(w, http.StatusOK, emptyState())
		return
	}
	st, err := g.state(r.Context(), id, r.PathValue("cid"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// checkpointArg is a checkpoint given as an id or as
// {checkpoint_id, …} / {configurable: {checkpoint_id}}.
type checkpointArg string

func (c *checkpointArg) UnmarshalJSON(b []byte) error {
	var id string
	if json.Unmarshal(b, &id) == nil {
		*c = checkpointArg(id)
		return nil
	}
	var obj struct {
		CheckpointID string `json:"checkpoint_id"`
		Configurable struct {
			CheckpointID string `json:"checkpoint_id"`
		} `json:"configurable"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	*c = checkpointArg(cmp.Or(obj.CheckpointID, obj.Configurable.CheckpointID))
	return nil
}

func (s *Server) updateThreadState(w http.ResponseWriter, r *http.Request) {
	u, err := parseStateUpdate(r)
	if err != nil {
		fail(w, err)
		return
	}
	id := u.threadID
	t, g, err := s.threadGraph(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	if g == nil {
		fail(w, errNoGraph(id))
		return
	}
	s.mu.Lock()
	busy := t.active != nil || len(t.queue) > 0 || t.updating
	t.updating = !busy
	s.mu.Unlock()
	if busy {
		fail(w, errorf(http.StatusConflict, "Thread is busy"))
		return
	}
	cid, err := g.update(r.Context(), id, u.values, u.asNode, u.checkpoint)
	s.mu.Lock()
	t.updating = false
	s.mu.Unlock()
	if err != nil {
		fail(w, err)
		return
	}
	s.refreshThread(r.Context(), t, g, "")
	writeStateUpdated(w, id, cid)
}

// interruptsByTask returns the pending interrupts of the state's tasks,
// by task id: a thread's "interrupts".
func (st *threadState) interruptsByTask() map[string][]apiInterrupt {
	in := map[string][]apiInterrupt{}
	for _, tk := range st.Tasks {
		if len(tk.Interrupts) > 0 {
			in[tk.ID] = tk.Interrupts
		}
	}
	return in
}

// refreshThread copies the thread's latest state into its values and
// interrupts and sets its status; runErr is the error of the run that
// just ended ("" for none).
func (s *Server) refreshThread(ctx context.Context, t *thread, g graphAdapter, runErr string) {
	st, err := retry1(ctx, "reading the state of thread "+t.ID, func(ctx context.Context) (*threadState, error) { return g.state(ctx, t.ID, "") })
	s.mu.Lock()
	defer s.mu.Unlock()
	t.UpdatedAt = s.cfg.now()
	if err == nil {
		t.Values = normalize(st.Values)
		t.Interrupts = st.interruptsByTask()
	}
	switch {
	case t.active != nil:
		t.Status = statusBusy
	case runErr != "":
		t.Status = statusError
	case err == nil && len(st.Next) > 0:
		t.Status = statusInterrupted
	case len(t.queue) > 0:
		t.Status = statusBusy
	default:
		t.Status = statusIdle
	}
}

func (s *Server) threadHistory(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err != nil {
		fail(w, err)
		return
	}
	var body struct {
		Limit    *int           `json:"limit"`
		Before   checkpointArg  `json:"before"`
		Metadata map[string]any `json:"metadata"`
	}
	if r.Method == http.MethodGet {
		if l := r.URL.Query().Get("limit"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil {
				fail(w, errorf(http.StatusUnprocessableEntity, "limit must be an integer"))
				return
			}
			body.Limit = &n
		}
		body.Before = checkpointArg(r.URL.Query().Get("before"))
	} else if err := decodeBody(r, &body); err != nil {
		fail(w, err)
		return
	}
	limit, _, err := page{Limit: body.Limit}.bounds(10)
	if err != nil {
		fail(w, err)
		return
	}
	_, g, err := s.threadGraph(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	if g == nil {
		writeJSON(w, http.StatusOK, []any{})
		return
	}
	h, err := g.history(r.Context(), id, limit, string(body.Before), body.Metadata)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

func (s *Server) patchThread(w http.ResponseWriter, r *http.Request) {
	id, md, err := parseThreadPatch(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.lookupThread(id)
	if err != nil {
		fail(w, err)
		return
	}
	if err := s.checkGraphChange(id, t.Metadata, md); err != nil {
		fail(w, err)
		return
	}
	for k, v := range md {
		t.Metadata[k] = v
	}
	t.UpdatedAt = s.cfg.now()
	writeJSON(w, http.StatusOK, t)
}

func (s *Server) countThreads(w http.ResponseWriter, r *http.Request) {
	q, err := parseThreadCount(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.threads {
		if t.matches(q) {
			n++
		}
	}
	writeJSON(w, http.StatusOK, n)
}

func (s *Server) countAssistants(w http.ResponseWriter, r *http.Request) {
	f, err := parseAssistantCount(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, len(s.matchingAssistants(f)))
}

// assistantPatchBody is the body of PATCH /assistants/{id}.
type assistantPatchBody struct {
	GraphID     string         `json:"graph_id"`
	Config      map[string]any `json:"config"`
	Context     any            `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
}

// parseAssistantPatch reads and checks PATCH /assistants/{id}.
func (s *Server) parseAssistantPatch(r *http.Request) (assistantPatchBody, error) {
	var body assistantPatchBody
	if err := decodeBody(r, &body); err != nil {
		return body, err
	}
	if body.GraphID != "" {
		if _, ok := s.cfg.graphs[body.GraphID]; !ok {
			return body, errorf(http.StatusNotFound, "no graph %q is registered", body.GraphID)
		}
	}
	return body, nil
}

// errSystemAssistant is the answer to a change of a graph's own assistant.
func errSystemAssistant(graph, change string) error {
	if change == "changed" {
		return errorf(http.StatusConflict, "the system assistant of graph %q cannot be changed; create an assistant of your own", graph)
	}
	return errorf(http.StatusConflict, "the system assistant of graph %q cannot be %s", graph, change)
}

func (s *Server) patchAssistant(w http.ResponseWriter, r *http.Request) {
	body, err := s.parseAssistantPatch(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.resolveAssistant(r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	if a.Metadata["created_by"] == "system" {
		fail(w, errSystemAssistant(a.GraphID, "changed"))
		return
	}
	a.GraphID = cmp.Or(body.GraphID, a.GraphID)
	if body.Config != nil {
		a.Config = normalizeMap(body.Config)
	}
	if body.Context != nil {
		a.Context = normalize(body.Context)
	}
	for k, v := range normalizeMap(body.Metadata) {
		a.Metadata[k] = v
	}
	a.Name = cmp.Or(body.Name, a.Name)
	if body.Description != nil {
		a.Description = body.Description
	}
	a.Version = len(a.versions) + 1
	a.UpdatedAt = s.cfg.now()
	a.snapshot(a.UpdatedAt)
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) deleteAssistant(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.resolveAssistant(r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	if a.Metadata["created_by"] == "system" {
		fail(w, errSystemAssistant(a.GraphID, "deleted"))
		return
	}
	delete(s.assistants, a.ID)
	w.WriteHeader(http.StatusNoContent)
}

// getThreadStateAt answers POST /threads/{id}/state/checkpoint, the form
// the SDK uses when getState is given a checkpoint object.
func (s *Server) getThreadStateAt(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Checkpoint checkpointArg `json:"checkpoint"`
	}
	if err := decodeBody(r, &body); err != nil {
		fail(w, err)
		return
	}
	r.SetPathValue("cid", string(body.Checkpoint))
	s.getThreadState(w, r)
}

// parseAssistantVersions reads and checks POST /assistants/{id}/versions.
func parseAssistantVersions(r *http.Request) (filter map[string]any, limit, offset int, err error) {
	var body struct {
		page
		Metadata map[string]any `json:"metadata"`
	}
	limit, offset, err = decodePaged(r, &body, 10)
	return normalizeMap(body.Metadata), limit, offset, err
}

// parseLatestVersion reads POST /assistants/{id}/latest.
func parseLatestVersion(r *http.Request) (int, error) {
	var body struct {
		Version int `json:"version"`
	}
	err := decodeBody(r, &body)
	return body.Version, err
}

func (s *Server) assistantVersions(w http.ResponseWriter, r *http.Request) {
	filter, limit, offset, err := parseAssistantVersions(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	a, err := s.resolveAssistant(r.PathValue("id"))
	s.mu.Unlock()
	if err != nil {
		fail(w, err)
		return
	}
	s.assistantVersionsFromMemory(w, filter, limit, offset, a)
}

func (s *Server) setLatestVersion(w http.ResponseWriter, r *http.Request) {
	version, err := parseLatestVersion(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.resolveAssistant(r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	i := slices.IndexFunc(a.versions, func(v assistantVersion) bool { return v.Version == version })
	if i < 0 {
		fail(w, errorf(http.StatusNotFound, "assistant %s has no version %d", a.ID, version))
		return
	}
	v := a.versions[i]
	a.GraphID, a.Config, a.Context, a.Name, a.Description, a.Version = v.GraphID, v.Config, v.Context, v.Name, v.Description, v.Version
	a.Metadata = make(map[string]any, len(v.Metadata))
	for k, x := range v.Metadata {
		a.Metadata[k] = x
	}
	a.UpdatedAt = s.cfg.now()
	writeJSON(w, http.StatusOK, a)
}
