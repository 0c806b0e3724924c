package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/internal/rank"
	"github.com/agentgraph/agentgraph/store/internal/vector"
)

const (
	// itemColumns are the columns of an item, as inserted and returned.
	itemColumns = `namespace, key, value, value_text, created_at, updated_at, expires_at, ttl`
	// readColumns are an item as read: its JSON text (value_text, or the
	// jsonb's text for items put without WithJSON or before schema
	// version 3) and whether that is the text kept, then created_at to
	// ttl.
	readColumns = `namespace, key, COALESCE(value_text, value::text), value_text IS NOT NULL, created_at, updated_at, expires_at, ttl`

	// getItem returns the live item ($1, $2) at time $3, and extends its
	// TTL first if $4. The final SELECT sees the table as it was before
	// the UPDATE, hence the NOT EXISTS.
	getItem = `WITH refreshed AS (
	UPDATE agentgraph_store_items SET expires_at = $3::timestamptz + ttl
	WHERE $4::boolean AND namespace = $1 AND key = $2 AND ttl IS NOT NULL AND expires_at > $3::timestamptz
	RETURNING ` + itemColumns + `
)
SELECT ` + readColumns + ` FROM refreshed
UNION ALL
SELECT ` + readColumns + ` FROM agentgraph_store_items
WHERE namespace = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3::timestamptz) AND NOT EXISTS (SELECT FROM refreshed)`

	// upsertItem keeps created_at when it replaces a live item; an
	// expired item it replaces counts as absent.
	upsertItem = `INSERT INTO agentgraph_store_items AS t (` + itemColumns + `)
VALUES ($1, $2, $3, $7, $4, $4, $5, $6)
ON CONFLICT (namespace, key) DO UPDATE SET
	value = EXCLUDED.value,
	value_text = EXCLUDED.value_text,
	created_at = CASE
		WHEN t.expires_at IS NOT NULL AND t.expires_at <= EXCLUDED.updated_at THEN EXCLUDED.created_at
		ELSE t.created_at
	END,
	updated_at = EXCLUDED.updated_at,
	expires_at = EXCLUDED.expires_at,
	ttl = EXCLUDED.ttl`

	deleteItem = `DELETE FROM agentgraph_store_items WHERE namespace = $1 AND key = $2`

	refreshItems = `UPDATE agentgraph_store_items AS t SET expires_at = $1::timestamptz + t.ttl
FROM unnest($2::text[], $3::text[]) AS r(namespace, key)
WHERE t.namespace = r.namespace COLLATE "C" AND t.key = r.key COLLATE "C" AND t.ttl IS NOT NULL AND t.expires_at > $1::timestamptz`

	sweepItems = `DELETE FROM agentgraph_store_items WHERE expires_at IS NOT NULL AND expires_at <= $1::timestamptz`

	// deleteVectors and insertVectors follow upsertItem in Put's
	// transaction; the upsert's row lock orders concurrent Puts of one
	// item, and deleteVectors, a statement of its own, then sees the
	// vectors the Put before committed.
	deleteVectors = `DELETE FROM agentgraph_store_vectors WHERE namespace = $1 AND key = $2`
	insertVectors = `INSERT INTO agentgraph_store_vectors (namespace, key, field, vector)
SELECT $1, $2, f, v FROM unnest($3::text[], $4::bytea[]) AS u(f, v)`

	// itemVectors follows readColumns in a query search.
	itemVectors = `ARRAY(SELECT v.vector FROM agentgraph_store_vectors AS v WHERE v.namespace = t.namespace AND v.key = t.key)`
	hasVectors  = `EXISTS (SELECT FROM agentgraph_store_vectors AS v WHERE v.namespace = t.namespace AND v.key = t.key)`
)

// row is an item as read from the table.
type row struct {
	namespace string // labels joined with "."
	key       string
	raw       []byte         // the value's JSON text, until decoded unless kept
	kept      bool           // raw is the text kept (value_text), returned as Item.JSON
	value     map[string]any // raw decoded
	created   time.Time
	updated   time.Time
	expires   time.Time
	ttl       time.Duration
}

func scanRow(sc interface{ Scan(...any) error }) (*row, error) {
	r, err := scanUndecoded(sc)
	if err == nil {
		err = r.decode()
	}
	return r, err
}

