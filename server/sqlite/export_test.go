package sqlite

// MigrationsForTest returns the schema migrations, to build a database of
// an older version.
func MigrationsForTest() [][]string { return migrations }

// ReadsForTest returns how many read transactions b began.
func ReadsForTest(b *Backend) int64 { return b.reads.Load() }

// PollsForTest returns how many polls b's poller made.
func PollsForTest(b *Backend) int64 { return b.watch.Polls() }

// WatchedForTest returns how many runs requests of b's process watch.
func WatchedForTest(b *Backend) int { return b.watch.Watched() }
