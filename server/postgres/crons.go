package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentgraph/agentgraph/server"
)

var _ server.CronBackend = (*Backend)(nil)

const cronsTable = "agentgraph_server_crons"

// cronsMigration is schema version 3: the crons. next_run_at is the
// due time a firing compares and sets; NULL once the cron fires no more.
var cronsMigration = []string{
	`CREATE TABLE ` + cronsTable + ` (
		cron_id          text COLLATE "C" PRIMARY KEY,
		assistant_id     text NOT NULL,
		graph_id         text NOT NULL,
		thread_id        text COLLATE "C",
		schedule         text NOT NULL,
		timezone         text NOT NULL,
		end_time         timestamptz,
		next_run_at      timestamptz,
		enabled          boolean NOT NULL,
		on_run_completed text NOT NULL,
		payload          text NOT NULL,
		metadata         jsonb NOT NULL,
		user_id          text NOT NULL,
		created_at       timestamptz NOT NULL,
		updated_at       timestamptz NOT NULL
	)`,
	`CREATE INDEX agentgraph_server_crons_due ON ` + cronsTable + ` (next_run_at) WHERE enabled AND next_run_at IS NOT NULL`,
	`CREATE INDEX agentgraph_server_crons_thread ON ` + cronsTable + ` (thread_id) WHERE thread_id IS NOT NULL`,
}

const cronCols = `cron_id, assistant_id, graph_id, thread_id, schedule, timezone, end_time, next_run_at, enabled,
	on_run_completed, payload, metadata, user_id, created_at, updated_at`

