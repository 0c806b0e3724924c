package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/internal/sqlitedb"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/internal/jsonb"
)

// Table names.
const (
	threadsTable = "agentgraph_server_threads"
	runsTable    = "agentgraph_server_runs"
	eventsTable  = "agentgraph_server_events"
)

// ---- decoding rows ----

// row decodes the columns of one row, scanned as driver values, keeping
// the first damaged column.
type row struct {
	table, key string
	err        error
}

func (r *row) fail(col string, err error) {
	if r.err == nil {
		r.err = &CorruptRowError{Table: r.table, Key: r.key, Column: col, Err: err}
	}
}

func (r *row) text(v any, col string) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	r.fail(col, fmt.Errorf("holds %T, not text", v))
	return ""
}

// optText returns nil for NULL.
func (r *row) optText(v any, col string) *string {
	if v == nil {
		return nil
	}
	s := r.text(v, col)
	return &s
}

func (r *row) int(v any, col string) int64 {
	if n, ok := v.(int64); ok {
		return n
	}
	r.fail(col, fmt.Errorf("holds %T, not an integer", v))
	return 0
}

func (r *row) time(v any, col string) time.Time {
	return time.Unix(0, r.int(v, col)).UTC()
}

func (r *row) json(v any, col string) json.RawMessage {
	s := r.text(v, col)
	if !json.Valid([]byte(s)) {
		r.fail(col, errors.New("not JSON"))
		return nil
	}
	return json.RawMessage(s)
}

// object decodes a JSON object; null is an empty one.
func (r *row) object(v any, col string) map[string]any {
	raw := r.json(v, col)
	if raw == nil {
		return map[string]any{}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		r.fail(col, fmt.Errorf("not a JSON object: %w", err))
	}
	if m == nil {
		m = map[string]any{}
	}
	return m
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanValues scans n columns as driver values.
func scanValues(s scanner, n int) ([]any, error) {
	vs := make([]any, n)
	ptrs := make([]any, n)
	for i := range vs {
		ptrs[i] = &vs[i]
	}
	return vs, s.Scan(ptrs...)
}

const threadCols = `thread_id, created_at, updated_at, metadata, status, config, vals, interrupts`

func scanThread(s scanner) (server.ThreadRecord, error) {
	vs, err := scanValues(s, 8)
	if err != nil {
		return server.ThreadRecord{}, err
	}
	r := &row{table: "threads"}
	t := server.ThreadRecord{ID: r.text(vs[0], "thread_id")}
	r.key = t.ID
	t.CreatedAt = r.time(vs[1], "created_at")
	t.UpdatedAt = r.time(vs[2], "updated_at")
	t.Metadata = r.object(vs[3], "metadata")
	t.Status = r.text(vs[4], "status")
	t.Config = r.object(vs[5], "config")
	t.Values = r.json(vs[6], "vals")
	t.Interrupts = r.json(vs[7], "interrupts")
	return t, r.err
}

const runCols = `run_id, thread_id, assistant_id, created_at, updated_at, status, metadata, multitask_strategy, kwargs, result, attempt`

// scanRun scans runCols and then extra columns, returned as driver values.
func scanRun(s scanner, extra int) (server.RunRecord, []any, error) {
	vs, err := scanValues(s, 11+extra)
	if err != nil {
		return server.RunRecord{}, nil, err
	}
	r := &row{table: "runs"}
	rec := server.RunRecord{ID: r.text(vs[0], "run_id")}
	r.key = rec.ID
	rec.ThreadID = r.text(vs[1], "thread_id")
	rec.AssistantID = r.text(vs[2], "assistant_id")
	rec.CreatedAt = r.time(vs[3], "created_at")
	rec.UpdatedAt = r.time(vs[4], "updated_at")
	rec.Status = r.text(vs[5], "status")
	rec.Metadata = r.object(vs[6], "metadata")
	rec.MultitaskStrategy = r.text(vs[7], "multitask_strategy")
	rec.Kwargs = r.json(vs[8], "kwargs")
	if vs[9] != nil {
		rec.Result = r.json(vs[9], "result")
	}
	rec.Attempt = int(r.int(vs[10], "attempt"))
	return rec, vs[11:], r.err
}

// ---- helpers ----

func encode(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("server/sqlite: encoding %T: %w", v, err)
	}
	return string(b), nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// rawOr returns b as text, or def when it is empty.
func rawOr(b json.RawMessage, def string) string {
	if len(b) == 0 {
		return def
	}
	return string(b)
}

// nullable returns b as text, or nil (NULL) when it is empty.
func nullable(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

func notFound(what, id string) error {
	return fmt.Errorf("%s %s: %w", what, id, server.ErrNotFound)
}

func nanos(t time.Time) int64 { return t.UnixNano() }

// wrap prefixes err with what failed, unless it is one of the errors the
// Backend contract names, which callers test with errors.Is.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	for _, e := range []error{server.ErrNotFound, server.ErrExists, server.ErrThreadBusy, server.ErrLeaseLost, server.ErrGraphMismatch} {
		if errors.Is(err, e) {
			return err
		}
	}
	if _, ok := errors.AsType[*CorruptRowError](err); ok {
		return err
	}
	return fmt.Errorf("server/sqlite: "+format+": %w", append(args, err)...)
}

