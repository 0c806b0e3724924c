package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentgraph/agentgraph/internal/pgdb"
	"github.com/agentgraph/agentgraph/server"
)

const assistantCols = `assistant_id, graph_id, config, context, metadata, name, description, version, created_at, updated_at`

// versionCols are the columns of a version read as an assistant's: a
// version was last updated when it was made.
const versionCols = `assistant_id, graph_id, config, context, metadata, name, description, version, created_at, created_at`

func scanAssistant(row pgx.Row) (server.AssistantRecord, error) {
	var a server.AssistantRecord
	var cfg, cx, md []byte
	if err := row.Scan(&a.ID, &a.GraphID, &cfg, &cx, &md, &a.Name, &a.Description, &a.Version, &a.CreatedAt, &a.UpdatedAt); err != nil {
		return a, err
	}
	if err := json.Unmarshal(cfg, &a.Config); err != nil {
		return a, fmt.Errorf("assistant %s: config: %w", a.ID, err)
	}
	if err := json.Unmarshal(md, &a.Metadata); err != nil {
		return a, fmt.Errorf("assistant %s: metadata: %w", a.ID, err)
	}
	a.Config, a.Metadata, a.Context = orEmpty(a.Config), orEmpty(a.Metadata), cx
	return a, nil
}

// assistantArgs encodes a's JSON columns: config, context, metadata.
func assistantArgs(a server.AssistantRecord) (cfg, cx, md []byte, err error) {
	if cfg, err = jsonArg(orEmpty(a.Config)); err != nil {
		return nil, nil, nil, err
	}
	if md, err = jsonArg(orEmpty(a.Metadata)); err != nil {
		return nil, nil, nil, err
	}
	cx = rawOr(a.Context, "{}")
	if !json.Valid(cx) {
		return nil, nil, nil, fmt.Errorf("server/postgres: assistant %s: context is not JSON", a.ID)
	}
	return cfg, cx, md, nil
}

// insertVersion records the assistant's row as its version.
const insertVersion = `INSERT INTO agentgraph_server_assistant_versions
	(assistant_id, version, graph_id, config, context, metadata, name, description, created_at)
	SELECT assistant_id, version, graph_id, config, context, metadata, name, description, updated_at
	FROM agentgraph_server_assistants WHERE assistant_id = $1`

// CreateAssistant implements [server.Backend].
func (b *Backend) CreateAssistant(ctx context.Context, a server.AssistantRecord, ifExists string) (server.AssistantRecord, error) {
	cfg, cx, md, err := assistantArgs(a)
	if err != nil {
		return a, err
	}
	var out server.AssistantRecord
	err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanAssistant(tx.QueryRow(ctx, `INSERT INTO agentgraph_server_assistants (`+assistantCols+`, last_version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $8, 1) ON CONFLICT (assistant_id) DO NOTHING RETURNING `+assistantCols,
			a.ID, a.GraphID, cfg, cx, md, pgdb.Text(a.Name), textSafePtr(a.Description), a.CreatedAt))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, insertVersion, a.ID)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		if ifExists == "do_nothing" {
			return b.Assistant(ctx, a.ID)
		}
		return a, fmt.Errorf("assistant %s: %w", a.ID, server.ErrExists)
	}
	if err != nil {
		return a, fmt.Errorf("server/postgres: creating assistant %s: %w", a.ID, err)
	}
	return out, nil
}

