// Package backendtest implements support for testing implementations of
// [server.Backend], in the manner of testing/slogtest.
//
// A backend's tests call [Run] with a function that returns a new, empty
// backend:
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, func(t *testing.T) server.Backend {
//			b, err := mybackend.Open(t.Context(), filepath.Join(t.TempDir(), "db"))
//			require.NoError(t, err)
//			t.Cleanup(func() { b.Close() })
//			return b
//		})
//	}
//
// Run executes one subtest per promise of the Backend contract: threads
// created, read, searched, patched and deleted; runs created under each
// multitask strategy, decided atomically under concurrent creation; the
// queue's order; claims that never hand one run to two holders, from
// concurrent claimers; leases that expire and are taken over with a
// higher attempt; a holder whose lease was lost refused on every write;
// cancellation of pending and running runs; rollbacks; deletion of a
// thread with a running run; events appended and read from an offset;
// kwargs handed over as stored, whatever their shape, without blocking
// the queue; assistants created, read, searched, patched into versions
// (distinct ones under concurrent patches), set back to a version and
// deleted, leaving their runs; and, for a backend that is a
// [server.RunWatcher], watches woken at a run's changes made through
// either instance. A failing subtest logs the promise it checks. The cases that
// need two instances of the backend on one database — two processes —
// run only with [WithSecondInstance].
package backendtest
