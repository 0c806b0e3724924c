package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/internal/sqlitedb"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/internal/jsonb"
)

var _ server.CronBackend = (*Backend)(nil)

const cronsTable = "agentgraph_server_crons"

// cronsMigration is schema version 3: the crons. next_run_at is the
// due time a firing compares and sets; NULL once the cron fires no more.
var cronsMigration = []string{
	`CREATE TABLE ` + cronsTable + ` (
		cron_id          TEXT PRIMARY KEY NOT NULL,
		assistant_id     TEXT NOT NULL,
		graph_id         TEXT NOT NULL,
		thread_id        TEXT,
		schedule         TEXT NOT NULL,
		timezone         TEXT NOT NULL,
		end_time         INTEGER,
		next_run_at      INTEGER,
		enabled          INTEGER NOT NULL,
		on_run_completed TEXT NOT NULL,
		payload          TEXT NOT NULL CHECK (json_valid(payload)),
		metadata         TEXT NOT NULL CHECK (json_valid(metadata)),
		user_id          TEXT NOT NULL,
		created_at       INTEGER NOT NULL,
		updated_at       INTEGER NOT NULL
	)`,
	`CREATE INDEX agentgraph_server_crons_due ON ` + cronsTable + ` (next_run_at) WHERE enabled = 1 AND next_run_at IS NOT NULL`,
	`CREATE INDEX agentgraph_server_crons_thread ON ` + cronsTable + ` (thread_id) WHERE thread_id IS NOT NULL`,
}

const cronCols = `cron_id, assistant_id, graph_id, thread_id, schedule, timezone, end_time, next_run_at, enabled,
	on_run_completed, payload, metadata, user_id, created_at, updated_at`

// optNanos is a time as stored: nil (NULL) for the zero time.
func optNanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return nanos(t)
}

func scanCron(s scanner) (server.CronRecord, error) {
	vs, err := scanValues(s, 15)
	if err != nil {
		return server.CronRecord{}, err
	}
	r := &row{table: "crons"}
	c := server.CronRecord{ID: r.text(vs[0], "cron_id")}
	r.key = c.ID
	c.AssistantID = r.text(vs[1], "assistant_id")
	c.GraphID = r.text(vs[2], "graph_id")
	if vs[3] != nil {
		c.ThreadID = r.text(vs[3], "thread_id")
	}
	c.Schedule = r.text(vs[4], "schedule")
	c.Timezone = r.text(vs[5], "timezone")
	if vs[6] != nil {
		c.EndTime = r.time(vs[6], "end_time")
	}
	if vs[7] != nil {
		c.NextRunAt = r.time(vs[7], "next_run_at")
	}
	c.Enabled = r.int(vs[8], "enabled") != 0
	c.OnRunCompleted = r.text(vs[9], "on_run_completed")
	c.Payload = r.json(vs[10], "payload")
	c.Metadata = r.object(vs[11], "metadata")
	c.UserID = r.text(vs[12], "user_id")
	c.CreatedAt = r.time(vs[13], "created_at")
	c.UpdatedAt = r.time(vs[14], "updated_at")
	return c, r.err
}

// cronArgs are the arguments ?1…?15 of a cron's columns, in cronCols'
// order.
func cronArgs(c server.CronRecord) ([]any, error) {
	md, err := encode(orEmpty(c.Metadata))
	if err != nil {
		return nil, err
	}
	if len(c.Payload) > 0 && !json.Valid(c.Payload) {
		return nil, fmt.Errorf("server/sqlite: cron %s: payload is not JSON", c.ID)
	}
	var tid any
	if c.ThreadID != "" {
		tid = c.ThreadID
	}
	return []any{c.ID, c.AssistantID, c.GraphID, tid, c.Schedule, c.Timezone, optNanos(c.EndTime), optNanos(c.NextRunAt),
		c.Enabled, c.OnRunCompleted, rawOr(c.Payload, "{}"), md, c.UserID, nanos(c.CreatedAt), nanos(c.UpdatedAt)}, nil
}

// CreateCron implements [server.CronBackend].
func (b *Backend) CreateCron(ctx context.Context, c server.CronRecord) (server.CronRecord, error) {
	args, err := cronArgs(c)
	if err != nil {
		return c, err
	}
	var out server.CronRecord
	err = b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		var err error
		out, err = scanCron(tx.QueryRow(`INSERT INTO `+cronsTable+` (`+cronCols+`)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) RETURNING `+cronCols, args...))
		return err
	})
	return out, wrap(err, "creating cron %s", c.ID)
}

