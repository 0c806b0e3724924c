package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// CronBackend is the optional capability of a [Backend] that keeps
// crons (LangGraph's /runs/crons): runs created on a schedule. A Server
// whose Backend implements it serves the cron routes, and every one of
// its processes fires the crons that are due, of the graphs it serves;
// [CronBackend.FireCron] makes each tick fire once across them all. A
// cron's next due time is stored, so a tick due while no process ran is
// fired when one starts (once, however many were missed).
//
// The methods that read or change one cron fail with an error wrapping
// [ErrNotFound] when there is no cron with the id.
type CronBackend interface {
	// CreateCron stores a new cron.
	CreateCron(ctx context.Context, c CronRecord) (CronRecord, error)
	// Cron returns the cron with the given id.
	Cron(ctx context.Context, id string) (CronRecord, error)
	// SearchCrons returns the crons q selects, sorted and paged as q says,
	// and how many it selects in all.
	SearchCrons(ctx context.Context, q CronQuery) ([]CronRecord, int, error)
	// UpdateCron changes the stored cron with apply, atomically, and
	// stores every field but its ID and CreatedAt as apply left them. An
	// error of apply is returned and nothing is changed. apply may be
	// called more than once (a transaction tried again) and must not call
	// the Backend.
	UpdateCron(ctx context.Context, id string, apply func(*CronRecord) error) (CronRecord, error)
	// DeleteCron deletes the cron; its runs are left as they are.
	DeleteCron(ctx context.Context, id string) error
	// DueCrons returns the enabled crons due at now (NextRunAt not zero
	// and not after now), of the graphs given (nil: of any graph), the
	// earliest due first, at most limit.
	DueCrons(ctx context.Context, now time.Time, graphs []string, limit int) ([]CronRecord, error)
	// FireCron fires the cron's tick due, atomically: only while the
	// cron's NextRunAt is still due, it sets NextRunAt to next (zero: the
	// cron fires no more) and creates run, as [Backend.CreateRun] does
	// with create, in one transaction. When NextRunAt is no longer due —
	// another process fired the tick, or the cron was changed — it fails
	// with an error wrapping [ErrTickTaken] and changes nothing. A nil run
	// only moves NextRunAt. When the run cannot be made for a reason
	// CreateRun names ([ErrThreadBusy], [ErrNotFound] for its thread,
	// [ErrGraphMismatch]), the tick is taken all the same and that error
	// returned: a tick fires at most once, and makes its run whenever the
	// run can be made.
	FireCron(ctx context.Context, id string, due, next time.Time, run *RunRecord, create *ThreadRecord) (RunRecord, error)
}

// WithClock sets the server's clock (default time.Now): the times it
// records, and the time crons are due by. A test moves it to fire crons
// without waiting for their schedule.
func WithClock(now func() time.Time) Option {
	return optionFunc(func(c *config) error {
		if now == nil {
			return errors.New("server: WithClock: nil clock")
		}
		c.now = now
		return nil
	})
}

// ErrTickTaken is returned, wrapped, by [CronBackend.FireCron] for a
// tick that is no longer due: fired by another process, or the cron
// changed meanwhile.
var ErrTickTaken = errors.New("server: cron tick already taken")