// activeRuns is the SQL condition "the thread of the threads row has a
// pending or running run".
const activeRuns = `EXISTS (SELECT 1 FROM ` + runsTable + ` x WHERE x.thread_id = ` + threadsTable + `.thread_id AND x.status IN ('pending', 'running'))`

// setState sets a thread's state from ?2 (values), ?3 (interrupts), ?4
// (status), ?5 (now): NULL keeps values and interrupts, and a thread with
// pending or running runs stays busy.
const setState = `vals = COALESCE(?2, vals), interrupts = COALESCE(?3, interrupts), updated_at = ?5,
	status = CASE WHEN ` + activeRuns + ` THEN 'busy' ELSE ?4 END`

// ---- threads ----

// CreateThread implements [server.Backend].
func (b *Backend) CreateThread(ctx context.Context, t server.ThreadRecord, ifExists string) (server.ThreadRecord, error) {
	md, err := encode(orEmpty(t.Metadata))
	if err != nil {
		return t, err
	}
	cfg, err := encode(orEmpty(t.Config))
	if err != nil {
		return t, err
	}
	var out server.ThreadRecord
	err = b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		var err error
		out, err = scanThread(tx.QueryRow(`INSERT INTO `+threadsTable+` (`+threadCols+`)
			VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (thread_id) DO NOTHING RETURNING `+threadCols,
			t.ID, nanos(t.CreatedAt), md, t.Status, cfg, rawOr(t.Values, "null"), rawOr(t.Interrupts, "{}")))
		if errors.Is(err, sql.ErrNoRows) {
			if ifExists != "do_nothing" {
				return fmt.Errorf("thread %s: %w", t.ID, server.ErrExists)
			}
			out, err = scanThread(tx.QueryRow(`SELECT `+threadCols+` FROM `+threadsTable+` WHERE thread_id = ?1`, t.ID))
		}
		return err
	})
	return out, wrap(err, "creating thread %s", t.ID)
}

