package postgres

// MigrationsForTest returns the schema migrations, to build a database of
// an older version.
func MigrationsForTest() [][]string { return migrations }

// WatchStatsForTest returns how many runs requests of b's process watch,
// how many polls b's hub made and how many LISTEN connections b opened.
func WatchStatsForTest(b *Backend) (watched int, polls, connects int64) {
	return b.watch.Watched(), b.watch.Polls(), b.lis.connects.Load()
}

// WokenForTest returns how many times a poll of b's hub woke the
// watchers of a run.
func WokenForTest(b *Backend) int64 { return b.watch.Woken() }

// DeafForTest makes b's listener drop (deaf) or deliver the notifications
// it receives.
func DeafForTest(b *Backend, deaf bool) { b.lis.deaf.Store(deaf) }

// ChannelForTest returns b's NOTIFY channel.
func ChannelForTest(b *Backend) string { return b.channel }

// LiveForTest reports whether b takes its LISTEN connection for live:
// open, and its pings come back.
func LiveForTest(b *Backend) bool { return b.lis.up.Load() }

// PingsForTest returns the pings b sent and the last it received.
func PingsForTest(b *Backend) (sent, got int64) { return b.lis.sent.Load(), b.lis.got.Load() }
