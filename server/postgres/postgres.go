package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/internal/pgdb"

	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/internal/runwatch"
)

// Backend is a [server.Backend] in PostgreSQL, safe for concurrent use by
// any number of goroutines and processes. Create one with [New].
type Backend struct {
	pool    *pgxpool.Pool
	channel string // the NOTIFY channel of the Backend's schema
	opts    options
	watch   *runwatch.Hub
	lis     listener
}

var (
	_ server.Backend    = (*Backend)(nil)
	_ server.RunWatcher = (*Backend)(nil)
)

// SchemaVersionError is returned by [New] for a schema written by a newer
// version of this package.
type SchemaVersionError = pgdb.SchemaVersionError

// New returns a Backend on pool's database, creating or migrating its
// tables first. The pool stays the caller's to close.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Backend, error) {
	if pool == nil {
		return nil, errors.New("server/postgres: New: nil pool")
	}
	o := options{poll: server.DefaultPollInterval, safety: DefaultSafetyPollInterval, linger: DefaultListenLinger}
	for _, opt := range opts {
		opt(&o)
	}
	err := pgdb.Migrate(ctx, pool, pgdb.Config{Lock: "agentgraph/server/postgres migrate", MigrationsTable: migrationsTable, Migrations: migrations})
	if _, ok := errors.AsType[*SchemaVersionError](err); ok {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("server/postgres: %w", err)
	}
	var schema string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return nil, fmt.Errorf("server/postgres: reading the schema: %w", err)
	}
	b := &Backend{pool: pool, channel: channelName(schema), opts: o}
	b.watch = runwatch.New(runwatch.Config{Poll: b.marks, Interval: b.pollInterval, Source: b.listen,
		Linger: o.linger, Name: "server/postgres"})
	return b, nil
}

// SchemaVersion is the schema version this package writes.
func SchemaVersion() int { return len(migrations) }

// migrations are the schema versions in order: migrations[i] brings a
// schema from version i to version i+1. Never edit a released migration;
// append a new one.
var migrations = [][]string{{
	`CREATE TABLE agentgraph_server_threads (
		thread_id  text COLLATE "C" PRIMARY KEY,
		created_at timestamptz NOT NULL,
		updated_at timestamptz NOT NULL,
		metadata   jsonb NOT NULL,
		status     text NOT NULL,
		config     jsonb NOT NULL,
		vals       jsonb NOT NULL,
		interrupts jsonb NOT NULL,
		reset_to   text
	)`,
	`CREATE TABLE agentgraph_server_runs (
		run_id             text COLLATE "C" PRIMARY KEY,
		seq                bigserial NOT NULL,
		thread_id          text COLLATE "C" NOT NULL,
		assistant_id       text NOT NULL,
		created_at         timestamptz NOT NULL,
		updated_at         timestamptz NOT NULL,
		status             text NOT NULL,
		metadata           jsonb NOT NULL,
		multitask_strategy text NOT NULL,
		kwargs             jsonb NOT NULL,
		result             jsonb,
		attempt            integer NOT NULL DEFAULT 0,
		holder             text,
		lease_expires      timestamptz,
		cancel_reason      text,
		rollback           boolean NOT NULL DEFAULT false,
		start_checkpoint   text,
		reset_to           text
	)`,
	`CREATE UNIQUE INDEX agentgraph_server_runs_one_running ON agentgraph_server_runs (thread_id) WHERE status = 'running'`,
	`CREATE INDEX agentgraph_server_runs_thread ON agentgraph_server_runs (thread_id, seq)`,
	`CREATE INDEX agentgraph_server_runs_queue ON agentgraph_server_runs (seq) WHERE status IN ('pending', 'running')`,
	`CREATE TABLE agentgraph_server_events (
		run_id text COLLATE "C" NOT NULL,
		id     integer NOT NULL,
		name   text NOT NULL,
		data   text NOT NULL,
		PRIMARY KEY (run_id, id)
	)`,
}, {
	// Version 2: the assistants and their versions.
	`CREATE TABLE agentgraph_server_assistants (
		assistant_id text COLLATE "C" PRIMARY KEY,
		graph_id     text NOT NULL,
		config       jsonb NOT NULL,
		context      jsonb NOT NULL,
		metadata     jsonb NOT NULL,
		name         text NOT NULL,
		description  text,
		version      integer NOT NULL,
		last_version integer NOT NULL,
		created_at   timestamptz NOT NULL,
		updated_at   timestamptz NOT NULL
	)`,
	`CREATE TABLE agentgraph_server_assistant_versions (
		assistant_id text COLLATE "C" NOT NULL,
		version      integer NOT NULL,
		graph_id     text NOT NULL,
		config       jsonb NOT NULL,
		context      jsonb NOT NULL,
		metadata     jsonb NOT NULL,
		name         text NOT NULL,
		description  text,
		created_at   timestamptz NOT NULL,
		PRIMARY KEY (assistant_id, version)
	)`,
	`CREATE INDEX agentgraph_server_assistants_created ON agentgraph_server_assistants (created_at DESC, assistant_id)`,
}, cronsMigration}