// scanUndecoded scans a row but leaves its value to decode.
func scanUndecoded(sc interface{ Scan(...any) error }) (*row, error) {
	var r row
	var expires pgtype.Timestamptz
	var ttl pgtype.Interval
	if err := sc.Scan(&r.namespace, &r.key, &r.raw, &r.kept, &r.created, &r.updated, &expires, &ttl); err != nil {
		return nil, err
	}
	r.created, r.updated = r.created.UTC(), r.updated.UTC()
	if expires.Valid {
		r.expires = expires.Time.UTC()
	}
	if ttl.Valid {
		r.ttl = time.Duration(ttl.Microseconds)*time.Microsecond + time.Duration(ttl.Days)*24*time.Hour + time.Duration(ttl.Months)*30*24*time.Hour
	}
	return &r, nil
}

// decode sets r.value from r.raw, once.
func (r *row) decode() error {
	if r.value != nil {
		return nil
	}
	v, err := store.UnmarshalValue(r.raw)
	if err != nil {
		return fmt.Errorf("item %q in %s: %w", r.key, r.namespace, err)
	}
	r.value = v
	if !r.kept {
		r.raw = nil // jsonb's text: not returned
	}
	return nil
}

func (r *row) item() store.Item {
	return store.Item{
		Namespace: strings.Split(r.namespace, "."),
		Key:       r.key,
		Value:     r.value,
		JSON:      r.raw,
		CreatedAt: r.created,
		UpdatedAt: r.updated,
		ExpiresAt: r.expires,
	}
}

// Get implements [store.Store]. Reading and refreshing the TTL take one
// statement.
func (s *Store) Get(ctx context.Context, namespace []string, key string, opts ...store.GetOption) (*store.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store/postgres: get: %w", err)
	}
	if err := store.ValidateNamespace(namespace); err != nil {
		return nil, fmt.Errorf("store/postgres: get: %w", err)
	}
	cfg := store.NewGetConfig(opts...)
	r, err := scanRow(s.pool.QueryRow(ctx, getItem, strings.Join(namespace, "."), key, s.now(), cfg.RefreshTTL))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store/postgres: get %q from %s: %w", key, store.FormatNamespace(namespace), err)
	}
	it := r.item()
	return &it, nil
}

// Put implements [store.Store]. Given [store.WithJSON], it writes the
// value's JSON text twice, as jsonb for filters and as text to return
// (see [store.Item.JSON]), in one statement. PostgreSQL's jsonb cannot hold the character U+0000: a
// value with a string containing it fails, and nothing is stored.
func (s *Store) Put(ctx context.Context, namespace []string, key string, value map[string]any, opts ...store.PutOption) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store/postgres: put: %w", err)
	}
	if err := store.ValidateNamespace(namespace); err != nil {
		return fmt.Errorf("store/postgres: put: %w", err)
	}
	cfg, err := store.NewPutConfig(opts...)
	if err != nil {
		return fmt.Errorf("store/postgres: put: %w", err)
	}
	raw, decoded, err := cfg.Encode(value)
	if err != nil {
		return fmt.Errorf("store/postgres: put %q in %s: %w", key, store.FormatNamespace(namespace), err)
	}
	var vectors []store.FieldVector
	if s.index != nil {
		// Embed before writing: an embedder that fails leaves the
		// stored item as it was.
		vectors, err = s.index.EmbedValue(ctx, decoded, cfg)
		if err != nil {
			return fmt.Errorf("store/postgres: put %q in %s: %w", key, store.FormatNamespace(namespace), err)
		}
	}
	now := s.now()
	var expires pgtype.Timestamptz
	var ttl pgtype.Interval
	if cfg.TTL > 0 {
		expires = pgtype.Timestamptz{Time: cfg.ExpiresAt(now), Valid: true}
		ttl = pgtype.Interval{Microseconds: cfg.TTL.Microseconds(), Valid: true}
	}
	ns := strings.Join(namespace, ".")
	// A batch runs in one implicit transaction, each statement with its
	// own snapshot.
	b := &pgx.Batch{}
	var text *string // value_text: only the text of WithJSON
	if cfg.JSON != nil {
		t := string(raw)
		text = &t
	}
	b.Queue(upsertItem, ns, key, raw, now, expires, ttl, text)
	b.Queue(deleteVectors, ns, key)
	if len(vectors) > 0 {
		fields, blobs := make([]string, len(vectors)), make([][]byte, len(vectors))
		for i, v := range vectors {
			fields[i], blobs[i] = v.Field, vector.Encode(v.Vector)
		}
		b.Queue(insertVectors, ns, key, fields, blobs)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("store/postgres: put %q in %s: %w", key, store.FormatNamespace(namespace), err)
	}
	return nil
}