// Thread implements [server.Backend].
func (b *Backend) Thread(ctx context.Context, id string) (server.ThreadRecord, error) {
	var t server.ThreadRecord
	err := b.db.Read(ctx, func(tx sqlitedb.Tx) error {
		var err error
		t, err = scanThread(tx.QueryRow(`SELECT `+threadCols+` FROM `+threadsTable+` WHERE thread_id = ?1`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("thread", id)
		}
		return err
	})
	return t, wrap(err, "reading thread %s", id)
}

// SearchThreads implements [server.Backend]. SQLite has no JSON
// containment operator: the metadata and values filters are applied in
// the process, over the threads of the ids and status asked.
func (b *Backend) SearchThreads(ctx context.Context, q server.ThreadQuery) ([]server.ThreadRecord, int, error) {
	var less func(a, c server.ThreadRecord) int
	switch q.SortBy {
	case "thread_id":
		less = func(a, c server.ThreadRecord) int { return strings.Compare(a.ID, c.ID) }
	case "status":
		less = func(a, c server.ThreadRecord) int {
			return cmp.Or(strings.Compare(a.Status, c.Status), strings.Compare(a.ID, c.ID))
		}
	case "updated_at":
		less = func(a, c server.ThreadRecord) int {
			return cmp.Or(a.UpdatedAt.Compare(c.UpdatedAt), strings.Compare(a.ID, c.ID))
		}
	case "created_at", "":
		less = func(a, c server.ThreadRecord) int {
			return cmp.Or(a.CreatedAt.Compare(c.CreatedAt), strings.Compare(a.ID, c.ID))
		}
	default:
		return nil, 0, fmt.Errorf("server/sqlite: cannot sort threads by %q", q.SortBy)
	}
	// The filters as JSON would be stored, so that numbers compare as
	// the stored ones decode.
	md, err := roundTrip(q.Metadata)
	if err != nil {
		return nil, 0, err
	}
	vals, err := roundTrip(q.Values)
	if err != nil {
		return nil, 0, err
	}
	ids := map[string]bool{}
	for _, id := range q.IDs {
		ids[id] = true
	}
	var all []server.ThreadRecord
	err = b.db.Read(ctx, func(tx sqlitedb.Tx) error {
		all = all[:0]
		rows, err := tx.Query(`SELECT `+threadCols+` FROM `+threadsTable+` WHERE (?1 = '' OR status = ?1)`, q.Status)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			t, err := scanThread(rows)
			if err != nil {
				return err
			}
			if len(ids) > 0 && !ids[t.ID] {
				continue
			}
			if !jsonb.Contains(t.Metadata, md) {
				continue
			}
			if len(vals) > 0 {
				var v any
				if err := json.Unmarshal(t.Values, &v); err != nil || !jsonb.Contains(v, vals) {
					continue
				}
			}
			all = append(all, t)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, wrap(err, "searching threads")
	}
	total := len(all)
	if q.Limit == 0 {
		return nil, total, nil
	}
	slices.SortFunc(all, func(a, c server.ThreadRecord) int {
		if q.Desc {
			return less(c, a)
		}
		return less(a, c)
	})
	return page(all, q.Limit, q.Offset), total, nil
}

// roundTrip returns m as it decodes from its JSON (nil for empty).
func roundTrip(m map[string]any) (map[string]any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	s, err := encode(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal([]byte(s), &out)
}

// PatchThread implements [server.Backend].
func (b *Backend) PatchThread(ctx context.Context, id string, metadata map[string]any) (server.ThreadRecord, error) {
	var t server.ThreadRecord
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		var err error
		t, err = scanThread(tx.QueryRow(`SELECT `+threadCols+` FROM `+threadsTable+` WHERE thread_id = ?1`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("thread", id)
		}
		if err != nil {
			return err
		}
		if g, ok := metadata["graph_id"]; ok && g != nil {
			// Decided in the write transaction, so that a run another
			// process creates meanwhile (which labels the thread with its
			// graph) cannot be relabelled.
			if cur, ok := t.Metadata["graph_id"]; ok && cur != nil && cur != g {
				return fmt.Errorf("thread %s holds the state of graph %v; its graph_id cannot change: %w", id, cur, server.ErrGraphMismatch)
			}
		}
		maps.Copy(t.Metadata, metadata)
		md, err := encode(t.Metadata)
		if err != nil {
			return err
		}
		now := time.Now()
		if _, err := tx.Exec(`UPDATE `+threadsTable+` SET metadata = ?2, updated_at = ?3 WHERE thread_id = ?1`, id, md, nanos(now)); err != nil {
			return err
		}
		t.UpdatedAt = time.Unix(0, nanos(now)).UTC()
		return nil
	})
	return t, wrap(err, "patching thread %s", id)
}

// SetThreadState implements [server.Backend].
func (b *Backend) SetThreadState(ctx context.Context, id string, st server.ThreadState) error {
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		res, err := tx.Exec(`UPDATE `+threadsTable+` SET `+setState+` WHERE thread_id = ?1`,
			id, nullable(st.Values), nullable(st.Interrupts), st.Status, nanos(time.Now()))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmp.Or(err, notFound("thread", id))
		}
		return nil
	})
	return wrap(err, "updating thread %s", id)
}

// DeleteThread implements [server.Backend].
func (b *Backend) DeleteThread(ctx context.Context, id string) ([]string, error) {
	var running []string
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		running = nil
		res, err := tx.Exec(`DELETE FROM `+threadsTable+` WHERE thread_id = ?1`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmp.Or(err, notFound("thread", id))
		}
		if _, err := tx.Exec(`DELETE FROM `+cronsTable+` WHERE thread_id = ?1`, id); err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM `+eventsTable+` WHERE run_id IN
			(SELECT run_id FROM `+runsTable+` WHERE thread_id = ?1 AND status <> 'running')`, id); err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM `+runsTable+` WHERE thread_id = ?1 AND status <> 'running'`, id); err != nil {
			return err
		}
		rows, err := tx.Query(`UPDATE `+runsTable+` SET cancel_reason = COALESCE(cancel_reason, 'thread deleted')
			WHERE thread_id = ?1 AND status = 'running' RETURNING run_id`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r string
			if err := rows.Scan(&r); err != nil {
				return err
			}
			running = append(running, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, wrap(err, "deleting thread %s", id)
	}
	return running, nil
}

// ---- runs ----