const migrationsTable = "agentgraph_server_schema_migrations"

// ---- threads ----

const threadCols = `thread_id, created_at, updated_at, metadata, status, config, vals, interrupts`

func scanThread(row pgx.Row) (server.ThreadRecord, error) {
	var t server.ThreadRecord
	var md, cfg, vals, in []byte
	if err := row.Scan(&t.ID, &t.CreatedAt, &t.UpdatedAt, &md, &t.Status, &cfg, &vals, &in); err != nil {
		return t, err
	}
	if err := json.Unmarshal(md, &t.Metadata); err != nil {
		return t, fmt.Errorf("thread %s: metadata: %w", t.ID, err)
	}
	if err := json.Unmarshal(cfg, &t.Config); err != nil {
		return t, fmt.Errorf("thread %s: config: %w", t.ID, err)
	}
	if t.Metadata == nil {
		t.Metadata = map[string]any{}
	}
	if t.Config == nil {
		t.Config = map[string]any{}
	}
	t.Values, t.Interrupts = vals, in
	return t, nil
}

func jsonArg(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("server/postgres: encoding %T: %w", v, err)
	}
	return pgdb.JSONB(b), nil
}

func rawOr(b json.RawMessage, def string) []byte {
	if len(b) == 0 {
		return []byte(def)
	}
	return pgdb.JSONB(b)
}

func notFound(what, id string) error {
	return fmt.Errorf("%s %s: %w", what, id, server.ErrNotFound)
}