// optTime is a time as stored: nil (NULL) for the zero time.
func optTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func scanCron(row pgx.Row) (server.CronRecord, error) {
	var c server.CronRecord
	var tid *string
	var end, next *time.Time
	var payload string
	var md []byte
	if err := row.Scan(&c.ID, &c.AssistantID, &c.GraphID, &tid, &c.Schedule, &c.Timezone, &end, &next, &c.Enabled,
		&c.OnRunCompleted, &payload, &md, &c.UserID, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return c, err
	}
	if tid != nil {
		c.ThreadID = *tid
	}
	if end != nil {
		c.EndTime = end.UTC()
	}
	if next != nil {
		c.NextRunAt = next.UTC()
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	c.Payload = json.RawMessage(payload)
	if err := json.Unmarshal(md, &c.Metadata); err != nil {
		return c, fmt.Errorf("cron %s: metadata: %w", c.ID, err)
	}
	if c.Metadata == nil {
		c.Metadata = map[string]any{}
	}
	return c, nil
}

// cronArgs are the arguments $1…$15 of a cron's columns, in cronCols'
// order.
func cronArgs(c server.CronRecord) ([]any, error) {
	md, err := jsonArg(orEmpty(c.Metadata))
	if err != nil {
		return nil, err
	}
	if len(c.Payload) > 0 && !json.Valid(c.Payload) {
		return nil, fmt.Errorf("server/postgres: cron %s: payload is not JSON", c.ID)
	}
	var tid any
	if c.ThreadID != "" {
		tid = c.ThreadID
	}
	payload := string(c.Payload)
	if payload == "" {
		payload = "{}"
	}
	return []any{c.ID, c.AssistantID, c.GraphID, tid, c.Schedule, c.Timezone, optTime(c.EndTime), optTime(c.NextRunAt),
		c.Enabled, c.OnRunCompleted, payload, md, c.UserID, c.CreatedAt, c.UpdatedAt}, nil
}

// CreateCron implements [server.CronBackend].
func (b *Backend) CreateCron(ctx context.Context, c server.CronRecord) (server.CronRecord, error) {
	args, err := cronArgs(c)
	if err != nil {
		return c, err
	}
	out, err := scanCron(b.pool.QueryRow(ctx, `INSERT INTO `+cronsTable+` (`+cronCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING `+cronCols, args...))
	if err != nil {
		return c, fmt.Errorf("server/postgres: creating cron %s: %w", c.ID, err)
	}
	return out, nil
}

// Cron implements [server.CronBackend].
func (b *Backend) Cron(ctx context.Context, id string) (server.CronRecord, error) {
	c, err := scanCron(b.pool.QueryRow(ctx, `SELECT `+cronCols+` FROM `+cronsTable+` WHERE cron_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, notFound("cron", id)
	}
	if err != nil {
		return c, fmt.Errorf("server/postgres: reading cron %s: %w", id, err)
	}
	return c, nil
}

// cronOrder are the ORDER BY keys of SearchCrons' sorts: a missing thread
// or next run sorts as the empty or earliest one, as in server/sqlite.
var cronOrder = map[string]string{
	"cron_id":       "cron_id",
	"assistant_id":  "assistant_id",
	"thread_id":     "COALESCE(thread_id, '')",
	"created_at":    "created_at",
	"updated_at":    "updated_at",
	"next_run_date": "COALESCE(next_run_at, '-infinity')",
	"":              "created_at",
}

// SearchCrons implements [server.CronBackend].
func (b *Backend) SearchCrons(ctx context.Context, q server.CronQuery) ([]server.CronRecord, int, error) {
	order, ok := cronOrder[q.SortBy]
	if !ok {
		return nil, 0, fmt.Errorf("server/postgres: cannot sort crons by %q", q.SortBy)
	}
	md, err := jsonArg(orEmpty(q.Metadata))
	if err != nil {
		return nil, 0, err
	}
	const where = ` WHERE ($1 = '' OR assistant_id = $1) AND ($2 = '' OR thread_id = $2) AND ($3::boolean IS NULL OR enabled = $3)
		AND metadata @> $4::jsonb`
	var total int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM `+cronsTable+where, q.AssistantID, q.ThreadID, q.Enabled, md).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("server/postgres: counting crons: %w", err)
	}
	if q.Limit == 0 {
		return nil, total, nil
	}
	dir := " ASC"
	if q.Desc {
		dir = " DESC"
	}
	limit := any(q.Limit)
	if q.Limit < 0 {
		limit = nil
	}
	rows, err := b.pool.Query(ctx, `SELECT `+cronCols+` FROM `+cronsTable+where+`
		ORDER BY `+order+dir+`, cron_id`+dir+` LIMIT $5 OFFSET $6`, q.AssistantID, q.ThreadID, q.Enabled, md, limit, max(q.Offset, 0))
	if err != nil {
		return nil, 0, fmt.Errorf("server/postgres: searching crons: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.CronRecord, error) { return scanCron(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("server/postgres: searching crons: %w", err)
	}
	return out, total, nil
}

// UpdateCron implements [server.CronBackend]: the cron's row is locked
// from its read to its write.
func (b *Backend) UpdateCron(ctx context.Context, id string, apply func(*server.CronRecord) error) (server.CronRecord, error) {
	var out server.CronRecord
	var applyErr error // apply's own, returned as it is
	err := withRetry(ctx, func() error {
		return pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			c, err := scanCron(tx.QueryRow(ctx, `SELECT `+cronCols+` FROM `+cronsTable+` WHERE cron_id = $1 FOR UPDATE`, id))
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound("cron", id)
			}
			if err != nil {
				return err
			}
			if applyErr = apply(&c); applyErr != nil {
				return applyErr
			}
			c.ID = id
			args, err := cronArgs(c)
			if err != nil {
				return err
			}
			args = append(args[:13:13], args[14]) // all but created_at
			out, err = scanCron(tx.QueryRow(ctx, `UPDATE `+cronsTable+` SET assistant_id = $2, graph_id = $3, thread_id = $4,
				schedule = $5, timezone = $6, end_time = $7, next_run_at = $8, enabled = $9, on_run_completed = $10, payload = $11,
				metadata = $12, user_id = $13, updated_at = $14 WHERE cron_id = $1 RETURNING `+cronCols, args...))
			return err
		})
	})
	switch {
	case applyErr != nil:
		return out, applyErr
	case err != nil && !errors.Is(err, server.ErrNotFound):
		return out, fmt.Errorf("server/postgres: updating cron %s: %w", id, err)
	}
	return out, err
}

// DeleteCron implements [server.CronBackend].
func (b *Backend) DeleteCron(ctx context.Context, id string) error {
	tag, err := b.pool.Exec(ctx, `DELETE FROM `+cronsTable+` WHERE cron_id = $1`, id)
	if err != nil {
		return fmt.Errorf("server/postgres: deleting cron %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("cron", id)
	}
	return nil
}

// DueCrons implements [server.CronBackend]. It only reads: firing
// decides.
func (b *Backend) DueCrons(ctx context.Context, now time.Time, graphs []string, limit int) ([]server.CronRecord, error) {
	rows, err := b.pool.Query(ctx, `SELECT `+cronCols+` FROM `+cronsTable+`
		WHERE enabled AND next_run_at IS NOT NULL AND next_run_at <= $1 AND ($2::text[] IS NULL OR graph_id = ANY($2))
		ORDER BY next_run_at, cron_id LIMIT $3`, now, graphs, limit)
	if err != nil {
		return nil, fmt.Errorf("server/postgres: reading the crons due: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.CronRecord, error) { return scanCron(r) })
	if err != nil {
		return nil, fmt.Errorf("server/postgres: reading the crons due: %w", err)
	}
	return out, nil
}

// FireCron implements [server.CronBackend]. The compare-and-set of the
// due time runs first in the transaction that creates the run; when the
// run is refused (which rolls that back), a transaction of its own takes
// the tick without its run — unless another process took it meanwhile.
func (b *Backend) FireCron(ctx context.Context, id string, due, next time.Time, run *server.RunRecord, create *server.ThreadRecord) (server.RunRecord, error) {
	take := func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE `+cronsTable+` SET next_run_at = $3 WHERE cron_id = $1 AND next_run_at = $2`, id, due, optTime(next))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("cron %s at %v: %w", id, due, server.ErrTickTaken)
		}
		return nil
	}
	takeAlone := func() error {
		err := withRetry(ctx, func() error { return pgx.BeginFunc(ctx, b.pool, take) })
		if err != nil && !errors.Is(err, server.ErrTickTaken) {
			return fmt.Errorf("server/postgres: firing cron %s: %w", id, err)
		}
		return err
	}
	if run == nil {
		return server.RunRecord{}, takeAlone()
	}
	out, err := b.createRun(ctx, *run, create, take)
	switch {
	case err == nil, errors.Is(err, server.ErrTickTaken):
		return out, err
	case errors.Is(err, server.ErrThreadBusy), errors.Is(err, server.ErrNotFound), errors.Is(err, server.ErrGraphMismatch):
		if terr := takeAlone(); terr != nil {
			return server.RunRecord{}, terr
		}
		return server.RunRecord{}, err
	}
	return out, fmt.Errorf("server/postgres: firing cron %s: %w", id, err)
}
