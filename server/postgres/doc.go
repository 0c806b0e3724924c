// Package postgres is a [server.Backend] in PostgreSQL: the threads, runs
// and assistants of any number of graph server processes sharing one
// database.
//
//	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL")) // the program opens the pool
//	b, err := postgres.New(ctx, pool)                          // creates or migrates the tables
//	defer b.Close()                                            // its LISTEN connection
//	saver, err := pgsaver.Open(ctx, os.Getenv("DATABASE_URL")) // checkpoint/postgres: the checkpoints
//	g, _ := builder.Compile(graph.WithCheckpointer(saver))
//	srv, err := server.New(server.Graph("agent", g), server.WithCheckpointer(saver), server.WithBackend(b), …)
//
// The package never opens a connection itself, and never closes the pool:
// its one long-lived connection, the LISTEN of [Backend.WatchRun], is
// taken out of the pool.
//
// # Notifications
//
// The requests that wait on a run (a stream, a join, a wait) wait for a
// notification, not a poll: [Backend.WatchRun] makes the Backend a
// [server.RunWatcher]. Each write that changes a run as they see it sends
// NOTIFY in its own transaction, on a channel named after the Backend's
// schema (agentgraph_server_<schema>); one LISTEN connection per Backend
// wakes the local requests of the run named, whichever process wrote.
// The watched runs are polled, all in one query, only as a fallback:
// every [WithSafetyPollInterval] while LISTEN is in effect, every
// [WithPollInterval] while the connection is down and being opened again.
// 1,000 idle join streams on one process add no transaction to the
// database's count (TestIdleWatchersCostTheDatabaseNoTransactions).
//
// # Schema
//
// [New] runs the pending migrations in one transaction under an advisory
// lock and records them in agentgraph_server_schema_migrations; a schema
// written by a newer version of this package makes New fail with a
// [*SchemaVersionError]. The tables, in the first schema of the pool's
// search_path, are:
//
//   - agentgraph_server_threads: one row per thread (metadata, values and
//     interrupts as jsonb, status, and reset_to: the checkpoint a rollback
//     left the thread at).
//   - agentgraph_server_runs: one row per run, queued in the order of seq;
//     status pending, running, success, error or interrupted; kwargs
//     (jsonb); the lease of a running run (holder, attempt, lease_expires)
//     and its cancel flag (cancel_reason, rollback). A partial unique index
//     on thread_id where status = 'running' makes the database refuse a
//     second running run on a thread, whatever the processes do.
//   - agentgraph_server_events: the events of each run's stream, keyed by
//     (run_id, id), so that any process serves the stream of a run another
//     one executes. They are deleted with their run or thread.
//   - agentgraph_server_assistants (schema version 2): one row per
//     assistant other than the graphs' own, as its current version says,
//     with last_version, the highest version made; and
//     agentgraph_server_assistant_versions: every version, keyed by
//     (assistant_id, version). A patch numbers its version from the
//     assistant's row, which its update locks, so two patches at once
//     number two versions.
//   - agentgraph_server_crons (schema version 3): one row per cron, with
//     next_run_at, its next due time (NULL once it fires no more).
//     [Backend.FireCron] sets it from the due time it read to the next,
//     WHERE next_run_at is still the one read, first in the transaction
//     that creates the tick's run: of processes firing one tick at once,
//     one changes the row and makes the run, the others change nothing.
//     A thread's crons are deleted with it.
//
// # Queue and leases
//
// A run is created pending in the transaction that applies its multitask
// strategy with the thread's row locked, so two processes creating runs
// on one thread are serialized. [Backend.ClaimRun] picks, with SELECT …
// FOR UPDATE SKIP LOCKED, the oldest run that is either pending and the
// oldest pending run of a thread with no running run, or running with an
// expired lease (its process died); it sets the holder, increments the
// attempt and sets lease_expires from the database's clock. Every update
// of a claimed run is fenced by (holder, attempt, status = 'running'):
// a process that lost its lease can neither renew it, nor append events,
// nor finish the run. A run whose lease expired while it was flagged
// cancelled is ended "interrupted" (or, for a rollback, deleted) by the
// next claim instead of being run again. Kwargs are jsonb, so the database
// refuses malformed JSON; a run whose kwargs do not decode into a run's
// parameters (a bad write by hand) fails with an error that says so, and
// the queue goes on. PostgreSQL's jsonb cannot hold the character U+0000:
// in the JSON this package stores (a run's input and metadata, a thread's
// metadata and values, a run's result, an assistant's config, context and
// metadata) it becomes U+FFFD — refusing the value would fail a finished
// run's bookkeeping again at every attempt. The checkpoints' values and
// the runs' events keep it; checkpoint metadata becomes U+FFFD too (see
// package checkpoint/postgres).
package postgres