// Delete implements [store.Store].
func (s *Store) Delete(ctx context.Context, namespace []string, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store/postgres: delete: %w", err)
	}
	if err := store.ValidateNamespace(namespace); err != nil {
		return fmt.Errorf("store/postgres: delete: %w", err)
	}
	if _, err := s.pool.Exec(ctx, deleteItem, strings.Join(namespace, "."), key); err != nil {
		return fmt.Errorf("store/postgres: delete %q from %s: %w", key, store.FormatNamespace(namespace), err)
	}
	return nil
}

// query builds a statement with numbered parameters.
type query struct {
	where []string
	args  []any
}

// arg adds a parameter and returns its placeholder.
func (q *query) arg(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

func (q *query) prefix(prefix []string) {
	if len(prefix) == 0 {
		return
	}
	p := strings.Join(prefix, ".")
	// Labels have no ".", and "/" follows "." in byte order (the column
	// collates as "C").
	q.where = append(q.where, fmt.Sprintf("(namespace = %s OR (namespace >= %s AND namespace < %s))", q.arg(p), q.arg(p+"."), q.arg(p+"/")))
}

// Search implements [store.Store]. The filter is translated to
// conditions every matching value meets (@> containment for strings,
// bools and null, ->> compared as float8 for numbers, as text in the "C"
// collation for strings); each candidate is then checked in Go with
// [store.SearchConfig.Match], which decides. Without a filter, PostgreSQL
// applies the limit and offset itself.
func (s *Store) Search(ctx context.Context, prefix []string, opts ...store.SearchOption) ([]store.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store/postgres: search: %w", err)
	}
	if err := store.ValidatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("store/postgres: search: %w", err)
	}
	cfg, err := store.NewSearchConfig(opts...)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: search: %w", err)
	}
	if cfg.Query != "" && s.index == nil {
		return nil, fmt.Errorf("store/postgres: search: %w", store.ErrNoIndex)
	}
	if cfg.Limit == 0 {
		return []store.Item{}, nil
	}
	if cfg.Query != "" {
		return s.querySearch(ctx, prefix, cfg)
	}
	now := s.now()
	q := &query{}
	q.where = append(q.where, "(expires_at IS NULL OR expires_at > "+q.arg(now)+"::timestamptz)")
	q.prefix(prefix)
	if err := q.filter(cfg.Filter); err != nil {
		return nil, fmt.Errorf("store/postgres: search: %w", err)
	}
	sql := `SELECT ` + readColumns + ` FROM agentgraph_store_items WHERE ` + strings.Join(q.where, " AND ") +
		` ORDER BY updated_at DESC, namespace, key`
	filtered := len(cfg.Filter) > 0
	if !filtered {
		sql += ` LIMIT ` + q.arg(cfg.Limit) + ` OFFSET ` + q.arg(cfg.Offset)
	}
	rows, err := s.search(ctx, sql, q.args, cfg)
	if err == nil && cfg.RefreshTTL {
		err = s.refresh(ctx, now, rows)
	}
	if err != nil {
		return nil, fmt.Errorf("store/postgres: search %s: %w", store.FormatNamespace(prefix), err)
	}
	items := make([]store.Item, len(rows))
	for i, r := range rows {
		items[i] = r.item()
	}
	return items, nil
}

