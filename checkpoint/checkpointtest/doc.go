// Package checkpointtest implements support for testing implementations of
// [checkpoint.Saver], in the manner of testing/slogtest.
//
// A saver's tests call [Run] with a function that returns a new, empty
// saver:
//
//	func TestConformance(t *testing.T) {
//		checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
//			s, err := mysaver.Open(t.Context(), filepath.Join(t.TempDir(), "db"))
//			require.NoError(t, err)
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Run executes one subtest per promise of the Saver contract: storing and
// reading checkpoints by ID and latest, parent links, values carried over
// from ancestor checkpoints, listing with limits, cursors, metadata filters
// and namespaces, pending writes and their idempotency, metadata round
// trips, isolation of threads and namespaces, deleting threads, concurrent
// use, large values, chat messages with tool calls, and cancellation. A
// failing subtest logs the promise it checks. Subtests for optional
// interfaces the saver does not implement, such as
// [checkpoint.ThreadDeleter], are skipped.
package checkpointtest