// CronRecord is a cron as a [CronBackend] stores it.
type CronRecord struct {
	ID          string
	AssistantID string
	// GraphID is the graph of the assistant: only a process serving it
	// fires the cron.
	GraphID string
	// ThreadID is the thread every run of the cron runs on; "" for a
	// cron each of whose runs has a new thread of its own.
	ThreadID string
	// Schedule is a cron expression: five fields (minute, hour, day of
	// month, month, day of week) or a descriptor such as @hourly.
	Schedule string
	// Timezone is the IANA name of the zone the schedule is read in; ""
	// for UTC.
	Timezone string
	// EndTime is when the cron stops firing; zero for never.
	EndTime time.Time
	// NextRunAt is when the cron fires next; zero once it fires no more.
	NextRunAt time.Time
	// Enabled is false for a cron that is kept but does not fire.
	Enabled bool
	// OnRunCompleted says what becomes of the thread of a run of a cron
	// without ThreadID once the run ended: "delete" or "keep".
	OnRunCompleted string
	// Payload is the run each tick creates: a JSON object of the fields
	// of a run's creation (input, config, metadata, stream_mode, …), but
	// assistant_id.
	Payload   json.RawMessage
	Metadata  map[string]any
	UserID    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CronQuery selects crons for [CronBackend.SearchCrons].
type CronQuery struct {
	AssistantID string         // "" for any
	ThreadID    string         // "" for any
	Enabled     *bool          // nil for any
	Metadata    map[string]any // JSON containment, like PostgreSQL's @>
	// SortBy is cron_id, assistant_id, thread_id, created_at, updated_at
	// or next_run_date; ties are broken by cron_id.
	SortBy string
	Desc   bool
	Limit  int // 0 counts only
	Offset int
}

// cronParser reads the schedules LangGraph accepts: five fields, or a
// descriptor (@yearly, @annually, @monthly, @weekly, @daily, @midnight,
// @hourly); next refuses the parser's @every, which LangGraph has not.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// next returns when c fires first after t: zero when that is past its
// EndTime.
func (c *CronRecord) next(t time.Time) (time.Time, error) {
	loc := time.UTC
	if c.Timezone != "" {
		var err error
		if loc, err = time.LoadLocation(c.Timezone); err != nil {
			return time.Time{}, fmt.Errorf("timezone %q: %w", c.Timezone, err)
		}
	}
	if strings.HasPrefix(c.Schedule, "@every") {
		return time.Time{}, fmt.Errorf("schedule %q: @every is not a cron schedule (give five fields, or @hourly, @daily, …)", c.Schedule)
	}
	sched, err := cronParser.Parse(c.Schedule)
	if err != nil {
		return time.Time{}, fmt.Errorf("schedule %q: %w", c.Schedule, err)
	}
	n := sched.Next(t.In(loc))
	if n.IsZero() {
		return time.Time{}, fmt.Errorf("schedule %q has no time in the next five years", c.Schedule)
	}
	if !c.EndTime.IsZero() && n.After(c.EndTime) {
		return time.Time{}, nil
	}
	return n.UTC(), nil
}

// cronFields are the fields of a cron's creation or patch that are the
// cron's own; the others make its runs' payload.
var cronFields = []string{"schedule", "timezone", "end_time", "enabled", "on_run_completed", "assistant_id", "thread_id"}

// cronSelectFields are the fields a cron search may select.
var cronSelectFields = []string{"cron_id", "assistant_id", "thread_id", "end_time", "schedule", "created_at", "updated_at",
	"user_id", "payload", "next_run_date", "metadata", "now", "timezone", "enabled", "on_run_completed"}

// cronJSON is a cron as the API shows it.
func (c *CronRecord) json(now time.Time) map[string]any {
	opt := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	optTime := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t.UTC()
	}
	payload := c.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("{}")
	}
	return map[string]any{
		"cron_id": c.ID, "assistant_id": c.AssistantID, "thread_id": opt(c.ThreadID),
		"on_run_completed": opt(c.OnRunCompleted), "end_time": optTime(c.EndTime), "schedule": c.Schedule,
		"timezone": opt(c.Timezone), "created_at": c.CreatedAt.UTC(), "updated_at": c.UpdatedAt.UTC(),
		"payload": payload, "user_id": opt(c.UserID), "next_run_date": optTime(c.NextRunAt),
		"metadata": orEmptyMap(c.Metadata), "enabled": c.Enabled, "now": now.UTC(),
	}
}

func orEmptyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// crons returns the Backend's crons, nil when it keeps none.
func (s *Server) crons() CronBackend {
	cb, _ := s.cfg.backend.(CronBackend)
	return cb
}

// errNoCrons answers the cron routes of a server whose Backend keeps no
// crons.
func errNoCrons() error {
	return errorf(http.StatusNotFound, "crons are not served: the server's Backend keeps no crons (see server.CronBackend)")
}

// cronBody is what a cron's creation or patch says of the cron itself.
type cronBody struct {
	Schedule       *string         `json:"schedule"`
	Timezone       *string         `json:"timezone"`
	EndTime        json.RawMessage `json:"end_time"` // an RFC 3339 time, or null for none
	Enabled        *bool           `json:"enabled"`
	OnRunCompleted *string         `json:"on_run_completed"`
	AssistantID    string          `json:"assistant_id"`
	Metadata       map[string]any  `json:"metadata"`
}

