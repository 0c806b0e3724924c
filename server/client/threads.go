package client

import (
	"context"
	"errors"
)

// Threads is the threads group of a [Client].
type Threads struct{ c *Client }

// ThreadCreate is what [Threads.Create] creates.
type ThreadCreate struct {
	// ThreadID is the new thread's id (a UUID; the server picks one when
	// empty).
	ThreadID string `json:"thread_id,omitempty"`
	// Metadata is the thread's metadata.
	Metadata map[string]any `json:"metadata,omitempty"`
	// IfExists is "raise" (the default: 409 when ThreadID exists) or
	// "do_nothing" (return the existing thread).
	IfExists string `json:"if_exists,omitempty"`
	// GraphID, when set, is recorded as metadata "graph_id", which the
	// servers read to know the graph of a thread's state before its first
	// run.
	GraphID string `json:"-"`
}

// Create creates a thread.
func (t *Threads) Create(ctx context.Context, p ThreadCreate) (*Thread, error) {
	if p.GraphID != "" {
		md := make(map[string]any, len(p.Metadata)+1)
		for k, v := range p.Metadata {
			md[k] = v
		}
		md["graph_id"] = p.GraphID
		p.Metadata = md
	}
	var out Thread
	if err := t.c.do(ctx, "POST", "/threads", nil, p, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ThreadSearch filters [Threads.Search]; its zero value finds the first
// page of every thread.
type ThreadSearch struct {
	// Metadata and Values match threads whose metadata and values contain
	// them.
	Metadata map[string]any `json:"metadata,omitempty"`
	Values   map[string]any `json:"values,omitempty"`
	IDs      []string       `json:"ids,omitempty"`
	// Status is a thread status (ThreadStatusIdle, ThreadStatusBusy, …).
	Status    string `json:"status,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	Offset    int    `json:"offset,omitempty"`
	SortBy    string `json:"sort_by,omitempty"`
	SortOrder string `json:"sort_order,omitempty"`
}

// Search returns the threads matching q.
func (t *Threads) Search(ctx context.Context, q ThreadSearch) ([]Thread, error) {
	var out []Thread
	err := t.c.do(ctx, "POST", "/threads/search", nil, q, &out)
	return out, err
}

// Get returns thread id.
func (t *Threads) Get(ctx context.Context, id string) (*Thread, error) {
	var out Thread
	if err := t.c.do(ctx, "GET", "/threads/"+seg(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Update merges metadata into thread id's metadata.
func (t *Threads) Update(ctx context.Context, id string, metadata map[string]any) (*Thread, error) {
	var out Thread
	body := struct {
		Metadata map[string]any `json:"metadata"`
	}{metadata}
	if err := t.c.do(ctx, "PATCH", "/threads/"+seg(id), nil, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Delete deletes thread id, its runs and its checkpoints.
func (t *Threads) Delete(ctx context.Context, id string) error {
	err := t.c.do(ctx, "DELETE", "/threads/"+seg(id), nil, nil, nil)
	return err
}

// Copy copies thread id, with its state and history, to a new thread.
func (t *Threads) Copy(ctx context.Context, id string) (*Thread, error) {
	var out Thread
	if err := t.c.do(ctx, "POST", "/threads/"+seg(id)+"/copy", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// State returns thread id's current state, or its state at checkpoint
// checkpointID when that is not empty.
func (t *Threads) State(ctx context.Context, id, checkpointID string) (*ThreadState, error) {
	path := "/threads/" + seg(id) + "/state"
	if checkpointID != "" {
		path += "/" + seg(checkpointID)
	}
	var out ThreadState
	if err := t.c.do(ctx, "GET", path, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// HistoryRequest filters [Threads.History].
type HistoryRequest struct {
	// Limit is how many states, newest first (the servers' default: 10).
	Limit int `json:"limit,omitempty"`
	// Before lists only the checkpoints before this checkpoint id.
	Before string `json:"before,omitempty"`
	// Metadata lists only checkpoints whose metadata contains it.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Checkpoint selects a subgraph's namespace.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
}

// History returns thread id's states, newest first.
func (t *Threads) History(ctx context.Context, id string, q HistoryRequest) ([]ThreadState, error) {
	var out []ThreadState
	err := t.c.do(ctx, "POST", "/threads/"+seg(id)+"/history", nil, q, &out)
	return out, err
}

// StateUpdate is a write to a thread's state (see [Threads.UpdateState]).
type StateUpdate struct {
	// Values are written through the state's reducers.
	Values any `json:"values"`
	// AsNode is the node the write is made as (it decides what runs
	// next).
	AsNode string `json:"as_node,omitempty"`
	// CheckpointID forks from that checkpoint instead of the latest.
	CheckpointID string `json:"checkpoint_id,omitempty"`
}

// UpdateState writes u to thread id's state as a node would, and returns
// the new checkpoint.
func (t *Threads) UpdateState(ctx context.Context, id string, u StateUpdate) (*Checkpoint, error) {
	var out struct {
		Checkpoint *Checkpoint `json:"checkpoint"`
	}
	if err := t.c.do(ctx, "POST", "/threads/"+seg(id)+"/state", nil, u, &out); err != nil {
		return nil, err
	}
	if out.Checkpoint == nil {
		return nil, errors.New("client: the state update's answer names no checkpoint")
	}
	return out.Checkpoint, nil
}
