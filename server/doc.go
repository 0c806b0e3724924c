// Package server serves compiled graphs over the LangGraph Server API, so
// that the official LangGraph clients (the JS and Python SDKs, useStream)
// drive Go graphs unchanged.
//
// # Serving a graph
//
//	saver, err := sqlite.Open(ctx, "agent.db") // any checkpoint.Saver (checkpoint/sqlite here)
//	g, _ := b.Compile(graph.WithCheckpointer(saver))
//	srv, err := server.New(
//		server.Graph("agent", g),       // any state type
//		server.WithCheckpointer(saver), // thread deletion deletes checkpoints
//		server.WithStore(st),           // the /store routes
//		server.WithAuthToken(os.Getenv("AGENTGRAPH_TOKEN")),
//	)
//	http.ListenAndServe(":2024", srv)
//
// and from JavaScript:
//
//	const client = new Client({ apiUrl: "http://localhost:2024", apiKey: token });
//	for await (const c of client.runs.stream(threadId, "agent", { input: { topic: "cats" } })) …
//
// The package imports no database driver: the program passes its saver
// and store. [New] refuses to build a server without [WithAuth],
// [WithAuthToken] (the token is read from "Authorization: Bearer" or the
// SDKs' "x-api-key") or the explicit [WithoutAuthLoopbackOnly], which
// answers loopback clients only (see Auth below). [WithCORS] opens it to browser pages of
// the origins given. Bodies are bounded by [WithMaxBodyBytes]
// (413 beyond). Errors answer {"detail": "..."} with a 4xx that names the
// problem; the SDKs retry 5xx, so nothing a client caused is a 5xx.
//
// # Auth
//
// Every request but GET /ok (the health check, public) is authenticated:
// [WithAuth] takes an [Authenticator], which turns a request into an
// [Identity] (an ID, a display name, permissions) or refuses it (401, or
// 403 for credentials it read and refuses, [ErrForbidden]);
// [TokenAuthenticator] maps bearer tokens to identities, and
// [WithAuthToken] is its one-token case. [WithAuthorizer] then decides,
// per [Resource] (threads, runs, assistants, crons, store) and [Action]
// (create, read, update, delete, search), what an identity may do, as
// LangGraph Platform's custom auth does: it refuses (403), tags what is
// created or updated (its metadata) and returns a metadata filter that
// what is read, changed or deleted must hold — a thread it hides answers
// 404, as one that does not exist, and a search finds only what holds it.
// [OwnerPolicy] is the ready one: a user's threads (their state, history,
// runs and copies), runs and assistants get metadata "owner" set to the
// user's ID, which no request can change, and are the user's alone; a
// store namespace must start with the user's ID. The graphs' own
// assistants are every identity's to read and run. It applies with or
// without [WithBackend]: every request goes through the same handlers.
//
//	auth, err := server.TokenAuthenticator(map[string]server.Identity{
//		aliceToken: {ID: "alice"}, bobToken: {ID: "bob"},
//	})
//	srv, err := server.New(server.Graph("agent", g), server.WithCheckpointer(saver),
//		server.WithBackend(backend), server.WithAuth(auth), server.WithAuthorizer(server.OwnerPolicy()))
//
// # State as JSON
//
// A run's input, a Command's update and a state update are JSON objects
// keyed by the state struct's json names (the Go field name without a
// tag), matched ignoring case as encoding/json does (an exact match wins;
// fields that differ only in case need one). Each field is written as a
// node would write it, through its reducer: a [state.Value] is set, a
// [state.Append] takes a list of items to append, a [state.Sum] or
// [state.Reduced] one update, a [state.Map] an object of entries to merge,
// [state.Messages] a list of messages — in LangChain's form ({"type":
// "human", "content": …}), OpenAI's ({"role": "user", …}) or package
// state's; a message without an id gets a UUID, and {"type": "remove",
// "id": …} removes one. An unknown field, or a value of the wrong shape, is
// a 400 before any run is made. State comes back as the struct's JSON,
// messages as LangChain serializes them (type, content, id, tool_calls,
// tool_call_id, …), so that useStream and the SDKs' message helpers read
// them; the "updates" stream shows each task's writes the same way (the
// items appended, not the whole list). GET /assistants/{id}/schemas describes the fields as JSON Schema,
// GET /assistants/{id}/graph draws the graph as nodes and edges.
//
// # What is served
//
//   - assistants: one system assistant per graph, with the id LangGraph
//     servers give it (a UUIDv5 of the graph name); create, get, search,
//     graph, schemas. A graph name is accepted wherever an assistant id is.
//   - threads: create, get, search, delete (with its checkpoints when the
//     saver is a [checkpoint.ThreadDeleter]), state (GET, GET at a
//     checkpoint, POST to update as a node), history (POST and GET).
//   - assistants also: count, patch, delete, versions and latest (of
//     assistants other than the graphs' own); threads also: patch
//     (metadata), count, and copy (a new thread with the source's
//     metadata, state and every checkpoint, through
//     [checkpoint.CopyThread] on the server's checkpointer).
//   - runs on a thread: background (POST …/runs), streaming (…/runs/stream,
//     SSE), wait, join, join as a stream (with Last-Event-ID), cancel, get,
//     list, delete. Input or command {resume, update, goto}; checkpoint_id to
//     replay or fork; interrupt_before/after; on_disconnect; config.
//     recursion_limit.
//   - stateless runs (POST /runs, /runs/stream, /runs/wait) on a thread of
//     their own, deleted when the run ends unless on_completion is "keep".
//   - store: put, get, delete, search, namespaces on a [store.Store].
//   - crons, with a Backend that keeps them ([CronBackend]: server/sqlite,
//     server/postgres, and the [MemoryBackend] of a server without
//     [WithBackend]): create (POST /runs/crons, or
//     /threads/{id}/runs/crons for a cron whose runs all run on that
//     thread), search, count, patch, delete; see Crons below.
//
// # Streams
//
// A stream is Server-Sent Events, one compact JSON object per data line:
// "metadata" first ({run_id, thread_id, attempt}), then events of the
// modes asked ("values", "updates", "custom", "messages" for
// messages-tuple, "tasks", "checkpoints", "debug"), "error" ({error,
// message}) if the run failed, and "end", recorded with the run's end:
// a client that read "end" finds the run ended and its thread free for
// the next run (a resume with the default "reject" strategy is not
// refused as busy). With stream_subgraphs, the events of subgraphs come
// too, named "<mode>|<node>:<task id>" and showing the subgraph's own
// state. The mode "messages" sends, per
// message a node streams, "messages/metadata" once and then
// "messages/partial" with the text so far after each token, and after each
// step "messages/complete" with the state's messages not sent before. The
// mode "events" is refused with 422. Event ids count from 0 per run;
// every event of a pending or running run is kept, so a client joining
// with GET …/runs/{id}/stream gets the run from its start (or after the
// Last-Event-ID it sends) and then live events. Once a run ended, a
// [Backend] given with [WithBackend] keeps its events until it or its
// thread is deleted; without one, the events of a stream_resumable run
// are kept up to [WithKeptEventBytes] (past it a join gets an "error"
// event, EventsDropped), those of another run are dropped once no stream
// reads them (a join gets its "end" alone). When a run pauses, "updates"
// and "values" carry {"__interrupt__": [{id, value}]}.
//
// # Runs and multitask strategies
//
// A thread runs one run at a time: in this process by default, in all the
// processes sharing a [Backend] with [WithBackend]. A run created while
// another is pending or running follows its multitask_strategy: reject
// (the default) answers 409, enqueue queues it (runs start oldest first),
// interrupt cancels the current run and starts the new one after it
// stopped, rollback cancels the current run, deletes it and starts the new
// one from the checkpoint the cancelled run started from (its checkpoints
// stay in the history as an abandoned branch; on a thread that had none,
// the thread's checkpoints are deleted); both end the thread's pending
// runs as well (interrupt cancels them, rollback deletes them). Cancelled
// runs end "interrupted";
// a run that paused at an interrupt ends "success" and leaves its thread
// "interrupted"; a failed run ends "error", as does its thread.
// [Server.Shutdown] refuses new runs; without [WithBackend] it cancels
// every run, with one it hands its runs back (see below).
//
// A cancelled run's node that ignores its context is abandoned by the
// graph runtime, which does not wait for it (see package graph); the
// thread's next run waits for it all the same (graph.WithAbandonedNodes),
// so that one thread's runs never overlap — and a node that never returns
// keeps its thread busy. Without [WithBackend], the server remembers the
// last [DefaultKeptRuns] ended runs ([WithKeptRuns]) and forgets older
// ones.
//
// # One code path
//
// The package is three layers: the HTTP handlers (parsing and checking a
// request, answering it), the run service (a dispatcher that claims runs
// from the Backend, executes each under a lease it renews, records its
// events and ends it; and the waits, joins and streams that read them
// back), and the [Backend], which stores threads, runs, events and
// assistants and decides the multitask strategies. Every server has a
// Backend: the one given with [WithBackend], or else a [MemoryBackend] of
// its own, which passes the same conformance suite (server/backendtest)
// as the SQL ones. A behaviour is built once, whichever keeps the rows.
//
// # One process or several
//
// A server keeps three things, each where its option says:
//
//   - the threads' state and history: the checkpointer
//     ([WithCheckpointer]; checkpoint/sqlite, checkpoint/postgres);
//   - the /store items: the store ([WithStore]; store/sqlite,
//     store/postgres);
//   - the thread records (metadata, status, values shown), the runs, their
//     queue and their streams' events: the [Backend] ([WithBackend];
//     server/sqlite, a SQLite file, for one process or several on one
//     machine; server/postgres, for processes on any number of machines).
//
// Without [WithBackend], threads, runs and assistants are held in the
// server's own [MemoryBackend]: a restart forgets them, though the
// checkpoints stay in the saver. Such a server runs as many runs at once
// as there are threads with one (unless [WithWorkers]), keeps the graphs'
// own thread leases (graph.WithLeaseTTL), and, having no other process to
// hand a run to, cancels its runs at [Server.Shutdown]. The
// SQLite packages may share one file, as examples/graphserver does with
// server/sqlite as its backend: then everything survives a restart.
//
// With [WithBackend], threads, runs and assistants live in the backend,
// shared by every server process using it: a thread created through one
// process is read, searched and run on through any other. A run is queued there; each
// process executes the runs it claims — of the graphs it serves only, so
// processes may serve different graphs during a rolling deploy —
// ([WithWorkers] at once) under a lease it renews
// ([WithRunLeaseTTL]). A process that dies stops renewing: once its lease
// expired another process claims the run and resumes it from the thread's
// last checkpoint that run wrote (from its input again if it wrote none);
// a process that lost a lease can no longer renew it, record the run's
// events or end it. The backend applies the multitask strategies against
// its shared rows, so a reject, an enqueue, an interrupt or a rollback
// through one process sees the runs of all. A cancel, or an interrupt or
// rollback, through any process flags the run in the backend; the process
// executing it reads the flag at its next lease renewal (at once when it
// is the same process). A run's events are recorded in the backend, so its
// stream, join and wait are served by any process, live (told of the
// run's changes by a Backend that is a [RunWatcher], as server/postgres
// and server/sqlite are; polled every [WithPollInterval] otherwise), and stay
// until the run or its thread is deleted ([WithKeptRuns] does not apply).
// [Server.Shutdown] stops claiming and gives the runs it executes back to
// the backend, where another process resumes them. The assistants other
// than the graphs' own live in the backend too, with their versions: one
// created or patched through any process is read, searched and run
// through every other (a process refuses a run of an assistant whose
// graph it does not serve); the graphs' own assistants stay computed by
// each process, never stored. The graphs should be
// compiled with the saver the processes share; its thread leases
// (graph.WithLeaseTTL) keep apart a run and a state update made meanwhile.
// Deleting a thread cancels its running runs, waits until they ended
// (a run of a process that died or was paused ends once its lease
// expired), and deletes the thread's checkpoints under the thread's
// lease: a process paused past its leases that wakes up has its writes
// refused (*checkpoint.FencedError), and the thread stays deleted.
//
// # Faults
//
// A fault of the backend or the saver that may pass ([IsTransient]: a
// lost or refused connection, a timeout such as a connection attempt
// timing out, a serialization failure, a deadlock, SQLITE_BUSY) never
// fails a run. A process retries the call, backing off, for about four
// seconds; when it still fails, or when the graph stopped on such a fault
// of its saver, the process releases the run to the backend, where it is
// claimed again (its attempt counts up) and resumes from its last
// checkpoint, as a run taken over from a dead process does (a node whose
// writes the fault lost runs again; a retried event whose first try was
// recorded after all is in the stream twice). Only the graph's own errors
// (a node's, even one that is a connection error, a recursion limit, an
// invalid update) fail a run; the error names its kind (a
// ValidationError is a request the server refused, never a fault). A
// request whose backend call meets such a fault answers 503 with
// Retry-After (the SDKs retry it); a wait, join or stream of a run waits
// the fault out. A fault that never passes keeps its run queued, attempt
// after attempt, until the run is cancelled. A server without
// [WithBackend] runs a run that stopped on such a fault of its saver again
// from its last checkpoint, 30 attempts at most (about half a minute),
// then ends it "error"; a fenced write ends its run at once (a holder
// outside the server took the thread over), as does any fault when the
// server was given no [WithCheckpointer] to resume from.
//
// # Crons
//
// A cron creates a run on a schedule: five fields (minute, hour, day of
// month, month, day of week) or @hourly, @daily, @weekly, @monthly,
// @yearly, read in its timezone (an IANA name; UTC by default, from the
// system's zone database), until its end_time if it has one. The run is
// the one its creation asked for (input, config, metadata, stream_mode,
// multitask_strategy, … checked as a run's creation is): on its thread,
// or, for a cron without one, on a new thread of its own, deleted once
// the run ended unless on_run_completed is "keep". The cron's next due
// time is stored; every process with the Backend looks for the crons due
// every ten poll intervals (at most a second; [WithPollInterval]), fires
// those of the graphs it serves, and [CronBackend.FireCron] makes each
// tick fire once whatever the number of processes. A tick due while no
// process ran is fired when one starts — once, however many were
// missed — and the next tick is the first after that. A tick whose run
// cannot be made (the thread busy under the default reject strategy,
// the thread or the assistant deleted) is passed over, logged; a tick
// met by a fault of the Backend is fired at the next look. Deleting a
// thread deletes its crons; a deleted or disabled cron does not fire;
// [WithClock] sets the clock crons are due by.
//
// Cancel with action=rollback and webhooks are not served yet.
package server