// querySearch is Search with a query. The candidates (live, under the
// prefix, passing the SQL form of the filter, with vectors) stream from
// PostgreSQL each with all its vectors; Go scores them (PostgreSQL has no
// vector type without pgvector) and keeps only the best Offset+Limit.
func (s *Store) querySearch(ctx context.Context, prefix []string, cfg store.SearchConfig) ([]store.Item, error) {
	qv, err := s.index.EmbedQuery(ctx, cfg.Query)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: search %s: %w", store.FormatNamespace(prefix), err)
	}
	now := s.now()
	q := &query{}
	q.where = append(q.where, "(expires_at IS NULL OR expires_at > "+q.arg(now)+"::timestamptz)", hasVectors)
	q.prefix(prefix)
	if err := q.filter(cfg.Filter); err != nil {
		return nil, fmt.Errorf("store/postgres: search: %w", err)
	}
	sql := `SELECT ` + readColumns + `, ` + itemVectors + ` FROM agentgraph_store_items AS t WHERE ` + strings.Join(q.where, " AND ")
	top, err := s.scoreRows(ctx, sql, q.args, qv, cfg)
	var found []rank.Entry[*row]
	if err == nil {
		found = top.Page(cfg.Offset)
		for _, e := range found {
			if err = e.Item.decode(); err != nil {
				break
			}
		}
	}
	if err == nil {
		if cfg.RefreshTTL {
			rows := make([]*row, len(found))
			for i, e := range found {
				rows[i] = e.Item
			}
			err = s.refresh(ctx, now, rows)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("store/postgres: search %s: %w", store.FormatNamespace(prefix), err)
	}
	items := make([]store.Item, len(found))
	for i, e := range found {
		items[i] = e.Item.item()
		items[i].Score = &e.Score
	}
	return items, nil
}

// scoreRows scores the rows of a query search with qv.
func (s *Store) scoreRows(ctx context.Context, sql string, args []any, qv []float32, cfg store.SearchConfig) (*rank.Top[*row], error) {
	rs, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	top := rank.NewTop[*row](cfg.Offset, cfg.Limit)
	qnorm := vector.Norm(qv)
	for rs.Next() {
		var blobs [][]byte
		r, err := scanUndecoded(withVectors{rs, &blobs})
		if err != nil {
			return nil, err
		}
		if len(blobs) == 0 {
			continue // not indexed
		}
		if len(cfg.Filter) > 0 {
			// The SQL conditions are necessary, not sufficient.
			if err := r.decode(); err != nil {
				return nil, err
			}
			if !cfg.Match(r.value) {
				continue
			}
		}
		score := math.Inf(-1)
		for _, b := range blobs {
			sim, err := vector.Cosine(qv, qnorm, b)
			if err != nil {
				return nil, fmt.Errorf("item %q in %s: %w", r.key, r.namespace, err)
			}
			score = max(score, sim)
		}
		top.Add(rank.Entry[*row]{Score: score, Updated: r.updated, Namespace: r.namespace, Key: r.key, Item: r})
	}
	rs.Close()
	return top, rs.Err()
}

// withVectors scans a row of item columns followed by an array of
// vectors.
type withVectors struct {
	sc   interface{ Scan(...any) error }
	vecs *[][]byte
}

func (w withVectors) Scan(dest ...any) error { return w.sc.Scan(append(dest, w.vecs)...) }

func (s *Store) search(ctx context.Context, sql string, args []any, cfg store.SearchConfig) ([]*row, error) {
	rs, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	filtered := len(cfg.Filter) > 0
	var out []*row
	skipped := 0
	for rs.Next() {
		r, err := scanRow(rs)
		if err != nil {
			return nil, err
		}
		if filtered {
			// The SQL conditions are necessary, not sufficient.
			if !cfg.Match(r.value) {
				continue
			}
			if skipped < cfg.Offset {
				skipped++
				continue
			}
		}
		out = append(out, r)
		if len(out) == cfg.Limit {
			break
		}
	}
	rs.Close()
	return out, rs.Err()
}

// filter adds conditions that every value matching conds meets.
func (q *query) filter(conds []store.Condition) error {
	contains := map[string]any{}
	for _, c := range conds {
		if !sendable(c.Key) {
			continue // no stored value has such a key; Match decides
		}
		// k is the key's placeholder, added only when used: PostgreSQL
		// rejects parameters it cannot infer a type for.
		var k string
		key := func() string {
			if k == "" {
				k = q.arg(c.Key) + "::text"
			}
			return k
		}
		if hasUnsendable(c.Value) {
			// jsonb holds no U+0000: check only that the key is there.
			q.where = append(q.where, fmt.Sprintf("value -> %s IS NOT NULL", key()))
			continue
		}
		switch w := c.Value.(type) {
		case float64:
			num := fmt.Sprintf("(CASE WHEN jsonb_typeof(value -> %s) = 'number' THEN (value ->> %s)::float8 END)", key(), key())
			switch c.Op {
			case store.Ne:
				q.where = append(q.where, fmt.Sprintf("value -> %s IS NOT NULL", key()))
			default:
				q.where = append(q.where, fmt.Sprintf("%s %s %s::float8", num, sqlOperator[c.Op], q.arg(w)))
			}
		case string:
			switch c.Op {
			case store.Eq:
				contains[c.Key] = w
			case store.Ne:
				q.where = append(q.where, fmt.Sprintf("value -> %s IS NOT NULL", key()))
			default:
				str := fmt.Sprintf(`(CASE WHEN jsonb_typeof(value -> %s) = 'string' THEN value ->> %s END) COLLATE "C"`, key(), key())
				q.where = append(q.where, fmt.Sprintf("%s %s %s::text", str, sqlOperator[c.Op], q.arg(w)))
			}
		default: // nil, bool, []any, map[string]any with $eq or $ne
			switch {
			case c.Op == store.Ne:
				q.where = append(q.where, fmt.Sprintf("value -> %s IS NOT NULL", key()))
			case hasNumber(w):
				// jsonb compares numbers as exact decimals, Match as
				// float64: only check the type.
				q.where = append(q.where, fmt.Sprintf("jsonb_typeof(value -> %s) = %s", key(), q.arg(jsonbType(w))))
			default:
				contains[c.Key] = w
			}
		}
	}
	if len(contains) > 0 {
		b, err := json.Marshal(contains)
		if err != nil {
			return err
		}
		q.where = append(q.where, "value @> "+q.arg(b)+"::jsonb")
	}
	return nil
}