// CreateThread implements [server.Backend].
func (b *Backend) CreateThread(ctx context.Context, t server.ThreadRecord, ifExists string) (server.ThreadRecord, error) {
	md, err := jsonArg(orEmpty(t.Metadata))
	if err != nil {
		return t, err
	}
	cfg, err := jsonArg(orEmpty(t.Config))
	if err != nil {
		return t, err
	}
	out, err := scanThread(b.pool.QueryRow(ctx, `INSERT INTO agentgraph_server_threads (`+threadCols+`)
		VALUES ($1, $2, $2, $3, $4, $5, $6, $7) ON CONFLICT (thread_id) DO NOTHING RETURNING `+threadCols,
		t.ID, t.CreatedAt, md, t.Status, cfg, rawOr(t.Values, "null"), rawOr(t.Interrupts, "{}")))
	if errors.Is(err, pgx.ErrNoRows) {
		if ifExists == "do_nothing" {
			return b.Thread(ctx, t.ID)
		}
		return t, fmt.Errorf("thread %s: %w", t.ID, server.ErrExists)
	}
	if err != nil {
		return t, fmt.Errorf("server/postgres: creating thread %s: %w", t.ID, err)
	}
	return out, nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// Thread implements [server.Backend].
func (b *Backend) Thread(ctx context.Context, id string) (server.ThreadRecord, error) {
	t, err := scanThread(b.pool.QueryRow(ctx, `SELECT `+threadCols+` FROM agentgraph_server_threads WHERE thread_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return t, notFound("thread", id)
	}
	if err != nil {
		return t, fmt.Errorf("server/postgres: reading thread %s: %w", id, err)
	}
	return t, nil
}

var sortColumns = map[string]string{"thread_id": "thread_id", "status": "status", "created_at": "created_at", "updated_at": "updated_at", "": "created_at"}

// SearchThreads implements [server.Backend].
func (b *Backend) SearchThreads(ctx context.Context, q server.ThreadQuery) ([]server.ThreadRecord, int, error) {
	col, ok := sortColumns[q.SortBy]
	if !ok {
		return nil, 0, fmt.Errorf("server/postgres: cannot sort threads by %q", q.SortBy)
	}
	md, err := jsonArg(orEmpty(q.Metadata))
	if err != nil {
		return nil, 0, err
	}
	vals, err := jsonArg(orEmpty(q.Values))
	if err != nil {
		return nil, 0, err
	}
	ids := q.IDs
	if ids == nil {
		ids = []string{}
	}
	where := ` FROM agentgraph_server_threads WHERE (cardinality($1::text[]) = 0 OR thread_id = ANY($1))
		AND metadata @> $2::jsonb AND ($3 = '' OR status = $3) AND ($4::jsonb = '{}'::jsonb OR vals @> $4::jsonb)`
	var total int
	if err := b.pool.QueryRow(ctx, `SELECT count(*)`+where, ids, md, q.Status, vals).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("server/postgres: counting threads: %w", err)
	}
	if q.Limit == 0 {
		return nil, total, nil
	}
	dir := "ASC"
	if q.Desc {
		dir = "DESC"
	}
	rows, err := b.pool.Query(ctx, `SELECT `+threadCols+where+` ORDER BY `+col+` `+dir+`, thread_id `+dir+` LIMIT $5 OFFSET $6`,
		ids, md, q.Status, vals, q.Limit, q.Offset)
	if err != nil {
		return nil, 0, fmt.Errorf("server/postgres: searching threads: %w", err)
	}
	defer rows.Close()
	var out []server.ThreadRecord
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("server/postgres: searching threads: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("server/postgres: searching threads: %w", err)
	}
	return out, total, nil
}

// PatchThread implements [server.Backend].
func (b *Backend) PatchThread(ctx context.Context, id string, metadata map[string]any) (server.ThreadRecord, error) {
	md, err := jsonArg(orEmpty(metadata))
	if err != nil {
		return server.ThreadRecord{}, err
	}
	// A graph_id that is not the thread's is refused in the same
	// statement, so that a run another process creates meanwhile (which
	// labels the thread with its graph) cannot be relabelled.
	t, err := scanThread(b.pool.QueryRow(ctx, `UPDATE agentgraph_server_threads SET metadata = metadata || $2::jsonb, updated_at = now()
		WHERE thread_id = $1 AND ($2::jsonb->>'graph_id' IS NULL OR metadata->>'graph_id' IS NULL
		      OR metadata->>'graph_id' = $2::jsonb->>'graph_id') RETURNING `+threadCols, id, md))
	if errors.Is(err, pgx.ErrNoRows) {
		var graph *string
		err := b.pool.QueryRow(ctx, `SELECT metadata->>'graph_id' FROM agentgraph_server_threads WHERE thread_id = $1`, id).Scan(&graph)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return t, notFound("thread", id)
		case err != nil:
			return t, fmt.Errorf("server/postgres: patching thread %s: %w", id, err)
		case graph != nil:
			return t, fmt.Errorf("thread %s holds the state of graph %q; its graph_id cannot change: %w", id, *graph, server.ErrGraphMismatch)
		}
		return t, fmt.Errorf("server/postgres: patching thread %s: not updated", id)
	}
	if err != nil {
		return t, fmt.Errorf("server/postgres: patching thread %s: %w", id, err)
	}
	return t, nil
}

// activeRuns is the SQL condition "the thread of alias t has a pending or
// running run".
const activeRuns = `EXISTS (SELECT 1 FROM agentgraph_server_runs x WHERE x.thread_id = t.thread_id AND x.status IN ('pending', 'running'))`

// setState sets a thread's state from $2 (values), $3 (interrupts), $4
// (status): NULL keeps values and interrupts, and a thread with pending
// or running runs stays busy.
const setState = `vals = COALESCE($2::jsonb, vals), interrupts = COALESCE($3::jsonb, interrupts), updated_at = now(),
	status = CASE WHEN ` + activeRuns + ` THEN 'busy' ELSE $4 END`

// nullable returns b, or nil (NULL) when it is empty.
func nullable(b json.RawMessage) []byte {
	if len(b) == 0 {
		return nil
	}
	return pgdb.JSONB(b)
}

// SetThreadState implements [server.Backend].
func (b *Backend) SetThreadState(ctx context.Context, id string, st server.ThreadState) error {
	tag, err := b.pool.Exec(ctx, `UPDATE agentgraph_server_threads t SET `+setState+` WHERE thread_id = $1`,
		id, nullable(st.Values), nullable(st.Interrupts), st.Status)
	if err != nil {
		return fmt.Errorf("server/postgres: updating thread %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("thread", id)
	}
	return nil
}

// DeleteThread implements [server.Backend].
func (b *Backend) DeleteThread(ctx context.Context, id string) ([]string, error) {
	var running []string
	err := withRetry(ctx, func() error {
		return pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_threads WHERE thread_id = $1`, id)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return notFound("thread", id)
			}
			if _, err := tx.Exec(ctx, `DELETE FROM `+cronsTable+` WHERE thread_id = $1`, id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_events e USING agentgraph_server_runs r
			WHERE e.run_id = r.run_id AND r.thread_id = $1 AND r.status <> 'running'`, id); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `DELETE FROM agentgraph_server_runs WHERE thread_id = $1 AND status <> 'running' RETURNING run_id`, id)
			if err != nil {
				return err
			}
			deleted, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			if err := b.notify(ctx, tx, deleted...); err != nil {
				return err
			}
			rows, err = tx.Query(ctx, `UPDATE agentgraph_server_runs SET cancel_reason = COALESCE(cancel_reason, 'thread deleted')
			WHERE thread_id = $1 AND status = 'running' RETURNING run_id`, id)
			if err != nil {
				return err
			}
			running, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
	})
	if err != nil && !errors.Is(err, server.ErrNotFound) {
		return nil, fmt.Errorf("server/postgres: deleting thread %s: %w", id, err)
	}
	return running, err
}

// ---- runs ----

const runCols = `run_id, thread_id, assistant_id, created_at, updated_at, status, metadata, multitask_strategy, kwargs, result, attempt`

func scanRun(row pgx.Row) (server.RunRecord, error) {
	var r server.RunRecord
	var md, kw, res []byte
	if err := row.Scan(&r.ID, &r.ThreadID, &r.AssistantID, &r.CreatedAt, &r.UpdatedAt, &r.Status, &md, &r.MultitaskStrategy, &kw, &res, &r.Attempt); err != nil {
		return r, err
	}
	if err := json.Unmarshal(md, &r.Metadata); err != nil {
		return r, fmt.Errorf("run %s: metadata: %w", r.ID, err)
	}
	if r.Metadata == nil {
		r.Metadata = map[string]any{}
	}
	r.Kwargs, r.Result = kw, res
	return r, nil
}

// CreateRun implements [server.Backend].
func (b *Backend) CreateRun(ctx context.Context, r server.RunRecord, create *server.ThreadRecord) (server.RunRecord, error) {
	return b.createRun(ctx, r, create, nil)
}

// createRun is CreateRun, calling first, when it is not nil, before in
// the transaction that creates the run (FireCron's compare-and-set).
func (b *Backend) createRun(ctx context.Context, r server.RunRecord, create *server.ThreadRecord, before func(pgx.Tx) error) (server.RunRecord, error) {
	md, err := jsonArg(orEmpty(r.Metadata))
	if err != nil {
		return r, err
	}
	graphMD, err := jsonArg(map[string]any{"graph_id": r.GraphID, "assistant_id": r.AssistantID})
	if err != nil {
		return r, err
	}
	var out server.RunRecord
	err = withRetry(ctx, func() error {
		return pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			if before != nil {
				if err := before(tx); err != nil {
					return err
				}
			}
			if create != nil {
				tmd, err := jsonArg(orEmpty(create.Metadata))
				if err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `INSERT INTO agentgraph_server_threads (`+threadCols+`)
				VALUES ($1, $2, $2, $3, 'idle', '{}', 'null', '{}') ON CONFLICT (thread_id) DO NOTHING`,
					create.ID, create.CreatedAt, tmd); err != nil {
					return err
				}
			}
			var graphID *string
			err := tx.QueryRow(ctx, `SELECT metadata->>'graph_id' FROM agentgraph_server_threads WHERE thread_id = $1 FOR UPDATE`, r.ThreadID).Scan(&graphID)
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound("thread", r.ThreadID)
			}
			if err != nil {
				return err
			}
			if graphID != nil && *graphID != r.GraphID {
				return fmt.Errorf("thread %s holds the state of graph %q, not %q: %w", r.ThreadID, *graphID, r.GraphID, server.ErrGraphMismatch)
			}
			var busy bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agentgraph_server_runs WHERE thread_id = $1 AND status IN ('pending', 'running'))`,
				r.ThreadID).Scan(&busy); err != nil {
				return err
			}
			switch {
			case busy && r.MultitaskStrategy == "reject":
				return fmt.Errorf("thread %s: %w", r.ThreadID, server.ErrThreadBusy)
			case r.MultitaskStrategy == "interrupt":
				if _, err := tx.Exec(ctx, `UPDATE agentgraph_server_runs SET cancel_reason = COALESCE(cancel_reason, $2)
				WHERE thread_id = $1 AND status = 'running'`, r.ThreadID, "interrupted by a new run (multitask_strategy interrupt)"); err != nil {
					return err
				}
				// The thread's pending runs are cancelled too, as in LangGraph.
				rows, err := tx.Query(ctx, `UPDATE agentgraph_server_runs SET status = 'interrupted', result = 'null', updated_at = now(),
				cancel_reason = $2 WHERE thread_id = $1 AND status = 'pending' RETURNING run_id`,
					r.ThreadID, "interrupted by a new run (multitask_strategy interrupt)")
				if err != nil {
					return err
				}
				ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					return err
				}
				for _, id := range ids {
					if err := appendEnd(ctx, tx, id); err != nil {
						return err
					}
				}
				if err := b.notify(ctx, tx, ids...); err != nil {
					return err
				}
			case r.MultitaskStrategy == "rollback":
				if _, err := tx.Exec(ctx, `UPDATE agentgraph_server_runs SET cancel_reason = COALESCE(cancel_reason, $2), rollback = true
				WHERE thread_id = $1 AND status = 'running'`, r.ThreadID, "rolled back by a new run (multitask_strategy rollback)"); err != nil {
					return err
				}
				// The thread's pending runs are deleted, as in LangGraph.
				if _, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_events e USING agentgraph_server_runs r
				WHERE e.run_id = r.run_id AND r.thread_id = $1 AND r.status = 'pending'`, r.ThreadID); err != nil {
					return err
				}
				rows, err := tx.Query(ctx, `DELETE FROM agentgraph_server_runs WHERE thread_id = $1 AND status = 'pending' RETURNING run_id`, r.ThreadID)
				if err != nil {
					return err
				}
				ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					return err
				}
				if err := b.notify(ctx, tx, ids...); err != nil {
					return err
				}
			}
			out, err = scanRun(tx.QueryRow(ctx, `INSERT INTO agentgraph_server_runs
			(run_id, thread_id, assistant_id, created_at, updated_at, status, metadata, multitask_strategy, kwargs)
			VALUES ($1, $2, $3, $4, $4, 'pending', $5, $6, $7) RETURNING `+runCols,
				r.ID, r.ThreadID, r.AssistantID, r.CreatedAt, md, r.MultitaskStrategy, rawOr(r.Kwargs, "{}")))
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE agentgraph_server_threads SET metadata = metadata || $2::jsonb, status = 'busy', updated_at = now()
			WHERE thread_id = $1`, r.ThreadID, graphMD)
			return err
		})
	})
	if err != nil {
		if errors.Is(err, server.ErrNotFound) || errors.Is(err, server.ErrThreadBusy) || errors.Is(err, server.ErrGraphMismatch) || errors.Is(err, server.ErrTickTaken) {
			return r, err
		}
		return r, fmt.Errorf("server/postgres: creating run %s: %w", r.ID, err)
	}
	out.GraphID = r.GraphID
	return out, nil
}

