package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/agentgraph/agentgraph/server/internal/jsonb"
)

// The assistants: the graphs' own assistants stay computed
// in each process (s.assistants holds them alone); every other assistant,
// with its versions, lives in the Backend, so that any process reads,
// searches, patches and runs it.

// resolveTimeout bounds the reading of an assistant when a run names it.
const resolveTimeout = 30 * time.Second

// toAssistant returns rec as the API's Assistant.
func toAssistant(rec AssistantRecord) (*assistant, error) {
	a := &assistant{ID: rec.ID, GraphID: rec.GraphID, Config: rec.Config, Metadata: rec.Metadata, Name: rec.Name,
		Description: rec.Description, Version: rec.Version, CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt}
	if len(rec.Context) > 0 {
		if err := json.Unmarshal(rec.Context, &a.Context); err != nil {
			return nil, fmt.Errorf("server: assistant %s has a context that does not decode: %w", rec.ID, err)
		}
	}
	if a.Config == nil {
		a.Config = map[string]any{}
	}
	if a.Metadata == nil {
		a.Metadata = map[string]any{}
	}
	if a.Context == nil {
		a.Context = map[string]any{}
	}
	return a, nil
}

// toVersion returns rec, a version, as the API's AssistantVersion.
func toVersion(rec AssistantRecord) (assistantVersion, error) {
	a, err := toAssistant(rec)
	if err != nil {
		return assistantVersion{}, err
	}
	return assistantVersion{ID: a.ID, GraphID: a.GraphID, Config: a.Config, Context: a.Context, Metadata: a.Metadata,
		Name: a.Name, Description: a.Description, Version: a.Version, CreatedAt: a.CreatedAt}, nil
}

// sharedAssistant reads the assistant id names: a graph's own from
// memory, any other from the Backend.
func (s *Server) sharedAssistant(ctx context.Context, id string) (a *assistant, system bool, err error) {
	s.mu.Lock()
	a, err = s.resolveAssistant(id)
	s.mu.Unlock()
	if err == nil {
		return a, true, nil
	}
	a, err = s.backendAssistant(ctx, assistantKey(id))
	return a, false, err
}

// backendAssistant reads the assistant id from the Backend: a 404 when
// it has none.
func (s *Server) backendAssistant(ctx context.Context, id string) (*assistant, error) {
	rec, err := s.cfg.backend.Assistant(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, errorf(http.StatusNotFound, "No assistant found for %q", id)
	}
	if err != nil {
		return nil, backendError(err)
	}
	return toAssistant(rec)
}

// sharedResolveAssistant reads an assistant other than the graphs' own
// from the Backend for runAssistant: for a run, or the graph drawn.
// This process must serve its graph.
func (s *Server) sharedResolveAssistant(ctx context.Context, id string) (*assistant, error) {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	a, err := s.backendAssistant(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, ok := s.cfg.graphs[a.GraphID]; !ok {
		return nil, errorf(http.StatusConflict, "assistant %s is of graph %q, which this server does not serve", id, a.GraphID)
	}
	return a, nil
}

// contextJSON encodes an assistant's context ({} when nil).
func contextJSON(v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("{}"), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "context: %v", err)
	}
	return b, nil
}