// CreateRun implements [server.Backend]. The write transaction (BEGIN
// IMMEDIATE) holds the database's one write lock: the strategy is decided
// against rows no other process can change meanwhile.
func (b *Backend) CreateRun(ctx context.Context, r server.RunRecord, create *server.ThreadRecord) (server.RunRecord, error) {
	var out server.RunRecord
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error { return createRun(tx, r, create, &out) })
	if err != nil {
		return r, wrap(err, "creating run %s", r.ID)
	}
	return out, nil
}

// createRun creates run r, as CreateRun says, in the write transaction
// tx, and sets out to it. An error of the contract (ErrNotFound,
// ErrGraphMismatch, ErrThreadBusy) comes before any write but the
// creation of the thread create (which exists then).
func createRun(tx sqlitedb.Tx, r server.RunRecord, create *server.ThreadRecord, out *server.RunRecord) error {
	md, err := encode(orEmpty(r.Metadata))
	if err != nil {
		return err
	}
	if len(r.Kwargs) > 0 && !json.Valid(r.Kwargs) {
		return fmt.Errorf("server/sqlite: run %s: kwargs are not JSON", r.ID)
	}
	{
		now := nanos(time.Now())
		if create != nil {
			tmd, err := encode(orEmpty(create.Metadata))
			if err != nil {
				return err
			}
			if _, err := tx.Exec(`INSERT INTO `+threadsTable+` (`+threadCols+`)
				VALUES (?1, ?2, ?2, ?3, 'idle', '{}', 'null', '{}') ON CONFLICT (thread_id) DO NOTHING`,
				create.ID, nanos(create.CreatedAt), tmd); err != nil {
				return err
			}
		}
		th, err := scanThread(tx.QueryRow(`SELECT `+threadCols+` FROM `+threadsTable+` WHERE thread_id = ?1`, r.ThreadID))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("thread", r.ThreadID)
		}
		if err != nil {
			return err
		}
		if g, ok := th.Metadata["graph_id"]; ok && g != nil && g != any(r.GraphID) {
			return fmt.Errorf("thread %s holds the state of graph %v, not %q: %w", r.ThreadID, g, r.GraphID, server.ErrGraphMismatch)
		}
		var busy bool
		if err := tx.QueryRow(`SELECT EXISTS (SELECT 1 FROM `+runsTable+` WHERE thread_id = ?1 AND status IN ('pending', 'running'))`,
			r.ThreadID).Scan(&busy); err != nil {
			return err
		}
		switch {
		case busy && r.MultitaskStrategy == "reject":
			return fmt.Errorf("thread %s: %w", r.ThreadID, server.ErrThreadBusy)
		case r.MultitaskStrategy == "interrupt":
			if _, err := tx.Exec(`UPDATE `+runsTable+` SET cancel_reason = COALESCE(cancel_reason, ?2)
				WHERE thread_id = ?1 AND status = 'running'`, r.ThreadID, "interrupted by a new run (multitask_strategy interrupt)"); err != nil {
				return err
			}
			// The thread's pending runs are cancelled too, as in LangGraph.
			ids, err := pendingRuns(tx, r.ThreadID)
			if err != nil {
				return err
			}
			for _, id := range ids {
				if _, err := tx.Exec(`UPDATE `+runsTable+` SET status = 'interrupted', result = 'null', updated_at = ?2, cancel_reason = ?3
					WHERE run_id = ?1`, id, time.Now().UnixNano(), "interrupted by a new run (multitask_strategy interrupt)"); err != nil {
					return err
				}
				if err := appendEnd(tx, id); err != nil {
					return err
				}
			}
		case r.MultitaskStrategy == "rollback":
			if _, err := tx.Exec(`UPDATE `+runsTable+` SET cancel_reason = COALESCE(cancel_reason, ?2), rollback = 1
				WHERE thread_id = ?1 AND status = 'running'`, r.ThreadID, "rolled back by a new run (multitask_strategy rollback)"); err != nil {
				return err
			}
			// The thread's pending runs are deleted, as in LangGraph.
			if _, err := tx.Exec(`DELETE FROM `+eventsTable+` WHERE run_id IN
				(SELECT run_id FROM `+runsTable+` WHERE thread_id = ?1 AND status = 'pending')`, r.ThreadID); err != nil {
				return err
			}
			if _, err := tx.Exec(`DELETE FROM `+runsTable+` WHERE thread_id = ?1 AND status = 'pending'`, r.ThreadID); err != nil {
				return err
			}
		}
		*out, _, err = scanRun(tx.QueryRow(`INSERT INTO `+runsTable+`
			(run_id, thread_id, assistant_id, created_at, updated_at, status, metadata, multitask_strategy, kwargs)
			VALUES (?1, ?2, ?3, ?4, ?4, 'pending', ?5, ?6, ?7) RETURNING `+runCols,
			r.ID, r.ThreadID, r.AssistantID, nanos(r.CreatedAt), md, r.MultitaskStrategy, rawOr(r.Kwargs, "{}")), 0)
		if err != nil {
			return err
		}
		th.Metadata["graph_id"] = r.GraphID
		th.Metadata["assistant_id"] = r.AssistantID
		tmd, err := encode(th.Metadata)
		if err != nil {
			return err
		}
		_, err = tx.Exec(`UPDATE `+threadsTable+` SET metadata = ?2, status = 'busy', updated_at = ?3 WHERE thread_id = ?1`, r.ThreadID, tmd, now)
		out.GraphID = r.GraphID
		return err
	}
}

