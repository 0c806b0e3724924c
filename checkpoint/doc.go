// Package checkpoint stores the state of graph runs between supersteps, so
// that a run can pause for a human and resume, survive a crash, and be
// inspected or forked from any past step.
//
// A [Checkpoint] is bytes and IDs: the JSON of each state channel with its
// version ([Channel]), the runtime's frontier (what runs next), [Metadata]
// and the graph's shape. A checkpoint given to [Saver.Put] carries only the
// values that changed since its parent; a [Tuple] read back carries them
// all, with the pending writes of the tasks that ran against it.
//
// [Saver] is the interface a storage backend implements: Get, Put,
// PutWrites and List. Optional capabilities are further interfaces, such as
// [ThreadDeleter], found by type assertion. Three savers ship with the
// module, and all pass the same conformance suite, checkpointtest.Run:
//
//   - [NewMemory], in this package, for tests and short-lived programs;
//   - checkpoint/sqlite, a file (pure Go, WAL): the embedded default;
//   - checkpoint/postgres, for several processes sharing threads.
//
// A graph uses a saver when compiled with graph.WithCheckpointer:
//
//	saver, err := sqlite.Open(ctx, "runs.db")
//	g, err := b.Compile(graph.WithCheckpointer(saver))
//	out, err := g.Invoke(ctx, input, graph.WithThread("thread-1"))
//
// Checkpoint IDs ([NewID]) are time-ordered, so sorting IDs sorts
// checkpoints by creation.
package checkpoint
