// Package postgres is a [checkpoint.Saver] that keeps checkpoints in
// PostgreSQL, through a pgx connection pool.
//
// Open connects (failing quickly, with a [*ConnectError] naming the host,
// when the server cannot be reached) and brings the schema up to date:
//
//	s, err := postgres.Open(ctx, "postgres://app@db.internal/app", postgres.WithSchema("agent"))
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	err = s.Put(ctx, cp)
//	t, err := s.Get(ctx, checkpoint.Ref{ThreadID: "t1"})
//
// A Saver is safe for concurrent use, and any number of processes may share
// one database: each Put is one transaction — one round trip for a run's
// next checkpoint — and migrations are serialized with an advisory lock.
//
// # Group commit
//
// The writes of concurrent callers (Put, PutWrites, PutBatch) share
// transactions: what arrives while a batch is in flight is sent as the
// next one, up to 256 writes. A batch of two writes or more is sent
// set-based — its locks in one statement, in a fixed order, then one
// statement per table over arrays and one check of every write — so its
// cost hardly grows with its size. Each thread's writes keep their order,
// each caller gets its own error (a write that fails its check, or a
// fenced write of a lease lost, is refused alone and the others commit),
// and a batch of more than 64 MiB of values is sent one statement per
// value instead.
//
// # Schema
//
// Migrations run on Open in one transaction and are recorded in the table
// agentgraph_schema_migrations; a schema written by a newer version of this
// package makes Open fail with a [*SchemaVersionError]. The tables, in the
// schema chosen with [WithSchema] or else the first schema of the
// connection's search_path, are:
//
//   - agentgraph_checkpoints: one row per (thread_id, ns, id) with
//     parent_id, created_at, metadata (jsonb, filtered with @> and ->>),
//     versions (jsonb), frontier (bytea) and shape. jsonb cannot hold the
//     character U+0000: metadata stores U+FFFD in its place (a List filter
//     with U+0000 matches it), as LangGraph's saver strips it; values,
//     in bytea, keep it.
//   - agentgraph_blobs: one row per (thread_id, ns, channel, version),
//     written once (a blob stored already is kept, as ON CONFLICT DO
//     NOTHING keeps it), so unchanged channels cost nothing per
//     checkpoint.
//   - agentgraph_writes: pending writes keyed by (thread_id, ns,
//     checkpoint_id, task_id, idx): ON CONFLICT DO NOTHING for idx ≥ 0
//     (first write wins), DO UPDATE for idx < 0 (last write wins).
//
// Text keys use the "C" collation, so checkpoint IDs sort bytewise whatever
// the database's locale.
//
// # Storage of growing lists
//
// Like the SQLite saver, a channel whose new value is a JSON array
// extending its previous stored version (the same bytes up to the closing
// bracket, then more elements) is stored as a skip delta holding only the
// appended bytes; see [WithDeltaFanout]. A message list grown by n messages
// costs O(n·log n) bytes instead of O(n²), and reading any version applies
// a logarithmic number of deltas.
package postgres
