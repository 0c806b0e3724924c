package runs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver
)

// store keeps the runs in the table retrai_runs of the database that also
// holds the checkpoints: one row per run with its status, its creation and
// update times and the whole Run as JSON.
type store struct {
	db       *sql.DB
	postgres bool
}

const runsSchema = `CREATE TABLE IF NOT EXISTS retrai_runs (
	id         TEXT PRIMARY KEY,
	status     TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	data       TEXT NOT NULL
)`

// openSQLiteStore opens the runs table in the SQLite file at path.
func openSQLiteStore(ctx context.Context, path string) (*store, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Set("_txlock", "immediate")
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	db, err := sql.Open("sqlite", "file:"+esc.Replace(path)+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // one writer; the saver has its own connections
	return newStore(ctx, db, false)
}

// openPostgresStore opens the runs table in the PostgreSQL database at url.
func openPostgresStore(ctx context.Context, url string) (*store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	return newStore(ctx, db, true)
}

func newStore(ctx context.Context, db *sql.DB, postgres bool) (*store, error) {
	if _, err := db.ExecContext(ctx, runsSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("create table retrai_runs: %w", err)
	}
	s := &store{db: db, postgres: postgres}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// migrate rewrites the records that earlier versions wrote in the current
// vocabulary (see [Run.upgrade]): a run that stopped on an error was
// recorded "failed" with an error, and is "error" now. Each row is
// rewritten only if it is still as read, so that a record another process
// updated meanwhile is left to that process; records are upgraded as they
// are read too, so one an older version writes later reads right as well.
func (s *store) migrate(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, data FROM retrai_runs WHERE status = $1`), string(StatusFailed))
	if err != nil {
		return fmt.Errorf("migrate runs: %w", err)
	}
	type row struct{ id, data string }
	var old []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.data); err != nil {
			rows.Close()
			return fmt.Errorf("migrate runs: %w", err)
		}
		old = append(old, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("migrate runs: %w", err)
	}
	for _, o := range old {
		var r Run
		if err := json.Unmarshal([]byte(o.data), &r); err != nil || !r.upgrade() {
			continue // an unreadable record is reported when it is read
		}
		data, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("migrate run %s: %w", o.id, err)
		}
		if _, err := s.db.ExecContext(ctx, s.q(`UPDATE retrai_runs SET status = $1, data = $2 WHERE id = $3 AND data = $4`),
			string(r.Status), string(data), o.id, o.data); err != nil {
			return fmt.Errorf("migrate run %s: %w", o.id, err)
		}
	}
	return nil
}

// q adapts a query written with $1, $2, … placeholders to the database:
// SQLite takes them as ?1, ?2, ….
func (s *store) q(query string) string {
	if s.postgres {
		return query
	}
	return strings.ReplaceAll(query, "$", "?")
}

func (s *store) close() error { return s.db.Close() }

// put inserts or replaces run.
func (s *store) put(ctx context.Context, run Run) error {
	data, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("encode run %s: %w", run.ID, err)
	}
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO retrai_runs (id, status, created_at, updated_at, data)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at, data = excluded.data`),
		run.ID, string(run.Status), run.CreatedAt.UnixNano(), run.UpdatedAt.UnixNano(), string(data))
	if err != nil {
		return fmt.Errorf("save run %s: %w", run.ID, err)
	}
	return nil
}

// get returns the run id, or an error wrapping ErrNotFound.
func (s *store) get(ctx context.Context, id string) (Run, error) {
	var data string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT data FROM retrai_runs WHERE id = $1`), id).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Run{}, fmt.Errorf("load run %s: %w", id, err)
	}
	return decodeRun(data)
}

// list returns every run, newest first.
func (s *store) list(ctx context.Context) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT data FROM retrai_runs ORDER BY created_at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var data string
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		r, err := decodeRun(data)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// decodeRun decodes a record, in the current vocabulary.
func decodeRun(data string) (Run, error) {
	var r Run
	if err := json.Unmarshal([]byte(data), &r); err != nil {
		return Run{}, fmt.Errorf("decode run: %w", err)
	}
	r.upgrade()
	return r, nil
}

// now returns the current time without its monotonic reading, so that
// runs compare equal after a round trip through the store.
func now() time.Time { return time.Now().Round(0).UTC() }