// retryable reports whether a claim failed only because another
// transaction got there first (a deadlock, or a second running run the
// unique index refused): the claim is tried again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "23505" || pe.Code == "40001")
}

// deadlocked reports whether a transaction failed only because it ran
// into another (a deadlock, or a serialization failure): it is tried
// again.
func deadlocked(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// withRetry runs tx, again while it deadlocks, a few times.
func withRetry(ctx context.Context, tx func() error) error {
	for try := 0; ; try++ {
		err := tx()
		if err == nil || !deadlocked(err) || try == 4 || ctx.Err() != nil {
			return err
		}
	}
}

// ClaimRun implements [server.Backend].
func (b *Backend) ClaimRun(ctx context.Context, holder string, ttl time.Duration, graphs []string) (*server.Claim, error) {
	for try := 0; ; try++ {
		c, err := b.claim(ctx, holder, ttl, graphs)
		if err != nil && retryable(err) && try < 5 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("server/postgres: claiming a run: %w", err)
		}
		return c, nil
	}
}

func interval(d time.Duration) string {
	return strconv.FormatInt(d.Microseconds(), 10) + " microseconds"
}

func (b *Backend) claim(ctx context.Context, holder string, ttl time.Duration, graphs []string) (*server.Claim, error) {
	var c *server.Claim
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		// Runs whose process died after they were cancelled end now,
		// without running again.
		rows, err := tx.Query(ctx, `SELECT run_id, thread_id, rollback, COALESCE(start_checkpoint, '') FROM agentgraph_server_runs
			WHERE status = 'running' AND lease_expires < now() AND cancel_reason IS NOT NULL
			ORDER BY seq LIMIT 100 FOR UPDATE SKIP LOCKED`)
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
			if err := endDeadCancelled(ctx, tx, d.run, d.thread, d.start, d.rollback); err != nil {
				return err
			}
			if err := b.notify(ctx, tx, d.run); err != nil {
				return err
			}
		}

		var id string
		var attempt int
		// A run whose thread is gone is claimable by any process (it ends at
		// once); one whose thread's graph this process does not serve is not.
		err = tx.QueryRow(ctx, `SELECT run_id, attempt FROM agentgraph_server_runs c
			WHERE ((c.status = 'running' AND c.lease_expires < now())
			   OR (c.status = 'pending' AND NOT EXISTS (SELECT 1 FROM agentgraph_server_runs x WHERE x.thread_id = c.thread_id
			        AND (x.status = 'running' OR (x.status = 'pending' AND x.seq < c.seq)))))
			  AND ($1::text[] IS NULL OR NOT EXISTS (SELECT 1 FROM agentgraph_server_threads t WHERE t.thread_id = c.thread_id
			        AND COALESCE(t.metadata->>'graph_id', '') <> ALL($1::text[])))
			ORDER BY seq LIMIT 1 FOR UPDATE OF c SKIP LOCKED`, graphs).Scan(&id, &attempt)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if attempt == 0 {
			// The first claim takes over the thread's rollback point.
			if _, err := tx.Exec(ctx, `WITH t AS (SELECT th.thread_id, th.reset_to FROM agentgraph_server_threads th
					JOIN agentgraph_server_runs r ON r.thread_id = th.thread_id WHERE r.run_id = $1 FOR UPDATE OF th),
				u AS (UPDATE agentgraph_server_threads th SET reset_to = NULL FROM t WHERE th.thread_id = t.thread_id)
				UPDATE agentgraph_server_runs r SET reset_to = t.reset_to FROM t WHERE r.run_id = $1`, id); err != nil {
				return err
			}
		}
		var resetTo *string
		run, err := scanRunWith(tx.QueryRow(ctx, `UPDATE agentgraph_server_runs SET status = 'running', holder = $2, attempt = attempt + 1,
			lease_expires = now() + $3::interval, updated_at = now() WHERE run_id = $1 RETURNING `+runCols+`, reset_to`,
			id, holder, interval(ttl)), &resetTo)
		if err != nil {
			return err
		}
		if err := b.notify(ctx, tx, id); err != nil {
			return err
		}
		c = &server.Claim{Run: run, Holder: holder, ResetTo: resetTo}
		return nil
	})
	return c, err
}

