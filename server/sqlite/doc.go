// Package sqlite is a [server.Backend] in a SQLite file, using the
// pure-Go driver modernc.org/sqlite (no cgo): the threads, runs and
// assistants of a graph server that survive its restarts, and that several
// server processes on one machine may share.
//
//	saver, err := ckptsqlite.Open(ctx, "app.db") // checkpoint/sqlite: the checkpoints
//	b, err := sqlite.Open(ctx, "app.db")         // the threads and runs, in the same file
//	defer b.Close()
//	g, _ := builder.Compile(graph.WithCheckpointer(saver))
//	srv, err := server.New(server.Graph("agent", g), server.WithCheckpointer(saver), server.WithBackend(b), …)
//
// Like checkpoint/sqlite and store/sqlite, [Open] takes a path: it opens
// the file in write-ahead-log mode with a busy timeout ([WithBusyTimeout]),
// writes through one connection per Backend and reads through a pool of
// read-only ones. The three packages keep their own tables and may share
// one file.
//
// The requests that wait on a run (a stream, a join, a wait) are woken by
// one poller per Backend ([Backend.WatchRun], which makes the Backend a
// [server.RunWatcher]): it reads all the runs they watch in one query
// every [WithPollInterval], and the Backend's own writes wake them at
// once. Idle requests cost no query of their own, however many there are.
//
// # Queue and leases
//
// Every change is one write transaction begun with BEGIN IMMEDIATE, which
// takes the database's single write lock: SQLite serializes the writers
// of every connection and process on the file, so no two transactions
// ever decide on the same rows at once, and no row locking (PostgreSQL's
// FOR UPDATE SKIP LOCKED, see server/postgres) is needed. CreateRun reads
// the thread's runs and applies the multitask strategy in one such
// transaction; [Backend.ClaimRun] picks, in another, the oldest run that
// is either pending and the oldest pending run of a thread with no running
// run, or running with an expired lease (its process died), and sets its
// holder, attempt and lease. A partial unique index on thread_id where
// status = 'running' refuses a second running run on a thread whatever
// happens. Every update of a claimed run is fenced by (holder, attempt,
// status = 'running'): a process that lost its lease can neither renew
// it, nor append events, nor finish the run. A run whose lease expired
// while it was flagged cancelled is ended "interrupted" (deleted, for a
// rollback) by the next claim instead of being run again. A transaction
// that finds the database busy past the timeout is retried.
//
// Lease times are read from the clock of the process that writes them
// (SQLite has no server clock): the processes sharing a file must be on
// one machine, which SQLite requires anyway (it must not be used over a
// network file system).
//
// # Schema
//
// Migrations run on Open inside one transaction and are recorded in the
// table agentgraph_server_schema_migrations; a file written by a newer
// version of this package makes Open fail with a [*SchemaVersionError].
// The tables are:
//
//   - agentgraph_server_threads: one row per thread (metadata, config,
//     values and interrupts as JSON text, status, and reset_to: the
//     checkpoint a rollback left the thread at).
//   - agentgraph_server_runs: one row per run, queued in the order of seq;
//     status pending, running, success, error or interrupted; kwargs
//     (JSON text); the lease of a running run (holder, attempt,
//     lease_expires) and its cancel flag (cancel_reason, rollback).
//   - agentgraph_server_events: the events of each run's stream, keyed by
//     (run_id, id), so that any process serves the stream of a run another
//     one executes. They are deleted with their run or thread.
//   - agentgraph_server_assistants (schema version 2): one row per
//     assistant other than the graphs' own, as its current version says,
//     with last_version, the highest version made; and
//     agentgraph_server_assistant_versions: every version, keyed by
//     (assistant_id, version). SQLite runs one write at a time, across
//     processes, so two patches at once number two versions. Assistant
//     searches filter name and metadata in the process.
//   - agentgraph_server_crons (schema version 3): one row per cron, with
//     next_run_at, its next due time (NULL once it fires no more).
//     [Backend.FireCron] sets it from the due time it read to the next,
//     WHERE next_run_at is still the one read, in the write transaction
//     that creates the tick's run: of processes firing one tick at once,
//     one changes the row and makes the run, the others change nothing.
//     A thread's crons are deleted with it; cron searches filter metadata
//     in the process.
//
// Times are Unix nanoseconds; JSON columns carry CHECK (json_valid(…)),
// so that SQLite refuses malformed JSON. Thread searches filter metadata
// and values in the process (SQLite has no JSON containment operator), so
// a search reads every thread of the status asked.
//
// # Damaged data
//
// A row whose column does not hold what the Backend wrote (SQLite does not
// enforce column types) fails the read with a [*CorruptRowError] naming
// the table, the row and the column. A run whose row cannot be handed
// over is ended "error" by the claim that meets it, with a result that
// says why, and the queue goes on; a run whose kwargs are JSON of the
// wrong shape is handed over as stored, and the server fails it with an
// error that says so. A damaged file fails with a [*CorruptFileError].
// Both match [ErrCorrupt].
package sqlite
