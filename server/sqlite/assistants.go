package sqlite

import (
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

// Table names of the assistants.
const (
	assistantsTable = "agentgraph_server_assistants"
	versionsTable   = "agentgraph_server_assistant_versions"
)

const assistantCols = `assistant_id, graph_id, config, context, metadata, name, description, version, created_at, updated_at`

// versionCols are the columns of a version read as an assistant's: a
// version was last updated when it was made.
const versionCols = `assistant_id, graph_id, config, context, metadata, name, description, version, created_at, created_at`

func scanAssistant(s scanner, table string) (server.AssistantRecord, error) {
	vs, err := scanValues(s, 10)
	if err != nil {
		return server.AssistantRecord{}, err
	}
	r := &row{table: table}
	a := server.AssistantRecord{ID: r.text(vs[0], "assistant_id")}
	r.key = a.ID
	a.GraphID = r.text(vs[1], "graph_id")
	a.Config = r.object(vs[2], "config")
	a.Context = r.json(vs[3], "context")
	a.Metadata = r.object(vs[4], "metadata")
	a.Name = r.text(vs[5], "name")
	a.Description = r.optText(vs[6], "description")
	a.Version = int(r.int(vs[7], "version"))
	a.CreatedAt = r.time(vs[8], "created_at")
	a.UpdatedAt = r.time(vs[9], "updated_at")
	return a, r.err
}

// readAssistant reads the assistant with the given id.
func readAssistant(tx sqlitedb.Tx, id string) (server.AssistantRecord, error) {
	a, err := scanAssistant(tx.QueryRow(`SELECT `+assistantCols+` FROM `+assistantsTable+` WHERE assistant_id = ?1`, id), "assistants")
	if errors.Is(err, sql.ErrNoRows) {
		return a, notFound("assistant", id)
	}
	return a, err
}

// writeAssistant stores a as the assistant's current settings and as its
// version a.Version, made at a.UpdatedAt.
func writeAssistant(tx sqlitedb.Tx, a server.AssistantRecord, lastVersion int) error {
	cfg, err := encode(orEmpty(a.Config))
	if err != nil {
		return err
	}
	md, err := encode(orEmpty(a.Metadata))
	if err != nil {
		return err
	}
	cx := rawOr(a.Context, "{}")
	if !json.Valid([]byte(cx)) {
		return fmt.Errorf("assistant %s: context is not JSON", a.ID)
	}
	if _, err := tx.Exec(`INSERT INTO `+assistantsTable+` (`+assistantCols+`, last_version)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) ON CONFLICT (assistant_id) DO UPDATE SET
		graph_id = excluded.graph_id, config = excluded.config, context = excluded.context, metadata = excluded.metadata,
		name = excluded.name, description = excluded.description, version = excluded.version,
		last_version = excluded.last_version, updated_at = excluded.updated_at`,
		a.ID, a.GraphID, cfg, cx, md, a.Name, a.Description, a.Version, nanos(a.CreatedAt), nanos(a.UpdatedAt), lastVersion); err != nil {
		return err
	}
	_, err = tx.Exec(`INSERT INTO `+versionsTable+` (assistant_id, version, graph_id, config, context, metadata, name, description, created_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (assistant_id, version) DO NOTHING`,
		a.ID, a.Version, a.GraphID, cfg, cx, md, a.Name, a.Description, nanos(a.UpdatedAt))
	return err
}

// CreateAssistant implements [server.Backend].
func (b *Backend) CreateAssistant(ctx context.Context, a server.AssistantRecord, ifExists string) (server.AssistantRecord, error) {
	var out server.AssistantRecord
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		old, err := readAssistant(tx, a.ID)
		switch {
		case err == nil && ifExists == "do_nothing":
			out = old
			return nil
		case err == nil:
			return fmt.Errorf("assistant %s: %w", a.ID, server.ErrExists)
		case !errors.Is(err, server.ErrNotFound):
			return err
		}
		a.Version, a.UpdatedAt = 1, a.CreatedAt
		if err := writeAssistant(tx, a, 1); err != nil {
			return err
		}
		out, err = readAssistant(tx, a.ID)
		return err
	})
	return out, wrap(err, "creating assistant %s", a.ID)
}

// Assistant implements [server.Backend].
func (b *Backend) Assistant(ctx context.Context, id string) (server.AssistantRecord, error) {
	var a server.AssistantRecord
	err := b.db.Read(ctx, func(tx sqlitedb.Tx) error {
		var err error
		a, err = readAssistant(tx, id)
		return err
	})
	return a, wrap(err, "reading assistant %s", id)
}

// scanAssistants reads the rows of query, keeping those keep accepts.
func scanAssistants(tx sqlitedb.Tx, table string, keep func(server.AssistantRecord) bool, query string, args ...any) ([]server.AssistantRecord, error) {
	rows, err := tx.Query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []server.AssistantRecord{}
	for rows.Next() {
		a, err := scanAssistant(rows, table)
		if err != nil {
			return nil, err
		}
		if keep(a) {
			out = append(out, a)
		}
	}
	return out, rows.Err()
}

// page returns all[offset:offset+limit], within bounds.
func page[T any](all []T, limit, offset int) []T {
	lo := min(max(offset, 0), len(all))
	return all[lo:min(lo+max(limit, 0), len(all))]
}