// parseCronBody reads a cron's creation or patch: the cron's own fields,
// and the others, which make its runs' payload (a null field is left
// out).
func parseCronBody(r *http.Request) (cronBody, map[string]json.RawMessage, error) {
	var raw map[string]json.RawMessage
	if err := decodeBody(r, &raw); err != nil {
		return cronBody{}, nil, err
	}
	var body cronBody
	own := map[string]json.RawMessage{}
	payload := map[string]json.RawMessage{}
	for k, v := range raw {
		switch {
		case slices.Contains(cronFields, k):
			own[k] = v
		case string(bytes.TrimSpace(v)) != "null":
			payload[k] = v
			if k == "metadata" { // the cron's, and its runs'
				own[k] = v
			}
		}
	}
	b, _ := json.Marshal(own)
	if err := json.Unmarshal(b, &body); err != nil {
		return cronBody{}, nil, errorf(http.StatusUnprocessableEntity, "malformed cron: %v", err)
	}
	return body, payload, nil
}

// apply sets the cron's own fields the body gives on c.
func (b *cronBody) apply(c *CronRecord) error {
	if b.Schedule != nil {
		c.Schedule = strings.TrimSpace(*b.Schedule)
	}
	if b.Timezone != nil {
		c.Timezone = *b.Timezone
	}
	if len(b.EndTime) > 0 {
		c.EndTime = time.Time{}
		if string(bytes.TrimSpace(b.EndTime)) != "null" {
			var s string
			if err := json.Unmarshal(b.EndTime, &s); err != nil {
				return errorf(http.StatusUnprocessableEntity, "end_time must be an RFC 3339 time or null")
			}
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return errorf(http.StatusUnprocessableEntity, "end_time must be an RFC 3339 time: %v", err)
			}
			c.EndTime = t.UTC().Truncate(time.Microsecond)
		}
	}
	if b.Enabled != nil {
		c.Enabled = *b.Enabled
	}
	if b.OnRunCompleted != nil {
		if c.ThreadID != "" {
			return errorf(http.StatusUnprocessableEntity, "on_run_completed applies to crons without a thread only")
		}
		if v := *b.OnRunCompleted; v != "delete" && v != "keep" {
			return errorf(http.StatusUnprocessableEntity, "on_run_completed must be delete or keep")
		}
		c.OnRunCompleted = *b.OnRunCompleted
	}
	if b.Metadata != nil {
		c.Metadata = normalizeMap(b.Metadata)
	}
	return nil
}

// mergePayload returns the cron's payload with the fields of patch set.
func mergePayload(payload json.RawMessage, patch map[string]json.RawMessage) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(payload) > 0 {
		if err := json.Unmarshal(payload, &m); err != nil {
			return nil, fmt.Errorf("server: a cron's payload is not a JSON object: %w", err)
		}
	}
	maps.Copy(m, patch)
	return json.Marshal(m)
}

// cronRunSpec reads and checks the run a tick of c creates, as the run
// routes read a run's creation: on c's thread, or a new one.
func (s *Server) cronRunSpec(ctx context.Context, c *CronRecord) (*runSpec, error) {
	body := map[string]json.RawMessage{}
	if len(c.Payload) > 0 {
		if err := json.Unmarshal(c.Payload, &body); err != nil {
			return nil, fmt.Errorf("server: cron %s: payload is not a JSON object: %w", c.ID, err)
		}
	}
	body["assistant_id"], _ = json.Marshal(c.AssistantID)
	if c.ThreadID == "" {
		body["on_completion"], _ = json.Marshal(cmp.Or(c.OnRunCompleted, "delete"))
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("server: cron %s: %w", c.ID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/runs", bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("server: cron %s: %w", c.ID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.ThreadID != "" {
		req.SetPathValue("tid", c.ThreadID)
	}
	return s.parseRun(req)
}

// checkCron checks the cron's schedule, timezone and run, and sets its
// next due time from now (when it is to fire) and its assistant and graph.
func (s *Server) checkCron(ctx context.Context, c *CronRecord, now time.Time) (*runSpec, error) {
	if c.Schedule == "" {
		return nil, errorf(http.StatusUnprocessableEntity, "schedule is required")
	}
	next, err := c.next(now)
	if err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "%v", err)
	}
	c.NextRunAt = next
	sp, err := s.cronRunSpec(ctx, c)
	if err != nil {
		return nil, err
	}
	c.AssistantID, c.GraphID = sp.assistant.ID, sp.assistant.GraphID
	return sp, nil
}