// ClaimRun implements [server.Backend]. The claim is one write
// transaction: SQLite serializes writers, in this process and others, so
// the run it picks cannot be picked by another claim meanwhile (what
// PostgreSQL needs FOR UPDATE SKIP LOCKED for).
func (b *Backend) ClaimRun(ctx context.Context, holder string, ttl time.Duration, graphs []string) (*server.Claim, error) {
	served := "null" // a JSON list of the graphs, or null for any
	if graphs != nil {
		b, err := json.Marshal(graphs)
		if err != nil {
			return nil, wrap(err, "claiming a run")
		}
		served = string(b)
	}
	// An idle queue is seen in a read, without taking the write lock that
	// the other writers of the file (checkpoints, other processes) wait
	// for; the write transaction decides.
	var claimable bool
	err := b.db.Read(ctx, func(tx sqlitedb.Tx) error {
		return tx.QueryRow(`SELECT EXISTS (SELECT 1 FROM `+runsTable+` WHERE status IN ('pending', 'running')
			AND (status = 'pending' OR lease_expires < ?1))`, time.Now().UnixNano()).Scan(&claimable)
	})
	if err != nil {
		return nil, wrap(err, "claiming a run")
	}
	if !claimable {
		return nil, nil
	}
	var c *server.Claim
	err = b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		c = nil
		now := time.Now().UnixNano()
		if err := endDeadCancelled(tx, now); err != nil {
			return err
		}
		for {
			var id string
			var attempt int
			// A run whose thread is gone is claimable by any process (it
			// ends at once); one whose thread's graph this process does
			// not serve is not.
			err := tx.QueryRow(`SELECT run_id, attempt FROM `+runsTable+` c
				WHERE ((c.status = 'running' AND c.lease_expires < ?1)
				   OR (c.status = 'pending' AND NOT EXISTS (SELECT 1 FROM `+runsTable+` x WHERE x.thread_id = c.thread_id
				        AND (x.status = 'running' OR (x.status = 'pending' AND x.seq < c.seq)))))
				  AND (?2 = 'null' OR NOT EXISTS (SELECT 1 FROM `+threadsTable+` t WHERE t.thread_id = c.thread_id
				        AND COALESCE(json_extract(t.metadata, '$.graph_id'), '') NOT IN (SELECT value FROM json_each(?2))))
				ORDER BY seq LIMIT 1`, now, served).Scan(&id, &attempt)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			if attempt == 0 {
				// The first claim takes over the thread's rollback point.
				if _, err := tx.Exec(`UPDATE `+runsTable+` SET reset_to = (SELECT t.reset_to FROM `+threadsTable+` t
					WHERE t.thread_id = `+runsTable+`.thread_id) WHERE run_id = ?1`, id); err != nil {
					return err
				}
				if _, err := tx.Exec(`UPDATE `+threadsTable+` SET reset_to = NULL
					WHERE thread_id = (SELECT thread_id FROM `+runsTable+` WHERE run_id = ?1)`, id); err != nil {
					return err
				}
			}
			run, extra, err := scanRun(tx.QueryRow(`UPDATE `+runsTable+` SET status = 'running', holder = ?2, attempt = attempt + 1,
				lease_expires = ?3, updated_at = ?4 WHERE run_id = ?1 RETURNING `+runCols+`, reset_to`,
				id, holder, now+ttl.Nanoseconds(), now), 1)
			if _, ok := errors.AsType[*CorruptRowError](err); ok {
				// A run that cannot be handed over ends in error, and
				// the queue goes on.
				if err := failCorrupt(tx, id, now, err); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			r := &row{table: "runs", key: id}
			resetTo := r.optText(extra[0], "reset_to")
			if r.err != nil {
				return r.err
			}
			c = &server.Claim{Run: run, Holder: holder, ResetTo: resetTo}
			return nil
		}
	})
	if err != nil {
		return nil, wrap(err, "claiming a run")
	}
	return c, nil
}