func scanRunWith(row pgx.Row, resetTo **string) (server.RunRecord, error) {
	var r server.RunRecord
	var md, kw, res []byte
	if err := row.Scan(&r.ID, &r.ThreadID, &r.AssistantID, &r.CreatedAt, &r.UpdatedAt, &r.Status, &md, &r.MultitaskStrategy, &kw, &res, &r.Attempt, resetTo); err != nil {
		return r, err
	}
	if err := json.Unmarshal(md, &r.Metadata); err != nil {
		r.Metadata = map[string]any{"__corrupt_metadata__": string(md)}
	}
	r.Kwargs, r.Result = kw, res
	return r, nil
}

// endDeadCancelled ends a cancelled run whose process died: interrupted,
// or deleted for a rollback (the thread's next run starting from where it
// started).
func endDeadCancelled(ctx context.Context, tx pgx.Tx, run, thread, start string, rollback bool) error {
	if rollback {
		if _, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_runs WHERE run_id = $1`, run); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_events WHERE run_id = $1`, run); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE agentgraph_server_threads SET reset_to = $2 WHERE thread_id = $1`, thread, start); err != nil {
			return err
		}
	} else {
		if _, err := tx.Exec(ctx, `UPDATE agentgraph_server_runs SET status = 'interrupted', holder = NULL, lease_expires = NULL,
			updated_at = now(), result = COALESCE(result, 'null') WHERE run_id = $1`, run); err != nil {
			return err
		}
		if err := appendEnd(ctx, tx, run); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `UPDATE agentgraph_server_threads t SET status = CASE WHEN `+activeRuns+` THEN 'busy' ELSE 'idle' END,
		updated_at = now() WHERE thread_id = $1 AND status = 'busy'`, thread)
	return err
}

func appendEnd(ctx context.Context, tx pgx.Tx, run string) error {
	return appendEvent(ctx, tx, run, "end", "null")
}

// endStream ends run's stream in tx: its "error" event, when errData is
// not nil, then its "end".
func endStream(ctx context.Context, tx pgx.Tx, run string, errData json.RawMessage) error {
	if errData != nil {
		if err := appendEvent(ctx, tx, run, "error", string(errData)); err != nil {
			return err
		}
	}
	return appendEnd(ctx, tx, run)
}

// appendEvent appends the event (name, data) to run's stream in tx.
func appendEvent(ctx context.Context, tx pgx.Tx, run, name, data string) error {
	_, err := tx.Exec(ctx, `INSERT INTO agentgraph_server_events (run_id, id, name, data)
		SELECT $1, COALESCE((SELECT max(id) + 1 FROM agentgraph_server_events WHERE run_id = $1), 0), $2, $3`, run, name, data)
	return err
}

// fence is the SQL condition that the claim c still holds its run ($1
// run id, $2 holder, $3 attempt).
const fence = `run_id = $1 AND holder = $2 AND attempt = $3 AND status = 'running'`

func leaseLost(c *server.Claim) error {
	return fmt.Errorf("run %s, attempt %d of %s: %w", c.Run.ID, c.Run.Attempt, c.Holder, server.ErrLeaseLost)
}

// RenewLease implements [server.Backend].
func (b *Backend) RenewLease(ctx context.Context, c *server.Claim, ttl time.Duration) (string, error) {
	var why string
	err := b.pool.QueryRow(ctx, `UPDATE agentgraph_server_runs SET lease_expires = now() + $4::interval WHERE `+fence+`
		RETURNING COALESCE(cancel_reason, '')`, c.Run.ID, c.Holder, c.Run.Attempt, interval(ttl)).Scan(&why)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", leaseLost(c)
	}
	if err != nil {
		return "", fmt.Errorf("server/postgres: renewing the lease of run %s: %w", c.Run.ID, err)
	}
	return why, nil
}

// StartRun implements [server.Backend].
func (b *Backend) StartRun(ctx context.Context, c *server.Claim, checkpointID string) error {
	tag, err := b.pool.Exec(ctx, `UPDATE agentgraph_server_runs SET start_checkpoint = $4 WHERE `+fence, c.Run.ID, c.Holder, c.Run.Attempt, checkpointID)
	if err != nil {
		return fmt.Errorf("server/postgres: starting run %s: %w", c.Run.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return leaseLost(c)
	}
	return nil
}

// ReleaseRun implements [server.Backend].
func (b *Backend) ReleaseRun(ctx context.Context, c *server.Claim) error {
	tag, err := b.pool.Exec(ctx, `UPDATE agentgraph_server_runs SET lease_expires = '-infinity' WHERE `+fence, c.Run.ID, c.Holder, c.Run.Attempt)
	if err != nil {
		return fmt.Errorf("server/postgres: releasing run %s: %w", c.Run.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return leaseLost(c)
	}
	return nil
}

// FinishRun implements [server.Backend].
func (b *Backend) FinishRun(ctx context.Context, c *server.Claim, res server.RunResult) error {
	err := withRetry(ctx, func() error {
		return pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			// The thread's row first, then the run's: the order CreateRun
			// takes them in.
			thread := c.Run.ThreadID
			exists := true
			err := tx.QueryRow(ctx, `SELECT thread_id FROM agentgraph_server_threads WHERE thread_id = $1 FOR UPDATE`, thread).Scan(&thread)
			if errors.Is(err, pgx.ErrNoRows) {
				exists = false
			} else if err != nil {
				return err
			}
			var start string
			var rollback bool
			err = tx.QueryRow(ctx, `SELECT rollback, COALESCE(start_checkpoint, '') FROM agentgraph_server_runs WHERE `+fence+` FOR UPDATE`,
				c.Run.ID, c.Holder, c.Run.Attempt).Scan(&rollback, &start)
			if errors.Is(err, pgx.ErrNoRows) {
				return leaseLost(c)
			}
			if err != nil {
				return err
			}
			if rollback || !exists {
				if _, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_runs WHERE run_id = $1`, c.Run.ID); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_events WHERE run_id = $1`, c.Run.ID); err != nil {
					return err
				}
				if rollback && exists {
					if _, err := tx.Exec(ctx, `UPDATE agentgraph_server_threads SET reset_to = $2 WHERE thread_id = $1`, thread, start); err != nil {
						return err
					}
				}
			} else {
				if _, err := tx.Exec(ctx, `UPDATE agentgraph_server_runs SET status = $2, result = $3, holder = NULL, lease_expires = NULL,
			updated_at = now() WHERE run_id = $1`, c.Run.ID, res.Status, rawOr(res.Result, "null")); err != nil {
					return err
				}
				if err := endStream(ctx, tx, c.Run.ID, res.Error); err != nil {
					return err
				}
			}
			if err := b.notify(ctx, tx, c.Run.ID); err != nil {
				return err
			}
			if res.DropThread {
				_, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_threads WHERE thread_id = $1`, thread)
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE agentgraph_server_threads t SET `+setState+` WHERE thread_id = $1`,
				thread, nullable(res.Thread.Values), nullable(res.Thread.Interrupts), res.Thread.Status)
			return err
		})
	})
	if err != nil && !errors.Is(err, server.ErrLeaseLost) {
		return fmt.Errorf("server/postgres: finishing run %s: %w", c.Run.ID, err)
	}
	return err
}

// AppendEvent implements [server.Backend].
func (b *Backend) AppendEvent(ctx context.Context, c *server.Claim, name string, data json.RawMessage) (int, error) {
	var id int
	// The NOTIFY is sent by the statement's own transaction: at its commit.
	err := b.pool.QueryRow(ctx, `WITH ins AS (INSERT INTO agentgraph_server_events (run_id, id, name, data)
		SELECT $1, COALESCE((SELECT max(id) + 1 FROM agentgraph_server_events WHERE run_id = $1), 0), $4, $5
		WHERE EXISTS (SELECT 1 FROM agentgraph_server_runs WHERE `+fence+`) RETURNING id)
		SELECT id, pg_notify($6, $1) FROM ins`,
		c.Run.ID, c.Holder, c.Run.Attempt, name, string(data), b.channel).Scan(&id, nil)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, leaseLost(c)
	}
	if err != nil {
		return 0, fmt.Errorf("server/postgres: recording an event of run %s: %w", c.Run.ID, err)
	}
	return id, nil
}

// Events implements [server.Backend].
func (b *Backend) Events(ctx context.Context, runID string, from int) ([]server.Event, error) {
	rows, err := b.pool.Query(ctx, `SELECT id, name, data FROM agentgraph_server_events WHERE run_id = $1 AND id >= $2 ORDER BY id`, runID, from)
	if err != nil {
		return nil, fmt.Errorf("server/postgres: reading the events of run %s: %w", runID, err)
	}
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (server.Event, error) {
		var ev server.Event
		var data string
		err := row.Scan(&ev.ID, &ev.Name, &data)
		ev.Data = json.RawMessage(data)
		return ev, err
	})
	if err != nil {
		return nil, fmt.Errorf("server/postgres: reading the events of run %s: %w", runID, err)
	}
	return evs, nil
}

// Run implements [server.Backend].
func (b *Backend) Run(ctx context.Context, id string) (server.RunRecord, error) {
	r, err := scanRun(b.pool.QueryRow(ctx, `SELECT `+runCols+` FROM agentgraph_server_runs WHERE run_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, notFound("run", id)
	}
	if err != nil {
		return r, fmt.Errorf("server/postgres: reading run %s: %w", id, err)
	}
	return r, nil
}