// ---- routes ----

func (s *Server) createCron(w http.ResponseWriter, r *http.Request) {
	cb := s.crons()
	if cb == nil {
		fail(w, errNoCrons())
		return
	}
	var tid string
	if r.PathValue("tid") != "" {
		var err error
		if tid, err = threadID(r); err != nil {
			fail(w, err)
			return
		}
	}
	body, payload, err := parseCronBody(r)
	if err != nil {
		fail(w, err)
		return
	}
	if body.AssistantID == "" {
		fail(w, errorf(http.StatusUnprocessableEntity, "assistant_id is required"))
		return
	}
	now := s.cfg.now()
	c := CronRecord{ID: newUUID(), AssistantID: body.AssistantID, ThreadID: tid, Enabled: true, Metadata: map[string]any{},
		CreatedAt: now, UpdatedAt: now}
	if tid == "" {
		c.OnRunCompleted = "delete"
	}
	if err := body.apply(&c); err != nil {
		fail(w, err)
		return
	}
	if c.Payload, err = mergePayload(nil, payload); err != nil {
		fail(w, err)
		return
	}
	sp, err := s.checkCron(r.Context(), &c, now)
	if err != nil {
		fail(w, err)
		return
	}
	if tid != "" && sp.body.IfNotExists != "create" && s.cfg.authz == nil { // with one, authorizeNewCron checks
		if _, err := s.cfg.backend.Thread(r.Context(), tid); err != nil {
			fail(w, backendError(err))
			return
		}
	}
	c.UserID = identity(r.Context()).ID
	if err := s.authorizeNewCron(r.Context(), &c, sp); err != nil {
		fail(w, err)
		return
	}
	if c, err = cb.CreateCron(r.Context(), c); err != nil {
		fail(w, backendError(err))
		return
	}
	writeJSON(w, http.StatusOK, c.json(now))
}

// cronID returns the cron id of the request's path, lower-cased.
func cronID(r *http.Request) (string, error) {
	id := strings.ToLower(r.PathValue("cid"))
	if !validUUID(id) {
		return "", errorf(http.StatusUnprocessableEntity, "cron_id %q is not a UUID", id)
	}
	return id, nil
}

func (s *Server) patchCron(w http.ResponseWriter, r *http.Request) {
	cb := s.crons()
	if cb == nil {
		fail(w, errNoCrons())
		return
	}
	id, err := cronID(r)
	if err != nil {
		fail(w, err)
		return
	}
	body, payload, err := parseCronBody(r)
	if err != nil {
		fail(w, err)
		return
	}
	if body.AssistantID != "" {
		fail(w, errorf(http.StatusUnprocessableEntity, "a cron's assistant_id cannot change"))
		return
	}
	// When the schedule, its zone, its end or the cron's enabling change,
	// the next due time is computed again from now; otherwise it is left
	// as the Backend has it (a tick fired meanwhile moved it).
	reschedule := body.Schedule != nil || body.Timezone != nil || len(body.EndTime) > 0 || body.Enabled != nil
	now := s.cfg.now()
	patch := func(c *CronRecord) error {
		if err := body.apply(c); err != nil {
			return err
		}
		var err error
		if c.Payload, err = mergePayload(c.Payload, payload); err != nil {
			return err
		}
		if reschedule {
			if c.NextRunAt, err = c.next(now); err != nil {
				return errorf(http.StatusUnprocessableEntity, "%v", err)
			}
		}
		c.UpdatedAt = now
		return nil
	}
	// Checked on the cron as it is now, outside the Backend's
	// transaction (checking reads the Backend and the saver).
	cur, err := s.authorizedCron(r.Context(), cb, id, ActionUpdate)
	if err != nil {
		fail(w, err)
		return
	}
	if err := patch(&cur); err != nil {
		fail(w, err)
		return
	}
	if _, err := s.checkCron(r.Context(), &cur, now); err != nil {
		fail(w, err)
		return
	}
	c, err := cb.UpdateCron(r.Context(), id, patch)
	if err != nil {
		fail(w, backendError(err))
		return
	}
	writeJSON(w, http.StatusOK, c.json(now))
}

