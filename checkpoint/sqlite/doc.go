// Package sqlite is a [checkpoint.Saver] that keeps checkpoints in a SQLite
// database file, using the pure-Go driver modernc.org/sqlite (no cgo).
//
// Open creates or opens the file, switches it to write-ahead logging and
// brings its schema up to date:
//
//	s, err := sqlite.Open(ctx, "agent.db")
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	err = s.Put(ctx, cp)
//	t, err := s.Get(ctx, checkpoint.Ref{ThreadID: "t1"})
//
// A Saver is safe for use by many goroutines, and several processes may open
// the same file: writes go through one connection per Saver in BEGIN
// IMMEDIATE transactions, readers use their own connections, busy databases
// are waited for (see [WithBusyTimeout]) and transactions that still find
// the database busy are retried.
//
// # Group commit
//
// A write (Put, PutWrites, DeleteThread, or a lease's acquisition, renewal
// or release) that finds no write transaction of its Saver in flight
// commits at once, in a transaction of its own. One that arrives while a
// transaction commits waits for it and is then committed together with the
// others that arrived meanwhile (up to 512), in their order of arrival, so
// that many threads checkpointing at once share commits — and, with
// synchronous FULL, fsyncs. Each write of such a batch is checked on its
// own: a conflict, a fenced (stale) lease or a lease held by another
// refuses that write alone, with its own error, and the others commit. A
// refusal found before the write changed anything leaves the transaction
// going on; one found after (a version conflict, once the checkpoint's row
// was written) and an error of the database itself in one write abort the
// transaction: that write gets its error and the others are committed
// again without it. A write whose context is done while it waits is
// dropped; one already in a batch is committed or refused with it. The Puts
// of a batch are written set-based — a multi-row statement checks the
// fences and parents of up to 128 of them, one inserts their checkpoint
// rows, one their values — rather than with a few statements each; a
// thread's second Put in a namespace goes in a later statement than its
// first, a statement binds about 4 MiB of values at most, and a statement
// that fails has the batch made again Put by Put, so that the error is
// its Put's alone.
// [Saver.Close] waits for the transaction in flight and fails the writes
// still waiting.
//
// The pages a commit appends to the WAL are copied into the database file
// by a checkpoint on a connection and goroutine of the Saver's own, at most
// every 10 ms, not inside the commit that fills the WAL: a commit does not
// wait for that copy, nor for the sync of the file that follows it. The
// writer connection keeps SQLite's automatic checkpoint as a backstop (at
// 10,000 pages), and a page cache of up to 64 MiB. While it is written to
// steadily, the WAL file therefore grows to about 40 MiB (SQLite's default
// keeps it near 4 MiB) and keeps that size until the Saver is closed.
//
// # Schema
//
// Migrations run on Open inside one transaction and are recorded in the
// table schema_migrations. A file written by a newer version of this
// package makes Open fail with a [*SchemaVersionError]. The tables are:
//
//   - checkpoints: one row per (thread_id, ns, id) with parent_id,
//     created_at (Unix nanoseconds), metadata (JSON text, filtered with
//     json_extract), versions (JSON object of channel versions), frontier
//     and shape; indexed by its primary key and by id alone (for a list
//     of every thread, in id order).
//   - blobs: one row per (thread_id, ns, channel, version), inserted only if
//     absent, so a channel that does not change costs nothing per
//     checkpoint.
//   - writes: pending writes keyed by (thread_id, ns, checkpoint_id,
//     task_id, idx): INSERT OR IGNORE for idx ≥ 0 (first write wins), INSERT
//     OR REPLACE for idx < 0 (last write wins).
//
// # Storage of growing lists
//
// A message list that grows by one message per step would be stored once
// per version, O(n²) bytes for n steps. When a channel's new value is a
// JSON array that extends the channel's previous stored version (the same
// bytes up to its closing bracket, then more elements), the blob holds only
// the appended bytes and names the version it extends. Deltas are skip
// deltas (see [WithDeltaFanout]): reading a version applies a logarithmic
// number of them — at most 45 for a list grown 4,095 times with the default
// fanout of 16 — and each appended element is stored about log₁₆ n + 1
// times. A 1,000-message chat therefore stores a few times the final list
// instead of 500 copies of it. Values read back are byte-for-byte what was
// put.
package sqlite