// failCorrupt ends run id, whose row is damaged, in error with why.
func failCorrupt(tx sqlitedb.Tx, id string, now int64, why error) error {
	res, err := encode(map[string]any{"__error__": map[string]string{"error": "CorruptRun", "message": why.Error()}})
	if err != nil {
		return err
	}
	if _, err := tx.Exec(`UPDATE `+runsTable+` SET status = 'error', result = ?2, holder = NULL, lease_expires = NULL,
		updated_at = ?3 WHERE run_id = ?1`, id, res, now); err != nil {
		return err
	}
	if err := appendEnd(tx, id); err != nil {
		return err
	}
	return idleIfDone(tx, id, now)
}

// idleIfDone makes the thread of run id idle when it is busy with no
// pending or running run left.
func idleIfDone(tx sqlitedb.Tx, id string, now int64) error {
	_, err := tx.Exec(`UPDATE `+threadsTable+` SET status = 'idle', updated_at = ?2
		WHERE thread_id = (SELECT thread_id FROM `+runsTable+` WHERE run_id = ?1) AND status = 'busy' AND NOT `+activeRuns, id, now)
	return err
}

// endDeadCancelled ends the cancelled runs whose process died (their
// lease expired): interrupted, or deleted for a rollback (the thread's
// next run starting from where it started).
func endDeadCancelled(tx sqlitedb.Tx, now int64) error {
	rows, err := tx.Query(`SELECT run_id, thread_id, rollback, COALESCE(start_checkpoint, '') FROM `+runsTable+`
		WHERE status = 'running' AND lease_expires < ?1 AND cancel_reason IS NOT NULL ORDER BY seq LIMIT 100`, now)
	if err != nil {
		return err
	}
	type dead struct {
		run, thread, start string
		rollback           bool
	}
	var deads []dead
	for rows.Next() {
		var d dead
		if err := rows.Scan(&d.run, &d.thread, &d.rollback, &d.start); err != nil {
			rows.Close()
			return err
		}
		deads = append(deads, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, d := range deads {
		if d.rollback {
			if err := deleteRun(tx, d.run); err != nil {
				return err
			}
			if _, err := tx.Exec(`UPDATE `+threadsTable+` SET reset_to = ?2 WHERE thread_id = ?1`, d.thread, d.start); err != nil {
				return err
			}
		} else {
			if _, err := tx.Exec(`UPDATE `+runsTable+` SET status = 'interrupted', holder = NULL, lease_expires = NULL,
				updated_at = ?2, result = COALESCE(result, 'null') WHERE run_id = ?1`, d.run, now); err != nil {
				return err
			}
			if err := appendEnd(tx, d.run); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(`UPDATE `+threadsTable+` SET status = CASE WHEN `+activeRuns+` THEN 'busy' ELSE 'idle' END,
			updated_at = ?2 WHERE thread_id = ?1 AND status = 'busy'`, d.thread, now); err != nil {
			return err
		}
	}
	return nil
}

func deleteRun(tx sqlitedb.Tx, id string) error {
	if _, err := tx.Exec(`DELETE FROM `+runsTable+` WHERE run_id = ?1`, id); err != nil {
		return err
	}
	_, err := tx.Exec(`DELETE FROM `+eventsTable+` WHERE run_id = ?1`, id)
	return err
}

// pendingRuns returns the ids of the thread's pending runs.
func pendingRuns(tx sqlitedb.Tx, thread string) ([]string, error) {
	rows, err := tx.Query(`SELECT run_id FROM `+runsTable+` WHERE thread_id = ?1 AND status = 'pending' ORDER BY seq`, thread)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func appendEnd(tx sqlitedb.Tx, run string) error { return appendEvent(tx, run, "end", "null") }

// endStream ends run's stream in tx: its "error" event, when errData is
// not nil, then its "end".
func endStream(tx sqlitedb.Tx, run string, errData json.RawMessage) error {
	if errData != nil {
		if err := appendEvent(tx, run, "error", rawOr(errData, "null")); err != nil {
			return err
		}
	}
	return appendEnd(tx, run)
}

// appendEvent appends the event (name, data) to run's stream in tx.
func appendEvent(tx sqlitedb.Tx, run, name, data string) error {
	_, err := tx.Exec(`INSERT INTO `+eventsTable+` (run_id, id, name, data)
		SELECT ?1, COALESCE((SELECT max(id) + 1 FROM `+eventsTable+` WHERE run_id = ?1), 0), ?2, ?3`, run, name, data)
	return err
}

// fence is the SQL condition that the claim still holds its run (?1 run
// id, ?2 holder, ?3 attempt).
const fence = `run_id = ?1 AND holder = ?2 AND attempt = ?3 AND status = 'running'`

func leaseLost(c *server.Claim) error {
	return fmt.Errorf("run %s, attempt %d of %s: %w", c.Run.ID, c.Run.Attempt, c.Holder, server.ErrLeaseLost)
}

// fenced runs an update of the claimed run guarded by fence, failing
// with ErrLeaseLost when it changed no row.
func (b *Backend) fenced(ctx context.Context, c *server.Claim, set string, args ...any) error {
	return b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		res, err := tx.Exec(`UPDATE `+runsTable+` SET `+set+` WHERE `+fence, append([]any{c.Run.ID, c.Holder, c.Run.Attempt}, args...)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmp.Or(err, leaseLost(c))
		}
		return nil
	})
}

// RenewLease implements [server.Backend].
func (b *Backend) RenewLease(ctx context.Context, c *server.Claim, ttl time.Duration) (string, error) {
	var why string
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		err := tx.QueryRow(`UPDATE `+runsTable+` SET lease_expires = ?4 WHERE `+fence+` RETURNING COALESCE(cancel_reason, '')`,
			c.Run.ID, c.Holder, c.Run.Attempt, time.Now().UnixNano()+ttl.Nanoseconds()).Scan(&why)
		if errors.Is(err, sql.ErrNoRows) {
			return leaseLost(c)
		}
		return err
	})
	return why, wrap(err, "renewing the lease of run %s", c.Run.ID)
}

