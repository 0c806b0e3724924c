package server

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The parsers of this file read and check the requests the handlers
// serve, so that each handler keeps only its calls to the Backend.

// threadCreate is the body of POST /threads.
type threadCreate struct {
	ThreadID string         `json:"thread_id"`
	Metadata map[string]any `json:"metadata"`
	IfExists string         `json:"if_exists"`
	GraphID  string         `json:"graph_id"`
}

// parseThreadCreate reads and checks the body of POST /threads, and
// returns it with the new thread's metadata.
func (s *Server) parseThreadCreate(r *http.Request) (threadCreate, map[string]any, error) {
	// Decoded into an unnamed struct, as the decoding errors name its
	// type.
	var raw struct {
		ThreadID string         `json:"thread_id"`
		Metadata map[string]any `json:"metadata"`
		IfExists string         `json:"if_exists"`
		GraphID  string         `json:"graph_id"`
	}
	if err := decodeBody(r, &raw); err != nil {
		return threadCreate{}, nil, err
	}
	body := threadCreate(raw)
	body.ThreadID = strings.ToLower(body.ThreadID)
	if body.ThreadID != "" && !validUUID(body.ThreadID) {
		return body, nil, errorf(http.StatusUnprocessableEntity, "thread_id must be a UUID")
	}
	md := normalizeMap(body.Metadata)
	if body.GraphID != "" {
		md["graph_id"] = body.GraphID
	}
	if g, ok := md["graph_id"].(string); ok {
		if _, known := s.cfg.graphs[g]; !known {
			return body, nil, errorf(http.StatusNotFound, "no graph %q is registered", g)
		}
	}
	return body, md, nil
}

// parseThreadSearch reads and checks the body of POST /threads/search:
// its filters (normalized), its order (created_at, newest first, unless
// given) and its page (10 threads unless given).
func parseThreadSearch(r *http.Request) (ThreadQuery, error) {
	var body struct {
		page
		Metadata  map[string]any `json:"metadata"`
		Values    map[string]any `json:"values"`
		IDs       []string       `json:"ids"`
		Status    string         `json:"status"`
		SortBy    string         `json:"sort_by"`
		SortOrder string         `json:"sort_order"`
	}
	limit, offset, err := decodePaged(r, &body, 10)
	if err != nil {
		return ThreadQuery{}, err
	}
	switch body.SortBy {
	case "", "created_at", "updated_at", "thread_id", "status":
	default:
		return ThreadQuery{}, errorf(http.StatusUnprocessableEntity, "sort_by must be thread_id, status, created_at or updated_at")
	}
	for i, id := range body.IDs {
		body.IDs[i] = strings.ToLower(id)
	}
	return ThreadQuery{IDs: body.IDs, Metadata: normalizeMap(body.Metadata), Values: normalizeMap(body.Values),
		Status: body.Status, SortBy: cmp.Or(body.SortBy, "created_at"), Desc: body.SortOrder != "asc",
		Limit: limit, Offset: offset}, nil
}

// parseThreadCount reads the body of POST /threads/count: the filters of
// the threads to count (normalized), with no page.
func parseThreadCount(r *http.Request) (ThreadQuery, error) {
	var body struct {
		Metadata map[string]any `json:"metadata"`
		Values   map[string]any `json:"values"`
		Status   string         `json:"status"`
	}
	if err := decodeBody(r, &body); err != nil {
		return ThreadQuery{}, err
	}
	return ThreadQuery{Metadata: normalizeMap(body.Metadata), Values: normalizeMap(body.Values), Status: body.Status}, nil
}

// parseThreadPatch reads PATCH /threads/{tid}: the thread's id and the
// metadata to merge into the thread's (normalized).
func parseThreadPatch(r *http.Request) (id string, metadata map[string]any, err error) {
	if id, err = threadID(r); err != nil {
		return "", nil, err
	}
	var body struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := decodeBody(r, &body); err != nil {
		return "", nil, err
	}
	return id, normalizeMap(body.Metadata), nil
}

// checkGraphChange checks a patch of thread id's metadata old with
// metadata md: a thread that holds the state of a graph keeps its
// graph_id, and a graph_id set must name a registered graph.
func (s *Server) checkGraphChange(id string, old, md map[string]any) error {
	g, ok := md["graph_id"]
	if !ok || g == old["graph_id"] {
		return nil
	}
	if old["graph_id"] != nil {
		return errorf(http.StatusConflict, "thread %s holds the state of graph %v; its graph_id cannot change", id, old["graph_id"])
	}
	if name, _ := g.(string); s.cfg.graphs[name] == nil {
		return errorf(http.StatusNotFound, "no graph %v is registered", g)
	}
	return nil
}

