// Package postgres is a [store.Store] that keeps items in PostgreSQL,
// through a pgx connection pool.
//
// Open connects (failing quickly, with a [*ConnectError] naming the host,
// when the server cannot be reached) and brings the store's tables up to
// date:
//
//	s, err := postgres.Open(ctx, "postgres://app@db.internal/app", postgres.WithSchema("agent"))
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	err = s.Put(ctx, []string{"users", "u-42"}, "prefs", map[string]any{"theme": "dark"})
//	item, err := s.Get(ctx, []string{"users", "u-42"}, "prefs")
//
// A Store is safe for concurrent use, any number of processes may share
// one database, and the schema may be the one the checkpoint saver of
// checkpoint/postgres uses: the store's tables and migration records are
// its own, prefixed agentgraph_store_. Migrations are serialized with an
// advisory lock. Timestamps come from the Go clock (see [WithClock]), not
// the server's.
//
// # Schema
//
// Migrations run on Open in one transaction and are recorded in the table
// agentgraph_store_migrations; a schema written by a newer version of this
// package makes Open fail with a [*SchemaVersionError]. Items live in
// agentgraph_store_items, in the schema chosen with [WithSchema] or else
// the first schema of the connection's search_path: one row per
// (namespace, key), the namespace's labels joined with "." (labels cannot
// contain "."), both in the "C" collation, with the value as jsonb,
// created_at, updated_at and expires_at as timestamptz (microseconds), and
// ttl, the interval reads refresh expires_at with. Schema version 2 adds
// agentgraph_store_vectors for semantic search (see [WithIndex]): one row
// per indexed text of an item, (namespace, key, field) and the vector as
// bytea holding little-endian float32s, with a foreign key to the item
// that deletes the vectors with it (Delete, Sweep). Put writes the item,
// deletes its old vectors and inserts the new ones in one implicit
// transaction (a pipelined batch), after embedding. Schema version 3 adds
// the column value_text: the value's JSON text as put with
// [store.WithJSON], keys in its order, which jsonb does not keep. Put
// writes both columns from one text in one statement; reads return
// value_text as [store.Item.JSON], and filters use the jsonb. Items put
// without the text, or before version 3, have a NULL value_text: they
// read back from the jsonb, with a nil Item.JSON.
//
// # Queries
//
// A search prefix is a range scan of the primary key. Filters become
// conditions that every matching value meets: @> containment for strings,
// bools and null, ->> compared as float8 for numbers and as text in the
// "C" collation for strings; each candidate row is then checked in Go with
// [store.SearchConfig.Match], so results follow the store package's
// semantics exactly. Without a filter, PostgreSQL applies the limit and
// offset itself; with one, rows are read newest first until the page is
// full. Get reads and refreshes the TTL in one statement. ListNamespaces
// reads the distinct live namespaces under the literal part of the prefix
// pattern and matches, truncates, sorts and pages them in Go.
//
// A search with a query does not need pgvector: PostgreSQL streams the
// candidates (the same prefix and filter conditions, with at least one
// vector) each with the array of its vectors, and Go computes the cosine
// similarities and keeps only the best Offset+Limit in memory. It is a
// scan of the candidates, not an approximate index.
//
// # Limits
//
// PostgreSQL text must be valid UTF-8 without U+0000, and jsonb cannot
// hold U+0000: namespaces, keys and values that break these rules make Put
// fail (encoding/json already replaces invalid UTF-8 inside values).
//
// [store.Store]: https://pkg.go.dev/github.com/agentgraph/agentgraph/store#Store
package postgres