func (s *Server) sharedCreateAssistant(w http.ResponseWriter, r *http.Request) {
	body, err := s.parseAssistantCreate(r)
	if err != nil {
		fail(w, err)
		return
	}
	id := cmp.Or(body.AssistantID, newUUID())
	s.mu.Lock()
	sys, isSystem := s.assistants[id]
	s.mu.Unlock()
	if isSystem {
		if body.IfExists == "do_nothing" {
			writeJSON(w, http.StatusOK, sys)
			return
		}
		fail(w, errorf(http.StatusConflict, "Assistant already exists"))
		return
	}
	cx, err := contextJSON(body.Context)
	if err != nil {
		fail(w, err)
		return
	}
	md, filter, err := s.authorizeCreate(r.Context(), ResourceAssistants, body.AssistantID, "", normalizeMap(body.Metadata))
	if err != nil {
		fail(w, err)
		return
	}
	now := s.cfg.now()
	rec, err := s.cfg.backend.CreateAssistant(r.Context(), AssistantRecord{ID: id, GraphID: body.GraphID, Config: normalizeMap(body.Config),
		Context: cx, Metadata: md, Name: cmp.Or(body.Name, "Untitled"), Description: body.Description,
		Version: 1, CreatedAt: now, UpdatedAt: now}, body.IfExists)
	if errors.Is(err, ErrExists) || err == nil && !holds(rec.Metadata, filter) {
		fail(w, errorf(http.StatusConflict, "Assistant already exists"))
		return
	}
	s.answerAssistant(w, rec, err)
}

// answerAssistant answers rec, or err.
func (s *Server) answerAssistant(w http.ResponseWriter, rec AssistantRecord, err error) {
	if err != nil {
		fail(w, backendError(err))
		return
	}
	a, err := toAssistant(rec)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) sharedGetAssistant(w http.ResponseWriter, r *http.Request) {
	a, system, err := s.sharedAssistant(r.Context(), r.PathValue("id"))
	if err == nil {
		_, err = s.authorizeAssistant(r.Context(), a, system, ActionRead, nil)
	}
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// sharedMatching returns the assistants f selects, the newest first, from
// offset on, at most limit of them (0: none), and how many f selects: the
// graphs' own from memory merged with the Backend's (those the
// Authorizer lets r's identity find).
func (s *Server) sharedMatching(r *http.Request, f assistantFilter, limit, offset int) ([]*assistant, int, error) {
	s.mu.Lock()
	out := s.matchingAssistants(f)
	s.mu.Unlock()
	system := len(out)
	q := AssistantQuery{GraphID: f.GraphID, Name: f.Name, Metadata: f.Metadata}
	if limit > 0 {
		q.Limit = offset + limit // the page may hold any of the first offset+limit stored
	}
	var recs []AssistantRecord
	total := 0
	md, some, err := s.authorizeSearch(r.Context(), ResourceAssistants, q.Metadata)
	if err != nil {
		return nil, 0, err
	}
	if some {
		q.Metadata = md
		if recs, total, err = s.cfg.backend.SearchAssistants(r.Context(), q); err != nil {
			return nil, 0, backendError(err)
		}
	}
	for _, rec := range recs {
		a, err := toAssistant(rec)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, a)
	}
	slices.SortFunc(out, compareAssistants)
	lo := min(offset, len(out))
	return out[lo:min(lo+limit, len(out))], total + system, nil
}

func (s *Server) sharedSearchAssistants(w http.ResponseWriter, r *http.Request) {
	f, limit, offset, err := parseAssistantSearch(r)
	if err != nil {
		fail(w, err)
		return
	}
	out, total, err := s.sharedMatching(r, f, limit, offset)
	if err != nil {
		fail(w, err)
		return
	}
	setPages(w, total, limit, offset)
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) sharedCountAssistants(w http.ResponseWriter, r *http.Request) {
	f, err := parseAssistantCount(r)
	if err != nil {
		fail(w, err)
		return
	}
	_, total, err := s.sharedMatching(r, f, 0, 0)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, total)
}

// sharedStored reads the assistant of the path for a change (action, of
// metadata md, which the Authorizer may tag): a graph's own fails with
// change ("changed", "deleted").
func (s *Server) sharedStored(r *http.Request, change string, action Action, md map[string]any) (string, map[string]any, error) {
	a, system, err := s.sharedAssistant(r.Context(), r.PathValue("id"))
	if err != nil {
		return "", nil, err
	}
	if system {
		return "", nil, errSystemAssistant(a.GraphID, change)
	}
	if md, err = s.authorizeAssistant(r.Context(), a, system, action, md); err != nil {
		return "", nil, err
	}
	return a.ID, md, nil
}

