package sqlite

// MigrationsForTest returns the schema migrations, to build a database of
// an older version.
func MigrationsForTest() [][]string { return migrations }

// ReadsForTest returns how many reads of runs and events (Run, Events
// and the poller's) b made.
func ReadsForTest(b *Backend) int64 { return b.reads.Load() }

// PollsForTest returns how many polls b's poller made.
func PollsForTest(b *Backend) int64 { return b.watch.Polls() }

// WatchedForTest returns how many runs requests of b's process watch.
func WatchedForTest(b *Backend) int { return b.watch.Watched() }

// WokenForTest returns how many times b's poller woke the watchers of a
// run.
func WokenForTest(b *Backend) int64 { return b.watch.Woken() }