func (s *Server) deleteCron(w http.ResponseWriter, r *http.Request) {
	cb := s.crons()
	if cb == nil {
		fail(w, errNoCrons())
		return
	}
	id, err := cronID(r)
	if err != nil {
		fail(w, err)
		return
	}
	if s.cfg.authz != nil {
		if _, err := s.authorizedCron(r.Context(), cb, id, ActionDelete); err != nil {
			fail(w, err)
			return
		}
	}
	if err := cb.DeleteCron(r.Context(), id); err != nil {
		fail(w, backendError(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// cronQuery reads the filters of a cron search or count.
type cronFilter struct {
	AssistantID string         `json:"assistant_id"`
	ThreadID    string         `json:"thread_id"`
	Metadata    map[string]any `json:"metadata"`
}

// query returns the filters as a CronQuery: an assistant named by its
// graph is the graph's own.
func (f cronFilter) query(s *Server) (CronQuery, error) {
	q := CronQuery{AssistantID: assistantKey(f.AssistantID), Metadata: normalizeMap(f.Metadata)}
	if _, ok := s.cfg.graphs[q.AssistantID]; ok {
		q.AssistantID = graphAssistantID(q.AssistantID)
	}
	if f.ThreadID != "" {
		q.ThreadID = strings.ToLower(f.ThreadID)
		if !validUUID(q.ThreadID) {
			return q, errorf(http.StatusUnprocessableEntity, "thread_id %q is not a UUID", f.ThreadID)
		}
	}
	return q, nil
}

func (s *Server) searchCrons(w http.ResponseWriter, r *http.Request) {
	cb := s.crons()
	if cb == nil {
		fail(w, errNoCrons())
		return
	}
	var body struct {
		page
		cronFilter
		Enabled   *bool    `json:"enabled"`
		SortBy    string   `json:"sort_by"`
		SortOrder string   `json:"sort_order"`
		Select    []string `json:"select"`
	}
	limit, offset, err := decodePaged(r, &body, 10)
	if err != nil {
		fail(w, err)
		return
	}
	q, err := body.query(s)
	if err != nil {
		fail(w, err)
		return
	}
	var ok bool
	if q.Metadata, ok, err = s.authorizeSearch(r.Context(), ResourceCrons, q.Metadata); err != nil || !ok {
		answerNone(w, err, limit, offset)
		return
	}
	switch body.SortBy {
	case "", "cron_id", "assistant_id", "thread_id", "created_at", "updated_at", "next_run_date":
	default:
		fail(w, errorf(http.StatusUnprocessableEntity, "sort_by must be cron_id, assistant_id, thread_id, created_at, updated_at or next_run_date"))
		return
	}
	for _, f := range body.Select {
		if !slices.Contains(cronSelectFields, f) {
			fail(w, errorf(http.StatusUnprocessableEntity, "select: unknown field %q (known: %s)", f, strings.Join(cronSelectFields, ", ")))
			return
		}
	}
	q.Enabled, q.SortBy, q.Desc = body.Enabled, cmp.Or(body.SortBy, "created_at"), body.SortOrder != "asc"
	q.Limit, q.Offset = limit, offset
	out, total, err := cb.SearchCrons(r.Context(), q)
	if err != nil {
		fail(w, backendError(err))
		return
	}
	setPages(w, total, limit, offset)
	now := s.cfg.now()
	list := make([]map[string]any, 0, len(out))
	for _, c := range out {
		m := c.json(now)
		if len(body.Select) > 0 {
			maps.DeleteFunc(m, func(k string, _ any) bool { return !slices.Contains(body.Select, k) })
		} else {
			delete(m, "now")
		}
		list = append(list, m)
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) countCrons(w http.ResponseWriter, r *http.Request) {
	cb := s.crons()
	if cb == nil {
		fail(w, errNoCrons())
		return
	}
	var body cronFilter
	if err := decodeBody(r, &body); err != nil {
		fail(w, err)
		return
	}
	q, err := body.query(s)
	if err != nil {
		fail(w, err)
		return
	}
	var ok bool
	if q.Metadata, ok, err = s.authorizeSearch(r.Context(), ResourceCrons, q.Metadata); err != nil || !ok {
		answerNone(w, err, -1, 0)
		return
	}
	_, total, err := cb.SearchCrons(r.Context(), q)
	if err != nil {
		fail(w, backendError(err))
		return
	}
	writeJSON(w, http.StatusOK, total)
}

// ---- firing ----

// dueCronsBatch bounds the crons one look fires.
const dueCronsBatch = 100

// cronCheck is how often a server looks for crons due: ten poll
// intervals, at most a second.
func (c *config) cronCheck() time.Duration { return min(10*c.poll, time.Second) }

// startCrons fires the Backend's crons that are due, until the server
// shuts down, when the Backend keeps crons.
func (s *Server) startCrons() {
	cb := s.crons()
	if cb == nil {
		return
	}
	sh := s.shared
	served := slices.Sorted(maps.Keys(s.cfg.graphs))
	sh.wg.Go(func() {
		every := s.cfg.cronCheck()
		var warned time.Time
		for {
			if err := s.fireDueCrons(sh.ctx, cb, served); err != nil && sh.ctx.Err() == nil && time.Since(warned) > 10*time.Second {
				warned = time.Now()
				slog.Warn("server: firing crons", "holder", s.cfg.holder, "err", err)
			}
			select {
			case <-sh.ctx.Done():
				return
			case <-time.After(every):
			}
		}
	})
}

// fireDueCrons fires the crons due now of the graphs served.
func (s *Server) fireDueCrons(ctx context.Context, cb CronBackend, served []string) error {
	now := s.cfg.now()
	due, err := cb.DueCrons(ctx, now, served, dueCronsBatch)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range due {
		errs = append(errs, s.fireCron(ctx, cb, &c, now))
	}
	return errors.Join(errs...)
}

// fireCron fires c's tick due at c.NextRunAt: its run is created, unless
// another process fired the tick first, and its next tick is set, after
// now (ticks missed meanwhile are not fired one by one). A tick whose run
// can no longer be made (its assistant deleted, its thread busy under the
// reject strategy, its payload no longer valid for the graph) is passed
// over; one met by a fault of the Backend is fired at the next look.
func (s *Server) fireCron(ctx context.Context, cb CronBackend, c *CronRecord, now time.Time) error {
	next, err := c.next(now)
	if err != nil {
		// Stored unreadable: the cron fires no more.
		slog.Warn("server: a cron fires no more", "cron_id", c.ID, "err", err)
		next = time.Time{}
	}
	var run *RunRecord
	var create *ThreadRecord
	if c.EndTime.IsZero() || !c.NextRunAt.After(c.EndTime) {
		var rec RunRecord
		sp, err := s.cronRunSpec(ctx, c)
		if err == nil {
			rec, create, err = s.runRecord(sp)
		}
		if err == nil && s.cfg.authz != nil {
			// The run is the cron's user's, as if they had asked for it.
			create, err = s.authorizeNewRun(asUser(ctx, c.UserID), sp.assistant, &rec, create, sp.stateless)
		}
		ae, _ := errors.AsType[*apiError](err)
		switch {
		case err == nil:
			run = &rec
		case ae != nil && ae.status < 500:
			slog.Warn("server: a cron's tick is passed over: its run cannot be made", "cron_id", c.ID, "due", c.NextRunAt, "err", err)
			create = nil
		default:
			return fmt.Errorf("server: cron %s: %w", c.ID, err) // tried again at the next look
		}
	}
	rec, err := cb.FireCron(ctx, c.ID, c.NextRunAt, next, run, create)
	switch {
	case errors.Is(err, ErrTickTaken):
		return nil
	case errors.Is(err, ErrThreadBusy), errors.Is(err, ErrNotFound), errors.Is(err, ErrGraphMismatch):
		slog.Info("server: a cron's tick is passed over", "cron_id", c.ID, "due", c.NextRunAt, "err", err)
		return nil
	case err != nil:
		return fmt.Errorf("server: firing cron %s: %w", c.ID, err)
	}
	if run != nil {
		s.shared.wake()
		slog.Debug("server: cron fired", "cron_id", c.ID, "run_id", rec.ID, "thread_id", rec.ThreadID)
	}
	return nil
}