var sqlOperator = map[store.Operator]string{store.Eq: "=", store.Gt: ">", store.Gte: ">=", store.Lt: "<", store.Lte: "<="}

// sendable reports whether PostgreSQL accepts s as text.
func sendable(s string) bool {
	return utf8.ValidString(s) && !strings.Contains(s, "\x00")
}

// hasUnsendable reports whether a string or key in v is not sendable.
func hasUnsendable(v any) bool {
	switch v := v.(type) {
	case string:
		return !sendable(v)
	case []any:
		for _, x := range v {
			if hasUnsendable(x) {
				return true
			}
		}
	case map[string]any:
		for k, x := range v {
			if !sendable(k) || hasUnsendable(x) {
				return true
			}
		}
	}
	return false
}

func hasNumber(v any) bool {
	switch v := v.(type) {
	case float64:
		return true
	case []any:
		for _, x := range v {
			if hasNumber(x) {
				return true
			}
		}
	case map[string]any:
		for _, x := range v {
			if hasNumber(x) {
				return true
			}
		}
	}
	return false
}

func jsonbType(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null" // unreachable: only containers hold numbers
}

// refresh extends the TTLs of the rows that have one to now plus their
// TTL, in one statement.
func (s *Store) refresh(ctx context.Context, now time.Time, rows []*row) error {
	var nss, keys []string
	for _, r := range rows {
		if r.ttl > 0 {
			nss, keys = append(nss, r.namespace), append(keys, r.key)
		}
	}
	if len(nss) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, refreshItems, now, nss, keys); err != nil {
		return fmt.Errorf("refresh TTL: %w", err)
	}
	for _, r := range rows {
		if r.ttl > 0 {
			r.expires = now.Add(r.ttl)
		}
	}
	return nil
}

// ListNamespaces implements [store.Store]. PostgreSQL returns the
// distinct namespaces of live items under the literal part of the prefix
// pattern; [store.ListConfig.Apply] matches, truncates, sorts and pages
// them.
func (s *Store) ListNamespaces(ctx context.Context, opts ...store.ListOption) ([][]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store/postgres: list namespaces: %w", err)
	}
	cfg, err := store.NewListConfig(opts...)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: list namespaces: %w", err)
	}
	q := &query{}
	q.where = append(q.where, "(expires_at IS NULL OR expires_at > "+q.arg(s.now())+"::timestamptz)")
	q.prefix(cfg.LiteralPrefix())
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT namespace FROM agentgraph_store_items WHERE `+strings.Join(q.where, " AND "), q.args...)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: list namespaces: %w", err)
	}
	nss, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]string, error) {
		var ns string
		err := r.Scan(&ns)
		return strings.Split(ns, "."), err
	})
	if err != nil {
		return nil, fmt.Errorf("store/postgres: list namespaces: %w", err)
	}
	return cfg.Apply(nss), nil
}

// Sweep implements [store.Sweeper].
func (s *Store) Sweep(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("store/postgres: sweep: %w", err)
	}
	tag, err := s.pool.Exec(ctx, sweepItems, s.now())
	if err != nil {
		return 0, fmt.Errorf("store/postgres: sweep: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
