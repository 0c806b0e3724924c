// Package temporal runs compiled graphs of package graph as Temporal
// workflows, so that a run outlives the process that started it: any
// worker of a task queue carries it on, a killed worker loses no node
// whose writes were saved (side effects run at least once: see below),
// and a run paused for a human waits — for days if need be — for a
// signal carrying the answer.
//
// It is a module of its own (github.com/agentgraph/agentgraph/temporal), so
// that the SDK's users who do not run Temporal never download its
// dependencies. Beside the Temporal SDK's own package temporal, import it
// under another name (agtemporal, say).
//
// # A tour
//
// A graph runs on Temporal as it runs in process; it needs a
// checkpoint.Saver that every worker reaches (checkpoint/postgres for
// workers on several machines, checkpoint/sqlite for workers sharing a
// disk): the state lives there, and Temporal carries references to it.
//
//	g, err := b.Compile(graph.WithCheckpointer(saver))
//	w, err := temporal.New("research", g)
//
// A worker registers the workflow and its activity:
//
//	wk := worker.New(c, "agents", worker.Options{})
//	w.Register(wk)
//	err = wk.Run(worker.InterruptCh())
//
// A starter starts a run on a thread (the workflow ID defaults to the
// thread), and waits for its end:
//
//	run, err := w.Start(ctx, c, "thread-1", State{Goal: state.Set("ship it")},
//		client.StartWorkflowOptions{TaskQueue: "agents"})
//	var st temporal.Status
//	err = run.Get(ctx, &st)
//	out, err := w.Values(ctx, st) // the final state, as Invoke returns it
//
// While it runs, [Query] tells where it stands — its checkpoint, its next
// tasks, its pending interrupts and, when small, its state — and [Answer]
// (a signal) or [AnswerChecked] (an update, which refuses an answer to an
// interrupt the run does not wait on or has an answer to) answer a
// [graph.Interrupt]. Both go through one gate: the first answer to an
// interrupt counts, by signal or by update, and no answer outlives its
// pause:
//
//	st, err := temporal.Query(ctx, c, "thread-1")
//	for _, in := range st.Interrupts {
//		err = temporal.AnswerChecked(ctx, c, "thread-1", in.ID, "approved")
//	}
//
// Visible without a worker: queries need a worker to answer, so the run
// also keeps its [Progress] — running, waiting or finished, its step and
// next nodes, its pending interrupts with the start of their payloads, the
// answers in — in its memo, upserted at every change, and [Describe] reads
// it from the server alone: stop every worker, and a status is still
// answered. [WithSearchAttributes] upserts the status, step and nodes as
// search attributes too (registered in the namespace first), for
// `temporal workflow list --query 'AgentgraphStatus="waiting"'`;
// [WithVisibility] adds the user's own search attributes and memo fields.
// Each change is one more event in the workflow's history.
//
// In tests, the SDK's testsuite runs the workflow offline: register it with
// the test environment instead of a worker, and start it with
// [Workflow.Input] (see the example).
//
// # How a run maps onto Temporal
//
// The workflow code runs the superstep loop, and nothing else. Every task
// of a step — a triggered node or a Send task — runs in an activity of its
// own, the tasks of a step in parallel: the task activity runs the node
// through the graph's own engine ([graph.WithTasks]), with its middleware,
// retry policy and timeout and then its router or branch, and saves its
// writes in the saver as the step's pending writes. Then a step activity
// ends the step — the engine merges the saved writes in its deterministic
// order, runs the Commands' routes, checkpoints — and plans the next: it
// reports the next step's tasks, and the workflow starts their activities.
// A step whose only task is left to run runs it in that step activity,
// saving a round trip (a chain of nodes costs one activity per step).
// Code that calls a model therefore never runs in workflow code, and a
// graph's final state on Temporal is the one Invoke gives (the tests run a
// table of graphs both ways). [WithNodeActivityOptions] gives a node's
// activities their own task queue, timeouts and retry policy.
//
// Breakpoints compiled into the graph ([graph.WithInterruptBefore] and
// [graph.WithInterruptAfter] given to Compile) pause the workflow where they
// pause Invoke; [Answer] with an empty interrupt ID goes on past one.
//
// [WithStepsPerActivity] runs whole supersteps instead — their tasks in
// parallel inside one activity, on one worker — one or several per
// activity, saving Temporal round trips at the cost of coarser
// activities; compiled breakpoints are not honoured at activity boundaries
// then.
//
// Either way every superstep is checkpointed and the writes of a step's
// finished tasks are saved as they finish, so a retried activity — after
// its worker was killed, say — resumes from the saver and runs again only
// the tasks that had not finished.
//
// Side effects run at least once. A node whose writes are saved never
// runs again; a node whose worker dies after the node returned but before
// its writes were saved runs again on the worker that retries its
// activity — in a task activity the window is the saving of the task's
// writes, in a step activity that runs a step's single task it lasts until
// the step's checkpoint — and so does a node whose worker Temporal
// declared dead (no heartbeat within the timeout) while it still ran. A
// node's effects outside the state (a message sent, a payment, a file
// written) must therefore be idempotent: key them by [graph.TaskID],
// which a re-run of the same task keeps.
//
// Failures: a node's [graph.RetryPolicy] and [graph.WithNodeTimeout] act
// inside its activity, as in process. A node that fails for good fails the
// workflow with a non-retryable application error of type [ErrTypeNode]
// ([AsNodeError] reads it back as a [*graph.NodeError]), and so do the other
// errors of the graph that no retry cures ([ErrTypeInvalidUpdate],
// [ErrTypeRecursion], [ErrTypeGraph]). Other errors — a saver out of reach,
// a thread lease still held by a dead worker — are retried by Temporal
// under the activity's retry policy ([WithActivityOptions]; [RetryPolicy]
// converts a graph.RetryPolicy). The activity heartbeats, so a dead worker
// is noticed within the heartbeat timeout; a lease it held is retried for
// when it expires ([ErrTypeLeaseHeld]); a step activity holds it for the
// heartbeat timeout, so a run recovers in about that time (see
// [WithActivityOptions]).
//
// State: the workflow's input carries the input state's writes in their
// checkpoint encoding; activity results, queries and the workflow's result
// carry the state's JSON only up to [WithInlineStateLimit] (64 KiB by
// default) and a reference (thread and checkpoint ID) always, so that a
// large state travels by reference and the workflow's history stays small.
// Two things still travel inline and must stay under Temporal's payload
// limit (2 MB by default): the input state's writes, given to Start, and
// the values a node passes to graph.Interrupt. A long run continues as new
// every [WithContinueAsNewAfter] activities.
//
// Cancellation: cancelling the workflow cancels a run waiting for answers
// at once, and a running step at its next heartbeat (the graph's context
// is cancelled; the workflow waits for the step to stop, so no checkpoint
// is written after it closed). The thread stays consistent: a new run on
// it goes on from its last checkpoint.
//
// Versioning: the options given to [New] are part of the workflow's code.
// Changing the recursion limit or the continue-as-new interval breaks the
// replay of running workflows as changing workflow code does; change them
// with Temporal's versioning, or when no run is open.
//
// Deploying a changed graph: the graph runs in activities, so Temporal's
// replay never sees it, and a run's next activity runs on whatever graph
// the worker that picks it up was built with. There are two ways to
// deploy.
//
//   - In place, for compatible changes: the workers are restarted with the
//     new graph under the same workflow name, and open runs — those paused
//     for days on a human included — carry on under it, as in-process
//     threads do (see "Changing a graph" in package graph): nodes and
//     edges added, routers changed, nodes removed that have no work
//     pending, state fields added or removed. A run whose checkpoint the
//     new graph cannot continue — paused in a node that is gone, or holding
//     a value a changed field type cannot decode — fails for good with an
//     [ErrTypeGraph] error whose message names those nodes and fields.
//     Before such a deploy, the new graph's [graph.Graph.GetState] on each
//     open run's thread (from `temporal workflow list`) tells which would:
//     it fails with the same [*graph.ShapeMismatchError].
//   - Side by side, for incompatible changes: each version is its own
//     [Workflow] under its own name ("research.v1", "research.v2") and one
//     worker registers them all. A run is pinned to the version it started
//     on — the workflow type is recorded in its history — so open runs
//     finish on the old graph while new ones start on the new; a version
//     is dropped from the workers once no run of it is open. The versions
//     may share a saver (their threads are distinct), and [Query] and
//     [Answer] address runs by workflow ID whatever their version.
//
// Streaming: an activity cannot stream to the starter, so events reach a
// caller outside Temporal from the worker side: [WithEvents] hands every
// event of the chosen modes to a function on the worker that runs the
// task or step, which publishes it (on the events bus, a message queue)
// keyed by thread. Queries answer with the state between steps. With
// tasks as activities, the events are those of Stream but for two: a step
// that pauses sends no values event at the pause (its state is sent when
// the step ends), and the step activity that ends a step does not repeat
// the updates its tasks sent (Stream repeats them, marked Cached, on a
// resume); updates of a step's tasks come as the tasks finish.
//
// Limits: with [WithStepsPerActivity], static breakpoints compiled into the
// graph are not honoured at activity boundaries (the engine's Resume skips
// a before-breakpoint at its first step, and a one-step activity ends its
// step with an after-breakpoint of its own); pause with [graph.Interrupt]
// inside a node instead. Changing the workflow code of this package
// between versions follows Temporal's versioning rules for running
// workflows.
package temporal