// ListRuns implements [server.Backend].
func (b *Backend) ListRuns(ctx context.Context, threadID, status string, limit, offset int) ([]server.RunRecord, int, error) {
	var total int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM agentgraph_server_runs WHERE thread_id = $1 AND ($2 = '' OR status = $2)`,
		threadID, status).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("server/postgres: counting the runs of thread %s: %w", threadID, err)
	}
	rows, err := b.pool.Query(ctx, `SELECT `+runCols+` FROM agentgraph_server_runs WHERE thread_id = $1 AND ($2 = '' OR status = $2)
		ORDER BY seq LIMIT $3 OFFSET $4`, threadID, status, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("server/postgres: listing the runs of thread %s: %w", threadID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (server.RunRecord, error) { return scanRun(row) })
	if err != nil {
		return nil, 0, fmt.Errorf("server/postgres: listing the runs of thread %s: %w", threadID, err)
	}
	return out, total, nil
}

// CancelRun implements [server.Backend].
func (b *Backend) CancelRun(ctx context.Context, id, reason string) (server.RunRecord, error) {
	var out server.RunRecord
	err := withRetry(ctx, func() error {
		return pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			r, err := scanRun(tx.QueryRow(ctx, `UPDATE agentgraph_server_runs SET status = 'interrupted', cancel_reason = $2, result = 'null',
			updated_at = now() WHERE run_id = $1 AND status = 'pending' RETURNING `+runCols, id, reason))
			if err == nil {
				out = r
				if err := appendEnd(ctx, tx, id); err != nil {
					return err
				}
				if err := b.notify(ctx, tx, id); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `UPDATE agentgraph_server_threads t SET status = 'idle', updated_at = now()
				WHERE thread_id = $1 AND status = 'busy' AND NOT `+activeRuns, r.ThreadID)
				return err
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			out, err = scanRun(tx.QueryRow(ctx, `UPDATE agentgraph_server_runs SET cancel_reason = COALESCE(cancel_reason, $2)
			WHERE run_id = $1 AND status = 'running' RETURNING `+runCols, id, reason))
			if errors.Is(err, pgx.ErrNoRows) {
				out, err = scanRun(tx.QueryRow(ctx, `SELECT `+runCols+` FROM agentgraph_server_runs WHERE run_id = $1`, id))
				if errors.Is(err, pgx.ErrNoRows) {
					return notFound("run", id)
				}
			}
			return err
		})
	})
	if err != nil && !errors.Is(err, server.ErrNotFound) {
		return out, fmt.Errorf("server/postgres: cancelling run %s: %w", id, err)
	}
	return out, err
}

// DeleteRun implements [server.Backend].
func (b *Backend) DeleteRun(ctx context.Context, id string) error {
	err := withRetry(ctx, func() error {
		return pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_runs WHERE run_id = $1 AND status NOT IN ('pending', 'running')`, id)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				var exists bool
				if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agentgraph_server_runs WHERE run_id = $1)`, id).Scan(&exists); err != nil {
					return err
				}
				if exists {
					return fmt.Errorf("run %s: %w", id, server.ErrThreadBusy)
				}
				return notFound("run", id)
			}
			if _, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_events WHERE run_id = $1`, id); err != nil {
				return err
			}
			return b.notify(ctx, tx, id)
		})
	})
	if err != nil && !errors.Is(err, server.ErrNotFound) && !errors.Is(err, server.ErrThreadBusy) {
		return fmt.Errorf("server/postgres: deleting run %s: %w", id, err)
	}
	return err
}