// StartRun implements [server.Backend].
func (b *Backend) StartRun(ctx context.Context, c *server.Claim, checkpointID string) error {
	return wrap(b.fenced(ctx, c, `start_checkpoint = ?4`, checkpointID), "starting run %s", c.Run.ID)
}

// ReleaseRun implements [server.Backend].
func (b *Backend) ReleaseRun(ctx context.Context, c *server.Claim) error {
	return wrap(b.fenced(ctx, c, `lease_expires = 0`), "releasing run %s", c.Run.ID)
}

// FinishRun implements [server.Backend].
func (b *Backend) FinishRun(ctx context.Context, c *server.Claim, res server.RunResult) error {
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		now := time.Now().UnixNano()
		thread := c.Run.ThreadID
		var exists bool
		if err := tx.QueryRow(`SELECT EXISTS (SELECT 1 FROM `+threadsTable+` WHERE thread_id = ?1)`, thread).Scan(&exists); err != nil {
			return err
		}
		var start string
		var rollback bool
		err := tx.QueryRow(`SELECT rollback, COALESCE(start_checkpoint, '') FROM `+runsTable+` WHERE `+fence,
			c.Run.ID, c.Holder, c.Run.Attempt).Scan(&rollback, &start)
		if errors.Is(err, sql.ErrNoRows) {
			return leaseLost(c)
		}
		if err != nil {
			return err
		}
		if rollback || !exists {
			if err := deleteRun(tx, c.Run.ID); err != nil {
				return err
			}
			if rollback && exists {
				if _, err := tx.Exec(`UPDATE `+threadsTable+` SET reset_to = ?2 WHERE thread_id = ?1`, thread, start); err != nil {
					return err
				}
			}
		} else {
			if _, err := tx.Exec(`UPDATE `+runsTable+` SET status = ?2, result = ?3, holder = NULL, lease_expires = NULL,
			updated_at = ?4 WHERE run_id = ?1`, c.Run.ID, res.Status, rawOr(res.Result, "null"), now); err != nil {
				return err
			}
			if err := endStream(tx, c.Run.ID, res.Error); err != nil {
				return err
			}
		}
		if res.DropThread {
			_, err := tx.Exec(`DELETE FROM `+threadsTable+` WHERE thread_id = ?1`, thread)
			return err
		}
		_, err = tx.Exec(`UPDATE `+threadsTable+` SET `+setState+` WHERE thread_id = ?1`,
			thread, nullable(res.Thread.Values), nullable(res.Thread.Interrupts), res.Thread.Status, now)
		return err
	})
	b.changed(err, c.Run.ID)
	return wrap(err, "finishing run %s", c.Run.ID)
}

