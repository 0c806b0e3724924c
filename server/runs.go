package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

// Run statuses.
const (
	runPending     = "pending"
	runRunning     = "running"
	runSuccess     = "success"
	runError       = "error"
	runInterrupted = "interrupted"
)

type runErrorData struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// runCreate is the API's RunCreate body.
type runCreate struct {
	AssistantID string          `json:"assistant_id"`
	Input       json.RawMessage `json:"input"`
	Command     *commandBody    `json:"command"`
	Config      struct {
		RecursionLimit *int `json:"recursion_limit"` // nil: the graph's
	} `json:"config"`
	Metadata          map[string]any  `json:"metadata"`
	CheckpointID      checkpointArg   `json:"checkpoint_id"`
	Checkpoint        checkpointArg   `json:"checkpoint"`
	StreamMode        json.RawMessage `json:"stream_mode"`
	StreamSubgraphs   bool            `json:"stream_subgraphs"`
	StreamResumable   bool            `json:"stream_resumable"`
	OnDisconnect      string          `json:"on_disconnect"`
	OnCompletion      string          `json:"on_completion"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	IfNotExists       string          `json:"if_not_exists"`
	InterruptBefore   json.RawMessage `json:"interrupt_before"`
	InterruptAfter    json.RawMessage `json:"interrupt_after"`
	AfterSeconds      float64         `json:"after_seconds"`
	Webhook           string          `json:"webhook"`
}

// recursionLimit is the run's recursion limit, 0 for the graph's.
func (b *runCreate) recursionLimit() int {
	if l := b.Config.RecursionLimit; l != nil {
		return *l
	}
	return 0
}

// supportedModes are the stream modes the server streams.
var supportedModes = []string{"values", "updates", "custom", "messages", "messages-tuple", "tasks", "checkpoints", "debug"}

func parseModes(raw json.RawMessage) (map[string]bool, []string, error) {
	var list []string
	if b := bytes.TrimSpace(raw); len(b) == 0 || string(b) == "null" {
		list = []string{"values"}
	} else {
		var one string
		if json.Unmarshal(b, &one) == nil {
			list = []string{one}
		} else if err := json.Unmarshal(b, &list); err != nil {
			return nil, nil, errorf(http.StatusUnprocessableEntity, "stream_mode must be a string or a list of strings")
		}
	}
	modes := map[string]bool{}
	for _, m := range list {
		if m == "events" {
			return nil, nil, errorf(http.StatusUnprocessableEntity, "stream_mode \"events\" (LangChain's astream_events) is not supported by this server: use \"messages-tuple\" for model tokens, \"updates\" or \"tasks\" for node starts and ends, \"debug\" for both (supported: %v)", supportedModes)
		}
		if !slices.Contains(supportedModes, m) {
			return nil, nil, errorf(http.StatusUnprocessableEntity, "stream_mode %q is not supported by this server (supported: %v)", m, supportedModes)
		}
		modes[m] = true
	}
	return modes, list, nil
}

func parseNodes(raw json.RawMessage, field string) ([]string, error) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(b, &one) == nil {
		if one != "*" {
			return nil, errorf(http.StatusUnprocessableEntity, "%s must be \"*\" or a list of node names", field)
		}
		return []string{"*"}, nil
	}
	list := []string{} // given, even empty: not nil
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "%s must be \"*\" or a list of node names", field)
	}
	return list, nil
}

// errStrategy is the reply to a run refused by the reject strategy.
var errStrategy = errorf(http.StatusConflict, "Thread is already running a task. Wait for it to finish or choose a different multitask strategy.")

// runSpec is a validated RunCreate body, with the run's thread and graph.
type runSpec struct {
	stateless bool
	tid       string
	body      runCreate
	modes     map[string]bool
	modeList  []string
	before    []string
	after     []string
	strategy  string
	assistant *assistant
	// release releases the events sharedNewRun held for the stream that
	// creates the run.
	release func()
}

// parseRun reads and validates the RunCreate body of r, for the thread of
// r's path (a new one for the stateless routes).
func (s *Server) parseRun(r *http.Request) (*runSpec, error) {
	sp := &runSpec{stateless: r.PathValue("tid") == "", tid: newUUID()}
	if !sp.stateless {
		var err error
		if sp.tid, err = threadID(r); err != nil {
			return nil, err
		}
	}
	body := &sp.body
	if err := decodeBody(r, body); err != nil {
		return nil, err
	}
	var err error
	if sp.modes, sp.modeList, err = parseModes(body.StreamMode); err != nil {
		return nil, err
	}
	if body.Webhook != "" || body.AfterSeconds != 0 {
		return nil, errorf(http.StatusUnprocessableEntity, "webhook and after_seconds are not supported by this server yet")
	}
	if sp.before, err = parseNodes(body.InterruptBefore, "interrupt_before"); err != nil {
		return nil, err
	}
	if sp.after, err = parseNodes(body.InterruptAfter, "interrupt_after"); err != nil {
		return nil, err
	}
	sp.strategy = cmp.Or(body.MultitaskStrategy, "reject")
	switch sp.strategy {
	case "reject", "enqueue", "interrupt", "rollback":
	default:
		return nil, errorf(http.StatusUnprocessableEntity, "multitask_strategy must be reject, interrupt, rollback or enqueue")
	}
	if body.OnDisconnect != "" && body.OnDisconnect != "cancel" && body.OnDisconnect != "continue" {
		return nil, errorf(http.StatusUnprocessableEntity, "on_disconnect must be cancel or continue")
	}
	if body.OnCompletion != "" && body.OnCompletion != "delete" && body.OnCompletion != "keep" {
		return nil, errorf(http.StatusUnprocessableEntity, "on_completion must be delete or keep")
	}
	if body.AssistantID == "" {
		return nil, errorf(http.StatusUnprocessableEntity, "assistant_id is required")
	}
	if l := body.Config.RecursionLimit; l != nil && *l <= 0 {
		return nil, errorf(http.StatusUnprocessableEntity, "config.recursion_limit must be at least 1 (got %d)", *l)
	}

	if body.Command != nil && body.Input != nil && string(bytes.TrimSpace(body.Input)) != "null" {
		return nil, errorf(http.StatusUnprocessableEntity, "give input or command, not both")
	}
	// A run from a checkpoint the thread does not have is a bad request,
	// not a run that fails (checked before the lock: it reads the saver).
	if cp := string(cmp.Or(body.CheckpointID, body.Checkpoint)); cp != "" && s.cfg.saver != nil {
		_, err := s.cfg.saver.Get(r.Context(), checkpoint.Ref{ThreadID: sp.tid, ID: cp})
		switch {
		case errors.Is(err, checkpoint.ErrNotFound):
			return nil, errorf(http.StatusNotFound, "thread %s has no checkpoint %q", sp.tid, cp)
		case err != nil:
			return nil, errorf(http.StatusInternalServerError, "reading checkpoint %q of thread %s: %v", cp, sp.tid, err)
		}
	}
	// Reading an assistant may read the Backend: not under s.mu.
	if sp.assistant, err = s.runAssistant(r.Context(), body.AssistantID); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errorf(http.StatusServiceUnavailable, "the server is shutting down")
	}
	g := s.cfg.graphs[sp.assistant.GraphID]
	if err := g.validate(body.Input, body.Command); err != nil {
		return nil, err
	}
	if err := checkNodes(g, "interrupt_before", sp.before); err != nil {
		return nil, err
	}
	if err := checkNodes(g, "interrupt_after", sp.after); err != nil {
		return nil, err
	}
	return sp, nil
}

// checkpointMetadata is the metadata the run's checkpoints carry: the
// graph, assistant and thread, and the run's scalar metadata.
func checkpointMetadata(graphID, assistantID, tid string, runMD map[string]any) map[string]any {
	md := map[string]any{"graph_id": graphID, "assistant_id": assistantID, "thread_id": tid}
	for k, v := range runMD { // checkpoints keep scalar metadata
		switch v.(type) {
		case string, float64, bool:
			md[k] = v
		}
	}
	return md
}

// runOutcome says how a run ended: interrupted when it was cancelled,
// error (with the error's data, a ValidationError for an *apiError of a
// 4xx or when invalid is set) when it failed other than by pausing, else
// success.
func runOutcome(cancelled bool, err error, invalid bool) (string, *runErrorData) {
	switch {
	case cancelled:
		return runInterrupted, nil
	case err != nil && !isPause(err):
		name := "Error"
		if ae, ok := errors.AsType[*apiError](err); ok && ae.status < 500 || invalid {
			name = "ValidationError"
		}
		return runError, &runErrorData{Error: name, Message: err.Error()}
	default:
		return runSuccess, nil
	}
}

// startPoint readies the thread tid for run runID, which starts (not
// resumes) from *checkpointID ("" for the latest): after a rollback
// (reset not nil) with no checkpoint asked for, it starts from the
// checkpoint the rolled-back run started from, *reset — or, on a thread
// that had none, the thread's checkpoints are deleted. It returns the
// checkpoint the run starts from ("" for none).
func (s *Server) startPoint(ctx context.Context, g graphAdapter, tid, runID string, reset, checkpointID *string) (string, error) {
	if reset != nil && *checkpointID == "" {
		if *reset != "" {
			*checkpointID = *reset
		} else {
			del, ok := s.cfg.saver.(checkpoint.ThreadDeleter)
			if !ok {
				return "", errors.New("server: rolling back the first run of a thread needs WithCheckpointer with a saver that deletes threads")
			}
			if err := del.DeleteThread(ctx, tid); err != nil {
				return "", fmt.Errorf("server: rolling back thread %s: %w", tid, err)
			}
		}
	}
	st, err := g.state(ctx, tid, *checkpointID)
	if err != nil {
		return "", fmt.Errorf("server: reading the state run %s starts from: %w", runID, err)
	}
	if st.Checkpoint == nil {
		return "", nil
	}
	return st.Checkpoint.CheckpointID, nil
}

func truthy(v string) bool { return v == "1" || v == "true" || v == "yes" }

// isPause reports whether err is the pause of a run at an interrupt.
func isPause(err error) bool {
	var in *graph.Interrupted
	return errors.As(err, &in)
}

// checkNodes refuses breakpoints on nodes the graph does not have.
func checkNodes(g graphAdapter, field string, nodes []string) error {
	d := g.drawing()
	for _, n := range nodes {
		if n == "*" {
			continue
		}
		if !slices.ContainsFunc(d.Nodes, func(x drawNode) bool { return x.ID == n && x.Type == "runnable" }) {
			return errorf(http.StatusUnprocessableEntity, "%s: the graph has no node %q", field, n)
		}
	}
	return nil
}

// Shutdown makes the server refuse new runs (503) and stop executing
// runs, and waits until the runs it executes returned or ctx is done. Call
// it after [http.Server.Shutdown] stopped taking requests, or before, to
// end the streams and waits it is still serving. A server without
// [WithBackend] cancels every pending and running run: they end
// "interrupted". With a [Backend] it instead stops claiming runs and
// gives the runs it executes back to the backend, unfinished, for another
// process to resume; pending runs stay queued.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return s.shutdownShared(ctx)
}
