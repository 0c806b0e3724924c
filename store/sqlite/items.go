package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/internal/sqlitedb"
	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/internal/rank"
	"github.com/agentgraph/agentgraph/store/internal/vector"
)

const (
	itemColumns = `namespace, key, value, created_at, updated_at, expires_at, ttl_ns, value_kept`
	liveAt      = `(expires_at IS NULL OR expires_at > ?)`

	selectItem = `SELECT ` + itemColumns + ` FROM agentgraph_store_items
WHERE namespace = ?1 AND key = ?2 AND (expires_at IS NULL OR expires_at > ?3)`

	// upsertItem keeps created_at when it replaces a live item; an
	// expired item it replaces counts as absent.
	upsertItem = `INSERT INTO agentgraph_store_items (` + itemColumns + `)
VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7)
ON CONFLICT (namespace, key) DO UPDATE SET
	value = excluded.value,
	value_kept = excluded.value_kept,
	created_at = CASE
		WHEN agentgraph_store_items.expires_at IS NOT NULL AND agentgraph_store_items.expires_at <= excluded.updated_at
		THEN excluded.created_at
		ELSE agentgraph_store_items.created_at
	END,
	updated_at = excluded.updated_at,
	expires_at = excluded.expires_at,
	ttl_ns = excluded.ttl_ns`

	deleteItem = `DELETE FROM agentgraph_store_items WHERE namespace = ?1 AND key = ?2`

	refreshItem = `UPDATE agentgraph_store_items SET expires_at = ?3 + ttl_ns
WHERE namespace = ?1 AND key = ?2 AND ttl_ns IS NOT NULL AND expires_at > ?3`

	sweepItems = `DELETE FROM agentgraph_store_items WHERE expires_at IS NOT NULL AND expires_at <= ?1`

	// insertVector follows upsertItem, whose trigger has deleted the
	// item's old vectors.
	insertVector = `INSERT INTO agentgraph_store_vectors (namespace, key, field, vector) VALUES (?1, ?2, ?3, ?4)`
)

var (
	writeQueries = []string{upsertItem, deleteItem, refreshItem, sweepItems, insertVector}
	readQueries  = []string{selectItem}
)

// row is an item as read from the table.
type row struct {
	namespace string // labels joined with "."
	key       string
	raw       string
	kept      bool           // raw is the text of WithJSON
	value     map[string]any // raw decoded, if done
	created   time.Time
	updated   time.Time
	expires   time.Time
	ttl       time.Duration
}

func scanRow(sc interface{ Scan(...any) error }) (*row, error) {
	var r row
	var created, updated int64
	var expires, ttl sql.NullInt64
	if err := sc.Scan(&r.namespace, &r.key, &r.raw, &created, &updated, &expires, &ttl, &r.kept); err != nil {
		return nil, err
	}
	r.created = time.Unix(0, created).UTC()
	r.updated = time.Unix(0, updated).UTC()
	if expires.Valid {
		r.expires = time.Unix(0, expires.Int64).UTC()
	}
	if ttl.Valid {
		r.ttl = time.Duration(ttl.Int64)
	}
	return &r, nil
}

func (r *row) decode() (map[string]any, error) {
	if r.value == nil {
		v, err := store.UnmarshalValue([]byte(r.raw))
		if err != nil {
			return nil, fmt.Errorf("item %q in %s: %w", r.key, r.namespace, err)
		}
		r.value = v
	}
	return r.value, nil
}

func (r *row) item() (store.Item, error) {
	v, err := r.decode()
	if err != nil {
		return store.Item{}, err
	}
	it := store.Item{
		Namespace: strings.Split(r.namespace, "."),
		Key:       r.key,
		Value:     v,
		CreatedAt: r.created,
		UpdatedAt: r.updated,
		ExpiresAt: r.expires,
	}
	if r.kept {
		it.JSON = []byte(r.raw)
	}
	return it, nil
}

// Get implements [store.Store].
func (s *Store) Get(ctx context.Context, namespace []string, key string, opts ...store.GetOption) (*store.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store/sqlite: get: %w", err)
	}
	if err := store.ValidateNamespace(namespace); err != nil {
		return nil, fmt.Errorf("store/sqlite: get: %w", err)
	}
	cfg := store.NewGetConfig(opts...)
	ns := strings.Join(namespace, ".")
	now := s.now()
	var r *row
	err := sqlitedb.Retry(ctx, func() error {
		var err error
		r, err = scanRow(s.db.RS[selectItem].QueryRowContext(ctx, ns, key, now.UnixNano()))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err == nil && cfg.RefreshTTL {
		err = s.refresh(ctx, now, []*row{r})
	}
	var it store.Item
	if err == nil {
		it, err = r.item()
	}
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: get %q from %s: %w", key, store.FormatNamespace(namespace), err)
	}
	return &it, nil
}

