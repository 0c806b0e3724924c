// Package sqlite is a [store.Store] that keeps items in a SQLite database
// file, using the pure-Go driver modernc.org/sqlite (no cgo).
//
// Open creates or opens the file, switches it to write-ahead logging and
// brings the store's tables up to date:
//
//	s, err := sqlite.Open(ctx, "agent.db")
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	err = s.Put(ctx, []string{"users", "u-42"}, "prefs", map[string]any{"theme": "dark"})
//	item, err := s.Get(ctx, []string{"users", "u-42"}, "prefs")
//
// The file may be the one the checkpoint saver of checkpoint/sqlite uses:
// the store's tables and its migration records are its own, prefixed
// agentgraph_store_. A Store is safe for use by many goroutines, and
// several processes may open the same file: writes go through one
// connection per Store, readers use their own connections, busy databases
// are waited for (see [WithBusyTimeout]) and statements that still find
// the database busy are retried.
//
// # Schema
//
// Migrations run on Open inside one transaction and are recorded in the
// table agentgraph_store_migrations. A file written by a newer version of
// this package makes Open fail with a [*SchemaVersionError]. Items live in
// agentgraph_store_items, one row per (namespace, key), the namespace's
// labels joined with "." (labels cannot contain "."), with the value as
// JSON text, created_at, updated_at and expires_at as Unix nanoseconds,
// and ttl_ns, the TTL in nanoseconds that reads refresh expires_at with.
// Schema version 2 adds agentgraph_store_vectors for semantic search (see
// [WithIndex]): one row per indexed text of an item, (namespace, key,
// field) and the vector as a BLOB of little-endian float32s. Triggers
// delete an item's vectors when the item is deleted or its value
// replaced, whoever does it (Delete, Sweep, or a Put by a store opened
// without an index); Put writes the item and its new vectors in one
// transaction, after embedding. Schema version 3 adds value_kept, 1 when
// the value column holds the text given with [store.WithJSON] (keys in
// its order, which SQLite's JSON functions read as well as any other),
// returned as [store.Item.JSON]; items put without it, or before, read
// back with a nil Item.JSON.
//
// # Queries
//
// A search prefix is a range scan of the primary key. Filters become
// json_type and json_extract conditions that every matching value meets;
// each candidate row is then checked in Go with [store.SearchConfig.Match],
// so results follow the store package's semantics exactly. Without a
// filter, SQLite applies the limit and offset itself; with one, rows are
// read newest first until the page is full. ListNamespaces reads the
// distinct live namespaces under the literal part of the prefix pattern
// and matches, truncates, sorts and pages them in Go. Expired rows are
// excluded by every query until [Store.Sweep] deletes them.
//
// A search with a query reads the candidates (the same prefix and filter
// conditions) joined with their vectors in key order, scores each in Go
// as the rows stream, and keeps only the best Offset+Limit in memory: a
// scan of the candidates, not an approximate index.
//
// [store.Store]: https://pkg.go.dev/github.com/agentgraph/agentgraph/store#Store
package sqlite
