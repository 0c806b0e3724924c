package server

import (
	"context"
	"errors"
	"maps"
	"net/http"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// copyCheckpoints copies thread from's checkpoints to thread to in the
// server's checkpointer; a thread without any copies none.
func (s *Server) copyCheckpoints(ctx context.Context, from, to string) error {
	if s.cfg.saver == nil {
		return errorf(http.StatusUnprocessableEntity, "copying a thread needs the server's checkpointer (server.WithCheckpointer)")
	}
	if err := checkpoint.CopyThread(ctx, s.cfg.saver, from, to); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return err
	}
	return nil
}

// copiedStatus is the status of a copy of a thread that has status: a
// copy has no run.
func copiedStatus(status string) string {
	if status == statusBusy {
		return statusIdle
	}
	return status
}

// graphOf returns the graph a thread's metadata names, or nil.
func (s *Server) graphOf(md map[string]any) graphAdapter {
	name, _ := md["graph_id"].(string)
	if g, ok := s.cfg.graphs[name]; ok {
		return g
	}
	return nil
}

// sharedCopyThread serves POST /threads/{id}/copy: a new thread with the
// source's metadata (thread_id set to the copy's), state and checkpoints.
func (s *Server) sharedCopyThread(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err != nil {
		fail(w, err)
		return
	}
	src, _, err := s.authorizedThread(r.Context(), id, ActionRead, nil)
	if err != nil {
		fail(w, err)
		return
	}
	newID := newUUID()
	md := maps.Clone(src.Metadata)
	if md == nil {
		md = map[string]any{}
	}
	md["thread_id"] = newID
	if md, _, err = s.authorizeCreate(r.Context(), ResourceThreads, newID, "", md); err != nil {
		fail(w, err)
		return
	}
	if err := s.copyCheckpoints(r.Context(), id, newID); err != nil {
		fail(w, err)
		return
	}
	rec := ThreadRecord{ID: newID, Metadata: md, Status: copiedStatus(src.Status), Config: map[string]any{},
		Values: src.Values, Interrupts: src.Interrupts}
	if g := s.graphOf(md); g != nil {
		// What the copy shows comes from the checkpoints it got.
		st, err := s.latestState(r.Context(), g, newID, src.Status == statusError)
		if err != nil {
			fail(w, err)
			return
		}
		rec.Values, rec.Interrupts, rec.Status = st.Values, st.Interrupts, st.Status
	}
	rec.CreatedAt = s.cfg.now()
	rec.UpdatedAt = rec.CreatedAt
	t, err := s.cfg.backend.CreateThread(r.Context(), rec, "")
	if err != nil {
		fail(w, backendError(err))
		return
	}
	writeJSON(w, http.StatusOK, t)
}