// refresh extends the TTLs of the rows that have one to now plus their
// TTL, in one transaction.
func (s *Store) refresh(ctx context.Context, now time.Time, rows []*row) error {
	var todo []*row
	for _, r := range rows {
		if r.ttl > 0 {
			todo = append(todo, r)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	err := s.db.Write(ctx, func(tx sqlitedb.Tx) error {
		for _, r := range todo {
			if _, err := tx.Exec(refreshItem, r.namespace, r.key, now.UnixNano()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("refresh TTL: %w", err)
	}
	for _, r := range todo {
		r.expires = now.Add(r.ttl)
	}
	return nil
}

// Put implements [store.Store].
func (s *Store) Put(ctx context.Context, namespace []string, key string, value map[string]any, opts ...store.PutOption) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store/sqlite: put: %w", err)
	}
	if err := store.ValidateNamespace(namespace); err != nil {
		return fmt.Errorf("store/sqlite: put: %w", err)
	}
	cfg, err := store.NewPutConfig(opts...)
	if err != nil {
		return fmt.Errorf("store/sqlite: put: %w", err)
	}
	raw, decoded, err := cfg.Encode(value)
	if err != nil {
		return fmt.Errorf("store/sqlite: put %q in %s: %w", key, store.FormatNamespace(namespace), err)
	}
	var vectors []store.FieldVector
	if s.index != nil {
		// Embed before writing: an embedder that fails leaves the
		// stored item as it was.
		vectors, err = s.index.EmbedValue(ctx, decoded, cfg)
		if err != nil {
			return fmt.Errorf("store/sqlite: put %q in %s: %w", key, store.FormatNamespace(namespace), err)
		}
	}
	now := s.now()
	var expires, ttl any
	if cfg.TTL > 0 {
		expires, ttl = cfg.ExpiresAt(now).UnixNano(), int64(cfg.TTL)
	}
	ns := strings.Join(namespace, ".")
	kept := cfg.JSON != nil // raw is the text of WithJSON
	if len(vectors) == 0 {
		err = sqlitedb.Retry(ctx, func() error {
			// The value is bound as TEXT: SQLite's JSON functions would
			// take a BLOB for JSONB.
			_, err := s.db.WS[upsertItem].ExecContext(ctx, ns, key, string(raw), now.UnixNano(), expires, ttl, kept)
			return err
		})
	} else {
		err = s.db.Write(ctx, func(tx sqlitedb.Tx) error {
			if _, err := tx.Exec(upsertItem, ns, key, string(raw), now.UnixNano(), expires, ttl, kept); err != nil {
				return err
			}
			for _, v := range vectors {
				if _, err := tx.Exec(insertVector, ns, key, v.Field, vector.Encode(v.Vector)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("store/sqlite: put %q in %s: %w", key, store.FormatNamespace(namespace), err)
	}
	return nil
}

// Delete implements [store.Store].
func (s *Store) Delete(ctx context.Context, namespace []string, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store/sqlite: delete: %w", err)
	}
	if err := store.ValidateNamespace(namespace); err != nil {
		return fmt.Errorf("store/sqlite: delete: %w", err)
	}
	ns := strings.Join(namespace, ".")
	err := sqlitedb.Retry(ctx, func() error {
		_, err := s.db.WS[deleteItem].ExecContext(ctx, ns, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("store/sqlite: delete %q from %s: %w", key, store.FormatNamespace(namespace), err)
	}
	return nil
}

// Search implements [store.Store]. The filter is translated to
// json_type and json_extract conditions that every matching value meets,
// so that SQLite skips most others; each candidate is then checked in Go
// with [store.SearchConfig.Match], which decides. Without a filter,
// SQLite applies the limit and offset itself.
func (s *Store) Search(ctx context.Context, prefix []string, opts ...store.SearchOption) ([]store.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store/sqlite: search: %w", err)
	}
	if err := store.ValidatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("store/sqlite: search: %w", err)
	}
	cfg, err := store.NewSearchConfig(opts...)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: search: %w", err)
	}
	if cfg.Query != "" && s.index == nil {
		return nil, fmt.Errorf("store/sqlite: search: %w", store.ErrNoIndex)
	}
	if cfg.Limit == 0 {
		return []store.Item{}, nil
	}
	if cfg.Query != "" {
		return s.querySearch(ctx, prefix, cfg)
	}
	now := s.now()
	cond, args := where(now, prefix, cfg)
	q := `SELECT ` + itemColumns + ` FROM agentgraph_store_items WHERE ` + cond +
		` ORDER BY updated_at DESC, namespace, key`
	filtered := len(cfg.Filter) > 0
	if !filtered {
		q += ` LIMIT ? OFFSET ?`
		args = append(args, cfg.Limit, cfg.Offset)
	}
	var rows []*row
	err = sqlitedb.Retry(ctx, func() error {
		rows = rows[:0]
		rs, err := s.db.R.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		skipped := 0
		for rs.Next() {
			r, err := scanRow(rs)
			if err != nil {
				return err
			}
			if filtered {
				// The SQL conditions are necessary, not sufficient.
				v, err := r.decode()
				if err != nil {
					return err
				}
				if !cfg.Match(v) {
					continue
				}
				if skipped < cfg.Offset {
					skipped++
					continue
				}
			}
			rows = append(rows, r)
			if len(rows) == cfg.Limit {
				break
			}
		}
		return rs.Err()
	})
	if err == nil && cfg.RefreshTTL {
		err = s.refresh(ctx, now, rows) // after the rows are closed: ":memory:" has one connection
	}
	items := make([]store.Item, 0, len(rows))
	for _, r := range rows {
		if err != nil {
			break
		}
		var it store.Item
		it, err = r.item()
		items = append(items, it)
	}
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: search %s: %w", store.FormatNamespace(prefix), err)
	}
	return items, nil
}

// where returns the conditions, and their arguments, that the live items
// under prefix matching cfg's filter meet.
func where(now time.Time, prefix []string, cfg store.SearchConfig) (string, []any) {
	conds := []string{liveAt}
	args := []any{now.UnixNano()}
	if cond, cargs := prefixSQL(prefix); cond != "" {
		conds = append(conds, cond)
		args = append(args, cargs...)
	}
	for _, c := range cfg.Filter {
		if cond, cargs := conditionSQL(c); cond != "" {
			conds = append(conds, cond)
			args = append(args, cargs...)
		}
	}
	return strings.Join(conds, " AND "), args
}

// querySearch is Search with a query. The candidates (live, under the
// prefix, passing the SQL form of the filter) are read joined with their
// vectors in key order, one row per vector, and scored in Go as they
// stream; only the best Offset+Limit are kept.
func (s *Store) querySearch(ctx context.Context, prefix []string, cfg store.SearchConfig) ([]store.Item, error) {
	q, err := s.index.EmbedQuery(ctx, cfg.Query)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: search %s: %w", store.FormatNamespace(prefix), err)
	}
	qnorm := vector.Norm(q)
	now := s.now()
	cond, args := where(now, prefix, cfg)
	stmt := `SELECT i.namespace, i.key, i.value, i.created_at, i.updated_at, i.expires_at, i.ttl_ns, i.value_kept, v.vector
FROM (SELECT ` + itemColumns + ` FROM agentgraph_store_items WHERE ` + cond + `) AS i
JOIN agentgraph_store_vectors AS v ON v.namespace = i.namespace AND v.key = i.key
ORDER BY i.namespace, i.key`
	var top *rank.Top[*row]
	err = sqlitedb.Retry(ctx, func() error {
		top = rank.NewTop[*row](cfg.Offset, cfg.Limit)
		rs, err := s.db.R.QueryContext(ctx, stmt, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		var cur *row // the item whose vectors are being read
		var score float64
		flush := func() error {
			if cur == nil {
				return nil
			}
			if len(cfg.Filter) > 0 {
				// The SQL conditions are necessary, not sufficient.
				v, err := cur.decode()
				if err != nil {
					return err
				}
				if !cfg.Match(v) {
					return nil
				}
			}
			top.Add(rank.Entry[*row]{Score: score, Updated: cur.updated, Namespace: cur.namespace, Key: cur.key, Item: cur})
			return nil
		}
		for rs.Next() {
			var blob []byte
			r, err := scanRow(withVector{rs, &blob})
			if err != nil {
				return err
			}
			sim, err := vector.Cosine(q, qnorm, blob)
			if err != nil {
				return fmt.Errorf("item %q in %s: %w", r.key, r.namespace, err)
			}
			if cur != nil && cur.namespace == r.namespace && cur.key == r.key {
				score = max(score, sim)
				continue
			}
			if err := flush(); err != nil {
				return err
			}
			cur, score = r, sim
		}
		if err := rs.Err(); err != nil {
			return err
		}
		return flush()
	})
	var found []rank.Entry[*row]
	if err == nil {
		found = top.Page(cfg.Offset)
		if cfg.RefreshTTL {
			rows := make([]*row, len(found))
			for i, e := range found {
				rows[i] = e.Item
			}
			err = s.refresh(ctx, now, rows)
		}
	}
	items := make([]store.Item, 0, len(found))
	for _, e := range found {
		if err != nil {
			break
		}
		var it store.Item
		it, err = e.Item.item()
		it.Score = &e.Score
		items = append(items, it)
	}
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: search %s: %w", store.FormatNamespace(prefix), err)
	}
	return items, nil
}

// withVector scans a row of item columns followed by a vector.
type withVector struct {
	sc  interface{ Scan(...any) error }
	vec *[]byte
}

func (w withVector) Scan(dest ...any) error { return w.sc.Scan(append(dest, w.vec)...) }

// prefixSQL returns the condition that the namespace is prefix or starts
// with prefix's labels: a range on the primary key's first column.
func prefixSQL(prefix []string) (string, []any) {
	if len(prefix) == 0 {
		return "", nil
	}
	p := strings.Join(prefix, ".")
	// Labels have no ".", and "/" follows "." in byte order.
	return `(namespace = ? OR (namespace >= ? AND namespace < ?))`, []any{p, p + ".", p + "/"}
}

// conditionSQL returns a condition that every value matching c meets, or
// "" if it has none to offer.
func conditionSQL(c store.Condition) (string, []any) {
	path, ok := sqlitedb.KeyPath(c.Key)
	if !ok {
		return "", nil // not expressible as a JSON path; Match decides
	}
	if c.Op == store.Ne {
		return `json_type(value, ?) IS NOT NULL`, []any{path}
	}
	switch w := c.Value.(type) {
	case nil:
		return `json_type(value, ?) = 'null'`, []any{path}
	case bool:
		return `json_type(value, ?) = ?`, []any{path, fmt.Sprint(w)}
	case []any:
		return `json_type(value, ?) = 'array'`, []any{path}
	case map[string]any:
		return `json_type(value, ?) = 'object'`, []any{path}
	case string:
		if strings.Contains(w, "\x00") {
			return `json_type(value, ?) = 'text'`, []any{path}
		}
		op := map[store.Operator]string{store.Eq: "=", store.Gt: ">", store.Gte: ">=", store.Lt: "<", store.Lte: "<="}[c.Op]
		return `json_type(value, ?) = 'text' AND json_extract(value, ?) ` + op + ` ?`, []any{path, path, w}
	case float64:
		// SQLite and Go may round a decimal differently in the last bit:
		// widen the bounds by a relative 1e-9 and let Match decide.
		tol := math.Abs(w)*1e-9 + 1e-300
		num := `json_type(value, ?) IN ('integer', 'real') AND CAST(json_extract(value, ?) AS REAL) `
		switch c.Op {
		case store.Eq:
			return num + `BETWEEN ? AND ?`, []any{path, path, w - tol, w + tol}
		case store.Gt, store.Gte:
			return num + `>= ?`, []any{path, path, w - tol}
		case store.Lt, store.Lte:
			return num + `<= ?`, []any{path, path, w + tol}
		}
	}
	return "", nil
}

// ListNamespaces implements [store.Store]. SQLite returns the distinct
// namespaces of live items under the literal part of the prefix pattern;
// [store.ListConfig.Apply] matches, truncates, sorts and pages them.
func (s *Store) ListNamespaces(ctx context.Context, opts ...store.ListOption) ([][]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store/sqlite: list namespaces: %w", err)
	}
	cfg, err := store.NewListConfig(opts...)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: list namespaces: %w", err)
	}
	q := `SELECT DISTINCT namespace FROM agentgraph_store_items WHERE ` + liveAt
	args := []any{s.now().UnixNano()}
	if cond, cargs := prefixSQL(cfg.LiteralPrefix()); cond != "" {
		q += " AND " + cond
		args = append(args, cargs...)
	}
	var nss [][]string
	err = sqlitedb.Retry(ctx, func() error {
		nss = nss[:0]
		rs, err := s.db.R.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var ns string
			if err := rs.Scan(&ns); err != nil {
				return err
			}
			nss = append(nss, strings.Split(ns, "."))
		}
		return rs.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: list namespaces: %w", err)
	}
	return cfg.Apply(nss), nil
}

// Sweep implements [store.Sweeper].
func (s *Store) Sweep(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("store/sqlite: sweep: %w", err)
	}
	var n int64
	err := sqlitedb.Retry(ctx, func() error {
		res, err := s.db.WS[sweepItems].ExecContext(ctx, s.now().UnixNano())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store/sqlite: sweep: %w", err)
	}
	return int(n), nil
}