// stateUpdate is the request POST /threads/{tid}/state.
type stateUpdate struct {
	threadID   string
	values     json.RawMessage
	asNode     string
	checkpoint string // the checkpoint the update forks from ("" for the latest)
}

// parseStateUpdate reads POST /threads/{tid}/state.
func parseStateUpdate(r *http.Request) (stateUpdate, error) {
	id, err := threadID(r)
	if err != nil {
		return stateUpdate{}, err
	}
	// Decoded into an unnamed struct, as the decoding errors name its
	// type.
	var body struct {
		Values       json.RawMessage `json:"values"`
		AsNode       string          `json:"as_node"`
		CheckpointID checkpointArg   `json:"checkpoint_id"`
		Checkpoint   checkpointArg   `json:"checkpoint"`
	}
	if err := decodeBody(r, &body); err != nil {
		return stateUpdate{}, err
	}
	return stateUpdate{threadID: id, values: body.Values, asNode: body.AsNode,
		checkpoint: string(cmp.Or(body.CheckpointID, body.Checkpoint))}, nil
}

// errNoGraph answers a state update of thread id, which has no graph yet.
func errNoGraph(id string) error {
	return errorf(http.StatusBadRequest, "thread %s has no graph yet: create it with metadata.graph_id or run a graph on it first", id)
}

// writeStateUpdated answers a state update of thread id that wrote
// checkpoint cid.
func writeStateUpdated(w http.ResponseWriter, id, cid string) {
	writeJSON(w, http.StatusOK, map[string]any{"checkpoint": checkpointRef{ThreadID: id, CheckpointID: cid}})
}

// parseRunPath reads the path of a run's routes: the run's id and its
// thread's ("" for the stateless routes, /runs/{rid}).
func parseRunPath(r *http.Request) (tid, rid string, err error) {
	if r.PathValue("tid") != "" {
		if tid, err = threadID(r); err != nil {
			return "", "", err
		}
	}
	rid = strings.ToLower(r.PathValue("rid"))
	if !validUUID(rid) {
		return "", "", errorf(http.StatusUnprocessableEntity, "run_id %q is not a UUID", rid)
	}
	return tid, rid, nil
}

// errRunNotFound answers a run that is not there, or not on the thread
// of the path.
func errRunNotFound() error { return errorf(http.StatusNotFound, "Run not found") }

// runList is the request GET /threads/{tid}/runs.
type runList struct {
	threadID string
	status   string // "" for any
	limit    int
	offset   int
}

// parseRunList reads and checks GET /threads/{tid}/runs: the thread's
// id, the status of the runs to list and the page (10 runs unless
// given).
func parseRunList(r *http.Request) (runList, error) {
	tid, err := threadID(r)
	if err != nil {
		return runList{}, err
	}
	q := r.URL.Query()
	var p page
	if n, ok, err := queryInt(q, "limit"); err != nil {
		return runList{}, err
	} else if ok {
		p.Limit = &n
	}
	if n, ok, err := queryInt(q, "offset"); err != nil {
		return runList{}, err
	} else if ok {
		p.Offset = n
	}
	limit, offset, err := p.bounds(10)
	if err != nil {
		return runList{}, err
	}
	return runList{threadID: tid, status: q.Get("status"), limit: limit, offset: offset}, nil
}

// queryInt returns the integer query parameter name, and whether it is
// given.
func queryInt(q url.Values, name string) (int, bool, error) {
	v := q.Get(name)
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, false, errorf(http.StatusUnprocessableEntity, "%s must be an integer", name)
	}
	return n, true, nil
}

// parseRunCancel checks the query of POST …/runs/{rid}/cancel and
// returns whether to wait until the run ended.
func parseRunCancel(r *http.Request) (wait bool, err error) {
	q := r.URL.Query()
	if a := q.Get("action"); a != "" && a != "interrupt" {
		return false, errorf(http.StatusUnprocessableEntity, "cancel action %q is not supported by this server yet (supported: interrupt)", a)
	}
	return truthy(q.Get("wait")), nil
}

// parseLastEventID returns the index of the first event a stream that is
// joined sends: the one after the request's Last-Event-ID (0 without).
func parseLastEventID(r *http.Request) (int, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < -1 {
		return 0, errorf(http.StatusBadRequest, "Last-Event-ID must be an event id or -1")
	}
	return n + 1, nil
}

// setStreamHeaders sets the headers of a run's event stream at location;
// a resumable stream names where the SDKs reconnect, with Last-Event-ID,
// when the connection drops.
func setStreamHeaders(w http.ResponseWriter, location string, resumable bool) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Location", location)
	if resumable {
		h.Set("Location", location+"/stream")
	}
}