func (s *Server) sharedPatchAssistant(w http.ResponseWriter, r *http.Request) {
	body, err := s.parseAssistantPatch(r)
	if err != nil {
		fail(w, err)
		return
	}
	id, md, err := s.sharedStored(r, "changed", ActionUpdate, normalizeMap(body.Metadata))
	if err != nil {
		fail(w, err)
		return
	}
	p := AssistantPatch{GraphID: body.GraphID, Metadata: md, Name: body.Name, Description: body.Description}
	if body.Config != nil {
		p.Config = normalizeMap(body.Config)
	}
	if body.Context != nil {
		if p.Context, err = contextJSON(body.Context); err != nil {
			fail(w, err)
			return
		}
	}
	rec, err := s.cfg.backend.PatchAssistant(r.Context(), id, p)
	s.answerAssistant(w, rec, err)
}

func (s *Server) sharedDeleteAssistant(w http.ResponseWriter, r *http.Request) {
	id, _, err := s.sharedStored(r, "deleted", ActionDelete, nil)
	if err != nil {
		fail(w, err)
		return
	}
	if err := s.cfg.backend.DeleteAssistant(r.Context(), id); err != nil {
		fail(w, backendError(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) sharedAssistantVersions(w http.ResponseWriter, r *http.Request) {
	filter, limit, offset, err := parseAssistantVersions(r)
	if err != nil {
		fail(w, err)
		return
	}
	a, system, err := s.sharedAssistant(r.Context(), r.PathValue("id"))
	if err == nil {
		_, err = s.authorizeAssistant(r.Context(), a, system, ActionRead, nil)
	}
	if err != nil {
		fail(w, err)
		return
	}
	if system {
		s.assistantVersionsFromMemory(w, filter, limit, offset, a)
		return
	}
	recs, total, err := s.cfg.backend.AssistantVersions(r.Context(), a.ID, filter, limit, offset)
	if err != nil {
		fail(w, backendError(err))
		return
	}
	out := make([]assistantVersion, 0, len(recs))
	for _, rec := range recs {
		v, err := toVersion(rec)
		if err != nil {
			fail(w, err)
			return
		}
		out = append(out, v)
	}
	setPages(w, total, limit, offset)
	writeJSON(w, http.StatusOK, out)
}

// assistantVersionsFromMemory answers the versions of a graph's own
// assistant.
func (s *Server) assistantVersionsFromMemory(w http.ResponseWriter, filter map[string]any, limit, offset int, a *assistant) {
	s.mu.Lock()
	var out []assistantVersion
	for i := len(a.versions) - 1; i >= 0; i-- {
		if jsonb.Contains(map[string]any(a.versions[i].Metadata), map[string]any(filter)) {
			out = append(out, a.versions[i])
		}
	}
	out = paginate(w, out, limit, offset)
	b, err := json.Marshal(out)
	s.mu.Unlock()
	writeRaw(w, b, err)
}

func (s *Server) sharedSetLatestVersion(w http.ResponseWriter, r *http.Request) {
	version, err := parseLatestVersion(r)
	if err != nil {
		fail(w, err)
		return
	}
	a, system, err := s.sharedAssistant(r.Context(), r.PathValue("id"))
	if err == nil {
		_, err = s.authorizeAssistant(r.Context(), a, system, ActionUpdate, nil)
	}
	if err != nil {
		fail(w, err)
		return
	}
	if system {
		if version != a.Version {
			fail(w, errorf(http.StatusNotFound, "assistant %s has no version %d", a.ID, version))
			return
		}
		writeJSON(w, http.StatusOK, a)
		return
	}
	rec, err := s.cfg.backend.SetLatestAssistantVersion(r.Context(), a.ID, version)
	if errors.Is(err, ErrNotFound) {
		fail(w, errorf(http.StatusNotFound, "assistant %s has no version %d", a.ID, version))
		return
	}
	s.answerAssistant(w, rec, err)
}