// AppendEvent implements [server.Backend].
func (b *Backend) AppendEvent(ctx context.Context, c *server.Claim, name string, data json.RawMessage) (int, error) {
	var id int
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		err := tx.QueryRow(`INSERT INTO `+eventsTable+` (run_id, id, name, data)
			SELECT ?1, COALESCE((SELECT max(id) + 1 FROM `+eventsTable+` WHERE run_id = ?1), 0), ?4, ?5
			WHERE EXISTS (SELECT 1 FROM `+runsTable+` WHERE `+fence+`) RETURNING id`,
			c.Run.ID, c.Holder, c.Run.Attempt, name, rawOr(data, "null")).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return leaseLost(c)
		}
		return err
	})
	b.changed(err, c.Run.ID)
	return id, wrap(err, "recording an event of run %s", c.Run.ID)
}

// Events implements [server.Backend].
func (b *Backend) Events(ctx context.Context, runID string, from int) ([]server.Event, error) {
	var evs []server.Event
	err := b.read(ctx, func(tx sqlitedb.Tx) error {
		evs = nil
		rows, err := tx.Query(`SELECT id, name, data FROM `+eventsTable+` WHERE run_id = ?1 AND id >= ?2 ORDER BY id`, runID, from)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			vs, err := scanValues(rows, 3)
			if err != nil {
				return err
			}
			r := &row{table: "events", key: runID}
			ev := server.Event{ID: int(r.int(vs[0], "id")), Name: r.text(vs[1], "name"), Data: r.json(vs[2], "data")}
			if r.err != nil {
				return r.err
			}
			evs = append(evs, ev)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, wrap(err, "reading the events of run %s", runID)
	}
	return evs, nil
}

// Run implements [server.Backend].
func (b *Backend) Run(ctx context.Context, id string) (server.RunRecord, error) {
	var r server.RunRecord
	err := b.read(ctx, func(tx sqlitedb.Tx) error {
		var err error
		r, _, err = scanRun(tx.QueryRow(`SELECT `+runCols+` FROM `+runsTable+` WHERE run_id = ?1`, id), 0)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("run", id)
		}
		return err
	})
	return r, wrap(err, "reading run %s", id)
}

// ListRuns implements [server.Backend].
func (b *Backend) ListRuns(ctx context.Context, threadID, status string, limit, offset int) ([]server.RunRecord, int, error) {
	var out []server.RunRecord
	var total int
	err := b.db.Read(ctx, func(tx sqlitedb.Tx) error {
		out = nil
		if err := tx.QueryRow(`SELECT count(*) FROM `+runsTable+` WHERE thread_id = ?1 AND (?2 = '' OR status = ?2)`,
			threadID, status).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.Query(`SELECT `+runCols+` FROM `+runsTable+` WHERE thread_id = ?1 AND (?2 = '' OR status = ?2)
			ORDER BY seq LIMIT ?3 OFFSET ?4`, threadID, status, limit, offset)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, _, err := scanRun(rows, 0)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, wrap(err, "listing the runs of thread %s", threadID)
	}
	return out, total, nil
}

// CancelRun implements [server.Backend].
func (b *Backend) CancelRun(ctx context.Context, id, reason string) (server.RunRecord, error) {
	var out server.RunRecord
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		now := time.Now().UnixNano()
		r, _, err := scanRun(tx.QueryRow(`UPDATE `+runsTable+` SET status = 'interrupted', cancel_reason = ?2, result = 'null',
			updated_at = ?3 WHERE run_id = ?1 AND status = 'pending' RETURNING `+runCols, id, reason, now), 0)
		if err == nil {
			out = r
			if err := appendEnd(tx, id); err != nil {
				return err
			}
			return idleIfDone(tx, id, now)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if _, err := tx.Exec(`UPDATE `+runsTable+` SET cancel_reason = COALESCE(cancel_reason, ?2)
			WHERE run_id = ?1 AND status = 'running'`, id, reason); err != nil {
			return err
		}
		out, _, err = scanRun(tx.QueryRow(`SELECT `+runCols+` FROM `+runsTable+` WHERE run_id = ?1`, id), 0)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("run", id)
		}
		return err
	})
	b.changed(err, id)
	return out, wrap(err, "cancelling run %s", id)
}

// DeleteRun implements [server.Backend].
func (b *Backend) DeleteRun(ctx context.Context, id string) error {
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		var status string
		err := tx.QueryRow(`SELECT status FROM `+runsTable+` WHERE run_id = ?1`, id).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("run", id)
		}
		if err != nil {
			return err
		}
		if status == "pending" || status == "running" {
			return fmt.Errorf("run %s: %w", id, server.ErrThreadBusy)
		}
		return deleteRun(tx, id)
	})
	b.changed(err, id)
	return wrap(err, "deleting run %s", id)
}
