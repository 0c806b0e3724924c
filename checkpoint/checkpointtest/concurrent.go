package checkpointtest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// concurrentThreads is how many threads the concurrent cases write at
// once; concurrentSteps how many checkpoints each writes.
const concurrentThreads, concurrentSteps = 32, 8

// concurrentCases check the writes of many threads made at once on one
// saver, which a saver may commit together (group commit): each keeps its
// thread's order and each caller gets its own result.
var concurrentCases = []testCase{
	{
		name:        "concurrent-threads-keep-order",
		explanation: "Puts and PutWrites of many threads made at the same time, each thread by one writer that waits for each write, all succeed and all land: each thread lists its checkpoints in the order its writer put them, each with its values and its pending write",
		run: func(e *env) {
			var wg sync.WaitGroup
			errs := make([]error, concurrentThreads)
			start := make(chan struct{})
			for i := range concurrentThreads {
				wg.Go(func() {
					<-start
					errs[i] = e.writeChain(fmt.Sprintf("cc%d", i))
				})
			}
			close(start)
			wg.Wait()
			for i := range concurrentThreads {
				thread := fmt.Sprintf("cc%d", i)
				require.NoError(e.t, errs[i], "thread %s", thread)
				n := concurrentSteps
				for tup, err := range e.s.List(e.ctx, thread, checkpoint.ListOptions{}) {
					require.NoError(e.t, err)
					require.Equal(e.t, n-1, tup.Metadata.Step, "thread %s: checkpoints newest first", thread)
					require.Equal(e.t, chainValue(thread, n-1), string(tup.Value("n")), "thread %s step %d", thread, n-1)
					require.Len(e.t, tup.PendingWrites, 1, "thread %s step %d", thread, n-1)
					require.Equal(e.t, chainValue(thread, n-1), string(tup.PendingWrites[0].Value))
					n--
				}
				require.Zero(e.t, n, "thread %s: checkpoints missing", thread)
			}
		},
	},
	{
		name:        "concurrent-conflict-refused-alone",
		explanation: "Among Puts of many threads made at the same time, two Puts of children of one checkpoint of one thread (not forks) race: exactly one succeeds and the other fails with a *checkpoint.ConflictError; every other thread's Put succeeds and lands",
		run: func(e *env) {
			parents := make([]*checkpoint.Checkpoint, concurrentThreads)
			for i := range parents {
				parents[i] = chainCheckpoint(fmt.Sprintf("cr%d", i), 0, "")
				require.NoError(e.t, e.s.Put(e.ctx, parents[i].Clone()))
			}
			children := make([]*checkpoint.Checkpoint, concurrentThreads+1)
			for i := range concurrentThreads {
				children[i] = chainCheckpoint(parents[i].ThreadID, 1, parents[i].ID)
			}
			// A rival child of thread cr0's parent, with another value
			// under another version.
			rival := chainCheckpoint("cr0", 2, parents[0].ID)
			rival.Metadata.Step = 1
			children[concurrentThreads] = rival
			errs := make([]error, len(children))
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i, cp := range children {
				wg.Go(func() {
					<-start
					errs[i] = e.s.Put(e.ctx, cp.Clone())
				})
			}
			close(start)
			wg.Wait()
			for i := 1; i < concurrentThreads; i++ {
				require.NoError(e.t, errs[i], "thread %s", children[i].ThreadID)
				got, err := e.s.Get(e.ctx, checkpoint.Ref{ThreadID: children[i].ThreadID})
				require.NoError(e.t, err)
				require.Equal(e.t, children[i].ID, got.ID, "thread %s", children[i].ThreadID)
			}
			first, second := errs[0], errs[concurrentThreads]
			require.True(e.t, (first == nil) != (second == nil), "exactly one of two racing children succeeds: got %v and %v", first, second)
			winner, loser, lost := children[0], rival, second
			if first != nil {
				winner, loser, lost = rival, children[0], first
			}
			var ce *checkpoint.ConflictError
			require.True(e.t, errors.As(lost, &ce), "the loser gets a *checkpoint.ConflictError, got %v", lost)
			require.Equal(e.t, loser.ID, ce.CheckpointID)
			got, err := e.s.Get(e.ctx, checkpoint.Ref{ThreadID: "cr0"})
			require.NoError(e.t, err)
			require.Equal(e.t, winner.ID, got.ID)
			require.Equal(e.t, string(winner.Channels[0].Value), string(got.Value("n")))
		},
	},
}

// writeChain puts concurrentSteps checkpoints on thread, each the child
// of the one before with a pending write; it may run on any goroutine.
func (e *env) writeChain(thread string) error {
	parent := ""
	for step := range concurrentSteps {
		cp := chainCheckpoint(thread, step, parent)
		if err := e.s.Put(e.ctx, cp.Clone()); err != nil {
			return fmt.Errorf("put step %d: %w", step, err)
		}
		w := checkpoint.Write{TaskID: "task", Channel: "n", Value: []byte(chainValue(thread, step))}
		if err := e.s.PutWrites(e.ctx, checkpoint.Ref{ThreadID: thread, ID: cp.ID}, []checkpoint.Write{w}); err != nil {
			return fmt.Errorf("put writes of step %d: %w", step, err)
		}
		parent = cp.ID
	}
	return nil
}

// chainCheckpoint returns the checkpoint of step of a chain on thread: its
// channel n holds chainValue(thread, step) at version step+1.
func chainCheckpoint(thread string, step int, parent string) *checkpoint.Checkpoint {
	return &checkpoint.Checkpoint{
		ID: checkpoint.NewID(), ThreadID: thread, ParentID: parent,
		Metadata: checkpoint.Metadata{Source: "loop", Step: step},
		Channels: []checkpoint.Channel{{Name: "n", Version: int64(step + 1), Value: []byte(chainValue(thread, step))}},
	}
}

func chainValue(thread string, step int) string { return fmt.Sprintf(`"%s-%d"`, thread, step) }