// Assistant implements [server.Backend].
func (b *Backend) Assistant(ctx context.Context, id string) (server.AssistantRecord, error) {
	a, err := scanAssistant(b.pool.QueryRow(ctx, `SELECT `+assistantCols+` FROM agentgraph_server_assistants WHERE assistant_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, notFound("assistant", id)
	}
	if err != nil {
		return a, fmt.Errorf("server/postgres: reading assistant %s: %w", id, err)
	}
	return a, nil
}

// queryAssistants returns the rows of query, scanned.
func (b *Backend) queryAssistants(ctx context.Context, query string, args ...any) ([]server.AssistantRecord, error) {
	rows, err := b.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []server.AssistantRecord{}
	for rows.Next() {
		a, err := scanAssistant(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// SearchAssistants implements [server.Backend]. The name matches as a
// substring of the lower-cased name, with no pattern characters.
func (b *Backend) SearchAssistants(ctx context.Context, q server.AssistantQuery) ([]server.AssistantRecord, int, error) {
	md, err := jsonArg(orEmpty(q.Metadata))
	if err != nil {
		return nil, 0, err
	}
	where := ` FROM agentgraph_server_assistants WHERE ($1 = '' OR graph_id = $1)
		AND ($2 = '' OR strpos(lower(name), lower($2)) > 0) AND metadata @> $3::jsonb`
	var total int
	if err := b.pool.QueryRow(ctx, `SELECT count(*)`+where, q.GraphID, q.Name, md).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("server/postgres: counting assistants: %w", err)
	}
	if q.Limit == 0 {
		return nil, total, nil
	}
	out, err := b.queryAssistants(ctx, `SELECT `+assistantCols+where+` ORDER BY created_at DESC, assistant_id LIMIT $4 OFFSET $5`,
		q.GraphID, q.Name, md, q.Limit, max(q.Offset, 0))
	if err != nil {
		return nil, 0, fmt.Errorf("server/postgres: searching assistants: %w", err)
	}
	return out, total, nil
}

// PatchAssistant implements [server.Backend]. The next version is
// numbered from the assistant's row, which the update locks: a second
// patch at once waits and numbers from the first's row.
func (b *Backend) PatchAssistant(ctx context.Context, id string, p server.AssistantPatch) (server.AssistantRecord, error) {
	patch := server.AssistantRecord{ID: id, Config: p.Config, Context: p.Context, Metadata: p.Metadata}
	cfg, cx, md, err := assistantArgs(patch)
	if err != nil {
		return patch, err
	}
	if p.Config == nil {
		cfg = nil
	}
	if len(p.Context) == 0 {
		cx = nil
	}
	var out server.AssistantRecord
	err = withRetry(ctx, func() error {
		return pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			var err error
			out, err = scanAssistant(tx.QueryRow(ctx, `UPDATE agentgraph_server_assistants SET
				graph_id = COALESCE(NULLIF($2, ''), graph_id), config = COALESCE($3::jsonb, config),
				context = COALESCE($4::jsonb, context), metadata = metadata || $5::jsonb,
				name = COALESCE(NULLIF($6, ''), name), description = CASE WHEN $7::boolean THEN $8 ELSE description END,
				version = last_version + 1, last_version = last_version + 1,
				updated_at = now()
				WHERE assistant_id = $1 RETURNING `+assistantCols,
				id, p.GraphID, cfg, cx, md, pgdb.Text(p.Name), p.Description != nil, textSafePtr(p.Description)))
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, insertVersion, id)
			return err
		})
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return out, notFound("assistant", id)
	}
	if err != nil {
		return out, fmt.Errorf("server/postgres: patching assistant %s: %w", id, err)
	}
	return out, nil
}

// DeleteAssistant implements [server.Backend].
func (b *Backend) DeleteAssistant(ctx context.Context, id string) error {
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_assistants WHERE assistant_id = $1`, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound("assistant", id)
		}
		_, err = tx.Exec(ctx, `DELETE FROM agentgraph_server_assistant_versions WHERE assistant_id = $1`, id)
		return err
	})
	if err != nil && !errors.Is(err, server.ErrNotFound) {
		return fmt.Errorf("server/postgres: deleting assistant %s: %w", id, err)
	}
	return err
}

// AssistantVersions implements [server.Backend].
func (b *Backend) AssistantVersions(ctx context.Context, id string, metadata map[string]any, limit, offset int) ([]server.AssistantRecord, int, error) {
	if _, err := b.Assistant(ctx, id); err != nil {
		return nil, 0, err
	}
	md, err := jsonArg(orEmpty(metadata))
	if err != nil {
		return nil, 0, err
	}
	where := ` FROM agentgraph_server_assistant_versions WHERE assistant_id = $1 AND metadata @> $2::jsonb`
	var total int
	if err := b.pool.QueryRow(ctx, `SELECT count(*)`+where, id, md).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("server/postgres: counting the versions of assistant %s: %w", id, err)
	}
	out, err := b.queryAssistants(ctx, `SELECT `+versionCols+where+` ORDER BY version DESC LIMIT $3 OFFSET $4`,
		id, md, max(limit, 0), max(offset, 0))
	if err != nil {
		return nil, 0, fmt.Errorf("server/postgres: listing the versions of assistant %s: %w", id, err)
	}
	return out, total, nil
}

// SetLatestAssistantVersion implements [server.Backend].
func (b *Backend) SetLatestAssistantVersion(ctx context.Context, id string, version int) (server.AssistantRecord, error) {
	a, err := scanAssistant(b.pool.QueryRow(ctx, `UPDATE agentgraph_server_assistants a SET
		graph_id = v.graph_id, config = v.config, context = v.context, metadata = v.metadata, name = v.name,
		description = v.description, version = v.version, updated_at = now()
		FROM agentgraph_server_assistant_versions v WHERE a.assistant_id = $1 AND v.assistant_id = $1 AND v.version = $2
		RETURNING a.assistant_id, a.graph_id, a.config, a.context, a.metadata, a.name, a.description, a.version, a.created_at, a.updated_at`,
		id, version))
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := b.Assistant(ctx, id); err != nil {
			return a, err
		}
		return a, fmt.Errorf("assistant %s version %d: %w", id, version, server.ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("server/postgres: setting the latest version of assistant %s: %w", id, err)
	}
	return a, nil
}

// textSafePtr is [pgdb.Text] of *s, or nil.
func textSafePtr(s *string) *string {
	if s == nil {
		return nil
	}
	t := pgdb.Text(*s)
	return &t
}
