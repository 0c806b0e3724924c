package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Runs is the runs group of a [Client]. A threadID of "" makes a
// stateless run (on a thread of its own, which the server deletes after
// it unless [RunRequest.OnCompletion] is "keep").
type Runs struct{ c *Client }

// runPath is the path of the runs of threadID (of stateless runs when
// it is "").
func runPath(threadID string) string {
	if threadID == "" {
		return "/runs"
	}
	return "/threads/" + seg(threadID) + "/runs"
}

// runBody is a RunRequest with its assistant.
type runBody struct {
	AssistantID string `json:"assistant_id"`
	RunRequest
}

// Create starts a run in the background and returns it (pending).
func (r *Runs) Create(ctx context.Context, threadID, assistantID string, req RunRequest) (*Run, error) {
	var out Run
	if err := r.c.do(ctx, "POST", runPath(threadID), nil, runBody{assistantID, req}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Wait runs the assistant and returns the run's last values once it ended:
// the final state, or {"__interrupt__": […]} when it paused (see
// [Interrupts]). A run that failed is a [*RunError].
func (r *Runs) Wait(ctx context.Context, threadID, assistantID string, req RunRequest) (json.RawMessage, error) {
	var out json.RawMessage
	if err := r.c.do(ctx, "POST", runPath(threadID)+"/wait", nil, runBody{assistantID, req}, &out); err != nil {
		return nil, err
	}
	return out, runFailure(out)
}

// Join waits for run runID to end and returns its last values, as
// [Runs.Wait] does.
func (r *Runs) Join(ctx context.Context, threadID, runID string) (json.RawMessage, error) {
	var out json.RawMessage
	if err := r.c.do(ctx, "GET", runPath(threadID)+"/"+seg(runID)+"/join", nil, nil, &out); err != nil {
		return nil, err
	}
	return out, runFailure(out)
}

// runFailure is the *RunError a wait's values carry as "__error__".
func runFailure(values json.RawMessage) error {
	if !bytes.Contains(values, []byte(`"__error__"`)) {
		return nil
	}
	var v struct {
		Error json.RawMessage `json:"__error__"`
	}
	if json.Unmarshal(values, &v) != nil || len(v.Error) == 0 || string(v.Error) == "null" {
		return nil
	}
	var re RunError
	if json.Unmarshal(v.Error, &re) != nil {
		return &RunError{Name: "Error", Message: string(v.Error)}
	}
	return &re
}

// Interrupts returns the interrupts a run's values carry under
// "__interrupt__" (what [Runs.Wait] returns when the run paused), or nil.
func Interrupts(values json.RawMessage) []Interrupt {
	if !bytes.Contains(values, []byte(`"__interrupt__"`)) {
		return nil
	}
	var v struct {
		Interrupts []Interrupt `json:"__interrupt__"`
	}
	if json.Unmarshal(values, &v) != nil {
		return nil
	}
	return v.Interrupts
}

// Get returns run runID.
func (r *Runs) Get(ctx context.Context, threadID, runID string) (*Run, error) {
	var out Run
	if err := r.c.do(ctx, "GET", runPath(threadID)+"/"+seg(runID), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RunList filters [Runs.List].
type RunList struct {
	Limit  int
	Offset int
	// Status is a run status (RunStatusPending, RunStatusSuccess, …).
	Status string
}

// List returns the runs of thread threadID.
func (r *Runs) List(ctx context.Context, threadID string, q RunList) ([]Run, error) {
	v := url.Values{}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	if q.Status != "" {
		v.Set("status", q.Status)
	}
	var out []Run
	err := r.c.do(ctx, "GET", runPath(threadID), v, nil, &out)
	return out, err
}

// Delete deletes run runID.
func (r *Runs) Delete(ctx context.Context, threadID, runID string) error {
	err := r.c.do(ctx, "DELETE", runPath(threadID)+"/"+seg(runID), nil, nil, nil)
	return err
}

// CancelOptions say how [Runs.Cancel] cancels.
type CancelOptions struct {
	// Wait returns only once the run ended.
	Wait bool
	// Action is "interrupt" (the default: the run's progress stays) or
	// "rollback".
	Action string
}

// Cancel cancels run runID.
func (r *Runs) Cancel(ctx context.Context, threadID, runID string, o CancelOptions) error {
	q := url.Values{"wait": {"0"}}
	if o.Wait {
		q.Set("wait", "1")
	}
	if o.Action != "" {
		q.Set("action", o.Action)
	}
	err := r.c.do(ctx, "POST", runPath(threadID)+"/"+seg(runID)+"/cancel", q, nil, nil)
	return err
}

// maxBackoff bounds the wait between two reconnection attempts.
const maxBackoff = 30 * time.Second

// Part is one event of a run's stream.
type Part struct {
	// Event is the event's name as sent: "metadata", a stream mode
	// ("values", "updates", "custom", "messages/partial", …), and for a
	// subgraph's event its namespace after "|" ("updates|inner:…").
	Event string
	// Mode is Event without the namespace.
	Mode string
	// Namespace is the subgraph the event comes from, outermost first;
	// nil for the graph's own events.
	Namespace []string
	// Data is the event's payload.
	Data json.RawMessage
	// ID is the event's id ("" when the server sends none); a join with
	// it as Last-Event-ID resumes after this event.
	ID string
}

// Stream creates a run and streams its events in the modes
// req.StreamMode asks. The "metadata" event comes first; an "error" event
// ends the iteration with a [*RunError]; the "end" event some servers
// send closes it and is not yielded. When the connection drops in a
// resumable run's stream (req.StreamResumable), the client reconnects
// with Last-Event-ID and goes on from the event after the last it
// yielded. Breaking out of the loop, or ctx ending, closes the
// connection (and, with req.OnDisconnect "cancel", cancels the run).
func (r *Runs) Stream(ctx context.Context, threadID, assistantID string, req RunRequest) iter.Seq2[Part, error] {
	body := runBody{assistantID, req}
	return r.c.stream(ctx, "", func(ctx context.Context) (*http.Request, error) {
		return r.c.request(ctx, "POST", runPath(threadID)+"/stream", nil, body)
	})
}

// JoinOptions say how [Runs.JoinStream] joins.
type JoinOptions struct {
	// LastEventID resumes after this event id ("-1": from the start, for
	// a resumable run); "" streams what the server sends a new joiner.
	LastEventID string
	// CancelOnDisconnect cancels the run when the joiner goes away.
	CancelOnDisconnect bool
	// StreamMode narrows the modes joined (servers may ignore it).
	StreamMode []StreamMode
}

// JoinStream streams the events of run runID, as [Runs.Stream] does.
func (r *Runs) JoinStream(ctx context.Context, threadID, runID string, o JoinOptions) iter.Seq2[Part, error] {
	path := runPath(threadID) + "/" + seg(runID) + "/stream"
	q := url.Values{}
	if o.CancelOnDisconnect {
		q.Set("cancel_on_disconnect", "1")
	}
	for _, m := range o.StreamMode {
		q.Add("stream_mode", string(m))
	}
	return r.c.stream(ctx, o.LastEventID, func(ctx context.Context) (*http.Request, error) {
		req, err := r.c.request(ctx, "GET", path, q, nil)
		if err == nil && o.LastEventID != "" {
			req.Header.Set("Last-Event-ID", o.LastEventID)
		}
		return req, err
	})
}

// stream sends the request first makes and yields its events, reconnecting
// to the Location a resumable stream names when its connection drops
// (after event lastID when none came: the one a join started after).
func (c *Client) stream(ctx context.Context, lastID string, first func(context.Context) (*http.Request, error)) iter.Seq2[Part, error] {
	return func(yield func(Part, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel() // closes the connection however the loop ends
		req, err := first(ctx)
		if err != nil {
			yield(Part{}, err)
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		res, err := c.openStream(req)
		if err != nil {
			yield(Part{}, err)
			return
		}
		location := res.Header.Get("Location")
		failures := 0
		for {
			sr := newSSEReader(res.Body, c.maxEventBytes)
			before := lastID
			ended, err := c.yieldEvents(sr, &lastID, yield)
			if lastID != before {
				failures = 0 // this connection made progress
			}
			res.Body.Close()
			if ended {
				return
			}
			if err == nil { // the server closed the stream at an event's end
				return
			}
			if ctx.Err() != nil || location == "" || failures >= c.reconnects || errors.Is(err, ErrEventTooLarge) {
				if ctx.Err() != nil {
					err = context.Cause(ctx)
				}
				yield(Part{}, fmt.Errorf("client: stream: %w", err))
				return
			}
			// The connection dropped: reconnect where the server says,
			// after the last event seen.
			for {
				failures++
				wait := min(c.backoff<<min(failures-1, 16), maxBackoff)
				if sr.retry > 0 {
					wait = sr.retry
				}
				select {
				case <-ctx.Done():
					yield(Part{}, fmt.Errorf("client: stream: %w", context.Cause(ctx)))
					return
				case <-time.After(wait):
				}
				var rerr error
				res, rerr = c.reconnect(ctx, location, lastID)
				if rerr == nil {
					if l := res.Header.Get("Location"); l != "" {
						location = l
					}
					break
				}
				var ae *APIError
				if errors.As(rerr, &ae) || failures >= c.reconnects || ctx.Err() != nil {
					yield(Part{}, fmt.Errorf("client: stream: reconnecting after %v: %w", err, rerr))
					return
				}
			}
		}
	}
}

// yieldEvents yields sr's events; ended is true when the iteration must
// stop (the loop broke, the run failed or its "end" came).
func (c *Client) yieldEvents(sr *sseReader, lastID *string, yield func(Part, error) bool) (ended bool, err error) {
	for {
		ev, err := sr.next()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		*lastID = ev.id
		if ev.name == "end" {
			return true, nil
		}
		p := newPart(ev)
		if p.Mode == "error" {
			re := &RunError{}
			if json.Unmarshal(p.Data, re) != nil || re.Message == "" && re.Name == "" {
				re = &RunError{Name: "Error", Message: strings.Trim(string(p.Data), `"`)}
			}
			yield(p, re)
			return true, nil
		}
		if !yield(p, nil) {
			return true, nil
		}
	}
}

func newPart(ev sseEvent) Part {
	p := Part{Event: ev.name, Mode: ev.name, ID: ev.id}
	if mode, ns, ok := strings.Cut(ev.name, "|"); ok {
		p.Mode = mode
		p.Namespace = strings.Split(ns, "|")
	}
	if ev.data == "" {
		p.Data = json.RawMessage("null")
	} else {
		p.Data = json.RawMessage(ev.data)
	}
	return p
}

// openStream sends req and checks that the answer is an event stream.
func (c *Client) openStream(req *http.Request) (*http.Response, error) {
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", req.Method, req.URL.Path, err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		defer res.Body.Close()
		return nil, apiError(res)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		res.Body.Close()
		return nil, fmt.Errorf("client: %s %s: the answer is %q, not an event stream", req.Method, req.URL.Path, ct)
	}
	return res, nil
}

// reconnect joins the stream at location (a path on the server) after
// event lastID (from the start when none was seen).
func (c *Client) reconnect(ctx context.Context, location, lastID string) (*http.Response, error) {
	u, err := url.Parse(location)
	if err != nil {
		return nil, &APIError{Message: fmt.Sprintf("the stream's Location %q: %v", location, err)}
	}
	// Only the path is taken: the client never follows a server to
	// another host with its credentials. A path that already carries the
	// base URL's prefix loses it (request adds it back).
	path := u.Path
	if base := mustPath(c.base); base != "" && strings.HasPrefix(path, base+"/") {
		path = strings.TrimPrefix(path, base)
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	req, err := c.request(ctx, "GET", path, u.Query(), nil)
	if err != nil {
		return nil, err
	}
	if lastID == "" {
		lastID = "-1"
	}
	req.Header.Set("Last-Event-ID", lastID)
	req.Header.Set("Accept", "text/event-stream")
	return c.openStream(req)
}

// mustPath is the path of the base URL (valid since New).
func mustPath(base string) string {
	u, _ := url.Parse(base)
	return strings.TrimSuffix(u.Path, "/")
}