// SearchAssistants implements [server.Backend]. The name and metadata
// filters are applied in the process: the name as a substring of the
// lower-cased name, as Go lower-cases it.
func (b *Backend) SearchAssistants(ctx context.Context, q server.AssistantQuery) ([]server.AssistantRecord, int, error) {
	md, err := roundTrip(q.Metadata)
	if err != nil {
		return nil, 0, err
	}
	name := strings.ToLower(q.Name)
	keep := func(a server.AssistantRecord) bool {
		return strings.Contains(strings.ToLower(a.Name), name) && jsonb.Contains(a.Metadata, md)
	}
	var all []server.AssistantRecord
	err = b.db.Read(ctx, func(tx sqlitedb.Tx) error {
		var err error
		all, err = scanAssistants(tx, "assistants", keep, `SELECT `+assistantCols+` FROM `+assistantsTable+`
			WHERE (?1 = '' OR graph_id = ?1) ORDER BY created_at DESC, assistant_id`, q.GraphID)
		return err
	})
	if err != nil {
		return nil, 0, wrap(err, "searching assistants")
	}
	if q.Limit == 0 {
		return nil, len(all), nil
	}
	return page(all, q.Limit, q.Offset), len(all), nil
}

// PatchAssistant implements [server.Backend]. SQLite runs one write at
// a time, across processes: the next version is numbered from the
// highest one under that write.
func (b *Backend) PatchAssistant(ctx context.Context, id string, p server.AssistantPatch) (server.AssistantRecord, error) {
	var out server.AssistantRecord
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		a, err := readAssistant(tx, id)
		if err != nil {
			return err
		}
		var last int
		if err := tx.QueryRow(`SELECT last_version FROM `+assistantsTable+` WHERE assistant_id = ?1`, id).Scan(&last); err != nil {
			return err
		}
		if p.GraphID != "" {
			a.GraphID = p.GraphID
		}
		if p.Config != nil {
			a.Config = p.Config
		}
		if len(p.Context) > 0 {
			a.Context = p.Context
		}
		maps.Copy(a.Metadata, p.Metadata)
		if p.Name != "" {
			a.Name = p.Name
		}
		if p.Description != nil {
			a.Description = p.Description
		}
		last++
		a.Version, a.UpdatedAt = last, time.Now()
		if err := writeAssistant(tx, a, last); err != nil {
			return err
		}
		out, err = readAssistant(tx, id)
		return err
	})
	return out, wrap(err, "patching assistant %s", id)
}

// DeleteAssistant implements [server.Backend].
func (b *Backend) DeleteAssistant(ctx context.Context, id string) error {
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		res, err := tx.Exec(`DELETE FROM `+assistantsTable+` WHERE assistant_id = ?1`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmpErr(err, notFound("assistant", id))
		}
		_, err = tx.Exec(`DELETE FROM `+versionsTable+` WHERE assistant_id = ?1`, id)
		return err
	})
	return wrap(err, "deleting assistant %s", id)
}

// cmpErr returns err, or def when err is nil.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

// AssistantVersions implements [server.Backend].
func (b *Backend) AssistantVersions(ctx context.Context, id string, metadata map[string]any, limit, offset int) ([]server.AssistantRecord, int, error) {
	md, err := roundTrip(metadata)
	if err != nil {
		return nil, 0, err
	}
	var all []server.AssistantRecord
	err = b.db.Read(ctx, func(tx sqlitedb.Tx) error {
		if _, err := readAssistant(tx, id); err != nil {
			return err
		}
		var err error
		all, err = scanAssistants(tx, "assistant_versions", func(a server.AssistantRecord) bool { return jsonb.Contains(a.Metadata, md) },
			`SELECT `+versionCols+` FROM `+versionsTable+` WHERE assistant_id = ?1 ORDER BY version DESC`, id)
		return err
	})
	if err != nil {
		return nil, 0, wrap(err, "listing the versions of assistant %s", id)
	}
	return slices.Clip(page(all, limit, offset)), len(all), nil
}

// SetLatestAssistantVersion implements [server.Backend].
func (b *Backend) SetLatestAssistantVersion(ctx context.Context, id string, version int) (server.AssistantRecord, error) {
	var out server.AssistantRecord
	err := b.db.Write(ctx, func(tx sqlitedb.Tx) error {
		if _, err := readAssistant(tx, id); err != nil {
			return err
		}
		res, err := tx.Exec(`UPDATE `+assistantsTable+` SET (graph_id, config, context, metadata, name, description, version, updated_at) =
			(SELECT graph_id, config, context, metadata, name, description, version, ?3 FROM `+versionsTable+`
			WHERE assistant_id = ?1 AND version = ?2)
			WHERE assistant_id = ?1 AND EXISTS (SELECT 1 FROM `+versionsTable+` WHERE assistant_id = ?1 AND version = ?2)`,
			id, version, nanos(time.Now()))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmpErr(err, fmt.Errorf("assistant %s version %d: %w", id, version, server.ErrNotFound))
		}
		out, err = readAssistant(tx, id)
		return err
	})
	return out, wrap(err, "setting the latest version of assistant %s", id)
}
