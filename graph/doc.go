// Package graph builds and runs typed state graphs with LangGraph's
// semantics.
//
// A graph works on a state struct S whose fields are channels from package
// state. Nodes are plain functions that read a snapshot of S and return the
// fields they write; edges say what runs next:
//
//	b := graph.New[State]()
//	b.AddNode("plan", plan)
//	b.AddNode("act", act)
//	b.AddEdge(graph.Start, "plan")
//	b.AddConditionalEdges("plan", route, graph.WithPathMap(map[string]string{"act": "act", "done": graph.End}))
//	b.AddEdge("act", "plan")
//	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
//	out, err := g.Invoke(ctx, State{Goal: state.Set("ship it")}, graph.WithThread("t1"))
//
// # Supersteps
//
// A run proceeds in supersteps. Every node triggered for a step runs
// concurrently (at most [WithMaxConcurrency] at once) on the same immutable
// snapshot: a lone task runs on the caller's goroutine; several start on it
// too, more workers join up to GOMAXPROCS when the tasks take longer than
// 100 µs, and when no task could start for a whole such period (the
// running ones block, on I/O or on each other) every waiting task gets a
// goroutine of its own. At the barrier the writes are merged through each
// field's reducer in a deterministic order — triggered nodes by name, then
// Send tasks by index — whatever order the tasks finished in. Two writes to
// a last-value field in one step fail the step with an
// [*InvalidUpdateError] naming the field and the writers. Then a checkpoint
// is saved, and the nodes the step's edges, branches, joins and commands
// chose form the next step. A run ends when nothing is triggered; a run
// that would take more than its recursion limit of supersteps fails with a
// [*RecursionError].
//
// The first error of a step cancels its other tasks and fails the run with
// a [*NodeError] (a panic becomes one too); cancelling the caller's context
// fails it with the context's error. Finished tasks' writes are saved as
// pending writes, so [Graph.Resume] re-runs only the tasks that did not
// finish.
//
// # Timeouts, cancellation and abandoned nodes
//
// The runtime stops waiting for a node when its [WithNodeTimeout] passes
// (the attempt fails with a [*NodeTimeoutError]) or when the caller's
// context is cancelled (Invoke, Resume and the streams return the
// context's error), whether or not the node honours its context. For that,
// each attempt of a node with a timeout, and of every node of a run whose
// context can be cancelled (ctx.Done() is not nil: a deadline, a cancel
// function, and every [Graph.Stream]), runs on a goroutine of its own
// while the step's goroutine waits and relays its events. A node the
// runtime stopped waiting for is abandoned: its goroutine runs on until
// the node returns, on its own copies of its input and task record, so
// nothing it does reaches the run or a later one; what it returns is
// dropped, and it can no longer interrupt or stream. A run with a context
// that cannot be cancelled (context.Background()) and no timeouts starts
// no goroutine per node.
//
// A node that calls runtime.Goexit instead of returning (t.FailNow, or a
// failed testify require, in a test) fails its task with [ErrGoexit] when
// it runs on a goroutine of its own or on one the runtime started for a
// step's tasks. On the caller's goroutine — a context that cannot be
// cancelled, no timeout — nothing can stop Goexit from ending that
// goroutine, as it promises: Invoke then never returns (in a test, the
// test stops as after a t.FailNow of its own), the task is marked failed
// for the [Hooks], and the step's other tasks finish first.
//
// # Edges
//
// [Builder.AddEdge] fans out; [Builder.AddJoin] waits for several nodes,
// possibly finishing in different steps; [Builder.AddConditionalEdges] and
// [Builder.AddBranch] choose at run time, the latter also emitting [Send]
// tasks for map-reduce; [WithDeferred] nodes wait until everything else is
// done; command nodes ([Builder.AddCommandNode]) return a [Command] that
// writes and chooses at once. [Subgraph] turns a compiled graph into a
// node. [Builder.Compile] reports every problem at once in a
// [*CompileError].
//
// # Middleware
//
// A [Middleware] wraps nodes the way net/http middleware wraps handlers:
// logging, policy checks, catching a node's errors to answer the user
// instead of failing the run, routing to an error node. [Builder.Use]
// wraps every node; [WithMiddleware] wraps one. A middleware runs outside
// the node's [RetryPolicy] (it sees the error after the retries) and
// inside the [Hooks]; it lets the pause of an [Interrupt] through (see
// [IsInterrupt]). Package agent/middleware has ready-made ones for model
// calls, tool calls and error handling.
//
//	b.Use(func(next graph.CommandFunc[S]) graph.CommandFunc[S] {
//		return func(ctx context.Context, s S) (graph.Command[S], error) {
//			start := time.Now()
//			c, err := next(ctx, s)
//			log.Printf("%s took %s", graph.NodeName(ctx), time.Since(start))
//			return c, err
//		}
//	})
//
// # Interrupts and time travel
//
// With a checkpointer, a node can call [Interrupt] to ask a human; the run
// returns an [*Interrupted] error and continues with [Graph.Resume] when the
// answer comes, re-running the node from its top. [WithInterruptBefore] and
// [WithInterruptAfter] pause around nodes. A pause needs a checkpoint to
// resume from: without a checkpointer, Interrupt fails its node with an
// error wrapping [ErrNoCheckpointer], and a graph with breakpoints refuses
// to run (compiled without one, it still pauses as the [Subgraph] of a
// graph with one). [Graph.GetState], [Graph.History]
// and [Graph.UpdateState] read and edit a thread's checkpoints, and
// [WithCheckpointID] replays or forks from any of them.
//
// # Changing a graph
//
// A checkpoint records the fingerprint of the graph that wrote it (its
// fields, nodes and edges). A graph of another shape — the next version of
// a program, deployed while threads were paused on a human — continues the
// checkpoint whenever it can, as LangGraph does: nodes and edges added,
// routers changed, nodes removed that have nothing pending. The checkpoint
// says which tasks run next, not how they were chosen, so the paused step's
// tasks run under the new graph, and its edges and routers pick the steps
// after them; a node added before the paused one does not run for that
// thread (the run is past it). A task that finished in the paused step
// keeps the writes and destinations it saved under the old graph. A field
// added to the state starts at its zero value; the stored value of a field
// removed is dropped. A join whose sources changed keeps the sources
// already seen when the new graph has a join to the same target from them.
//
// A checkpoint cannot be continued when it has work pending for a node the
// graph lacks — a task of the next step (the node an [Interrupt] or a
// breakpoint paused included), a [Send], a deferred node, a fired join, the
// destination a task that finished in the paused step chose — or a stored
// value the graph cannot decode (a field's type changed): Resume, GetState
// and UpdateState fail with a [*ShapeMismatchError] naming those nodes and
// fields, and write nothing. Resume such a thread with the graph that wrote
// it (keep serving old versions side by side until their threads finish),
// or give it new input, which drops its pending work as always (an
// undecodable value still keeps it from starting). Run the new graph's
// GetState on the open threads before a deploy to learn which it would
// refuse. A checkpoint of the graph's own shape is read strictly: anything
// unexpected in it is a [*checkpoint.CorruptError].
//
// # Running a step's tasks apart
//
// A runner spread over several processes (package temporal's workflows)
// runs each task of a step on its own: [Graph.GetState] lists the next step's
// tasks with their IDs, a [Graph.Resume] with [WithTasks] runs some of them
// and saves their outcomes without ending the step, and a later Resume
// ends it, merging the saved writes as a run in one process would.
// [Graph.Breakpoints] and [Graph.MaxConcurrency] tell such a runner what
// the graph was compiled with.
//
// # Streaming
//
// [Graph.Stream] yields [Event]s — values, updates (with the [Writes] each
// task made), custom data ([StreamWriter]), LLM tokens ([MessageWriter]),
// task starts and results, checkpoints, and an interrupts event for each
// task that pauses — as an iter.Seq2. [Graph.Invoke] runs the same loop
// and keeps the last state.
//
// Inside a node, [Step], [RemainingSteps], [TaskID] and [NodeName] read the
// task's place in the run. A node's context is an immutable value: a
// goroutine the node started may keep it for as long as it likes, and
// these functions go on answering for that node's task. Once the node
// returned, [Interrupt] through it fails, and what its stream writers
// write is dropped.
package graph
