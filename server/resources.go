package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/server/internal/jsonb"
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
// Memory holds only the graphs' own; the others are the Backend's (see
// runAssistant).
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

// runAssistant resolves the assistant a run or a drawing names: a
// graph's own from memory, else from the Backend (see
// sharedResolveAssistant). It holds s.mu for the lookup in memory only,
// never while it reads the Backend.
func (s *Server) runAssistant(ctx context.Context, id string) (*assistant, error) {
	s.mu.Lock()
	a, err := s.resolveAssistant(id)
	s.mu.Unlock()
	if err == nil {
		return a, nil
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
		jsonb.Contains(map[string]any(a.Metadata), map[string]any(f.Metadata))
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
func (s *Server) threadGraph(ctx context.Context, id string) (ThreadRecord, graphAdapter, error) {
	t, err := s.sharedThread(ctx, id)
	if err != nil {
		return ThreadRecord{}, nil, err
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