func readCron(tx sqlitedb.Tx, id string) (server.CronRecord, error) {
	c, err := scanCron(tx.QueryRow(`SELECT `+cronCols+` FROM `+cronsTable+` WHERE cron_id = ?1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return c, notFound("cron", id)
	}
	return c, err
}

// Cron implements [server.CronBackend].
func (b *Backend) Cron(ctx context.Context, id string) (server.CronRecord, error) {
	var c server.CronRecord
	err := b.db.Read(ctx, func(tx sqlitedb.Tx) error {
		var err error
		c, err = readCron(tx, id)
		return err
	})
	return c, wrap(err, "reading cron %s", id)
}

// SearchCrons implements [server.CronBackend]. The metadata filter is
// applied in the process, as SearchThreads' is.
func (b *Backend) SearchCrons(ctx context.Context, q server.CronQuery) ([]server.CronRecord, int, error) {
	var key func(c server.CronRecord) any
	switch q.SortBy {
	case "cron_id":
		key = func(c server.CronRecord) any { return "" }
	case "assistant_id":
		key = func(c server.CronRecord) any { return c.AssistantID }
	case "thread_id":
		key = func(c server.CronRecord) any { return c.ThreadID }
	case "updated_at":
		key = func(c server.CronRecord) any { return c.UpdatedAt }
	case "next_run_date":
		key = func(c server.CronRecord) any { return c.NextRunAt }
	case "created_at", "":
		key = func(c server.CronRecord) any { return c.CreatedAt }
	default:
		return nil, 0, fmt.Errorf("server/sqlite: cannot sort crons by %q", q.SortBy)
	}
	md, err := roundTrip(q.Metadata)
	if err != nil {
		return nil, 0, err
	}
	enabled := -1
	if q.Enabled != nil {
		enabled = 0
		if *q.Enabled {
			enabled = 1
		}
	}
	var all []server.CronRecord
	err = b.db.Read(ctx, func(tx sqlitedb.Tx) error {
		all = all[:0]
		rows, err := tx.Query(`SELECT `+cronCols+` FROM `+cronsTable+`
			WHERE (?1 = '' OR assistant_id = ?1) AND (?2 = '' OR thread_id = ?2) AND (?3 < 0 OR enabled = ?3)`,
			q.AssistantID, q.ThreadID, enabled)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c, err := scanCron(rows)
			if err != nil {
				return err
			}
			if jsonb.Contains(c.Metadata, md) {
				all = append(all, c)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, wrap(err, "searching crons")
	}
	total := len(all)
	if q.Limit == 0 {
		return nil, total, nil
	}
	slices.SortFunc(all, func(a, c server.CronRecord) int {
		var n int
		switch ka, kc := key(a), key(c); ka := ka.(type) {
		case string:
			n = strings.Compare(ka, kc.(string))
		case time.Time:
			n = ka.Compare(kc.(time.Time))
		}
		n = cmp.Or(n, strings.Compare(a.ID, c.ID))
		if q.Desc {
			return -n
		}
		return n
	})
	return page(all, q.Limit, q.Offset), total, nil
}

// UpdateCron implements [server.CronBackend].
func (b *Backend) UpdateCron(ctx context.Context, id string, apply func(*server.CronRecord) error) (server.CronRecord, error) {
	var out server.CronRecord
	var applyErr error // apply's own, returned as it is
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		c, err := readCron(tx, id)
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
		out, err = scanCron(tx.QueryRow(`UPDATE `+cronsTable+` SET assistant_id = ?2, graph_id = ?3, thread_id = ?4, schedule = ?5,
			timezone = ?6, end_time = ?7, next_run_at = ?8, enabled = ?9, on_run_completed = ?10, payload = ?11, metadata = ?12,
			user_id = ?13, updated_at = ?15 WHERE cron_id = ?1 RETURNING `+cronCols, args...))
		return err
	})
	if applyErr != nil {
		return out, applyErr
	}
	return out, wrap(err, "updating cron %s", id)
}

// DeleteCron implements [server.CronBackend].
func (b *Backend) DeleteCron(ctx context.Context, id string) error {
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		res, err := tx.Exec(`DELETE FROM `+cronsTable+` WHERE cron_id = ?1`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmp.Or(err, notFound("cron", id))
		}
		return nil
	})
	return wrap(err, "deleting cron %s", id)
}

// DueCrons implements [server.CronBackend]. It only reads: firing
// decides.
func (b *Backend) DueCrons(ctx context.Context, now time.Time, graphs []string, limit int) ([]server.CronRecord, error) {
	served := "null" // a JSON list of the graphs, or null for any
	if graphs != nil {
		b, err := json.Marshal(graphs)
		if err != nil {
			return nil, wrap(err, "reading the crons due")
		}
		served = string(b)
	}
	var out []server.CronRecord
	err := b.db.Read(ctx, func(tx sqlitedb.Tx) error {
		out = out[:0]
		rows, err := tx.Query(`SELECT `+cronCols+` FROM `+cronsTable+`
			WHERE enabled = 1 AND next_run_at IS NOT NULL AND next_run_at <= ?1
			  AND (?2 = 'null' OR graph_id IN (SELECT value FROM json_each(?2)))
			ORDER BY next_run_at, cron_id LIMIT ?3`, nanos(now), served, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c, err := scanCron(rows)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, wrap(err, "reading the crons due")
}

// FireCron implements [server.CronBackend]. The compare-and-set of the
// due time and the run's creation are one write transaction.
func (b *Backend) FireCron(ctx context.Context, id string, due, next time.Time, run *server.RunRecord, create *server.ThreadRecord) (server.RunRecord, error) {
	var out server.RunRecord
	var runErr error
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		out, runErr = server.RunRecord{}, nil
		res, err := tx.Exec(`UPDATE `+cronsTable+` SET next_run_at = ?3 WHERE cron_id = ?1 AND next_run_at = ?2`,
			id, nanos(due), optNanos(next))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmp.Or(err, fmt.Errorf("cron %s at %v: %w", id, due, server.ErrTickTaken))
		}
		if run == nil {
			return nil
		}
		err = createRun(tx, *run, create, &out)
		if errors.Is(err, server.ErrThreadBusy) || errors.Is(err, server.ErrNotFound) || errors.Is(err, server.ErrGraphMismatch) {
			// Nothing was written but the thread create (which exists
			// then): the tick is taken, without its run.
			runErr = err
			return nil
		}
		return err
	})
	if err != nil {
		return out, wrap(err, "firing cron %s", id)
	}
	return out, runErr
}
