package sqlitedb

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// Checkpointing: in WAL mode a commit appends the pages it changed to the
// WAL file, and a checkpoint copies them back into the database file (and,
// unless synchronous is OFF, syncs it). SQLite's own automatic checkpoint
// runs inside the commit that takes the WAL past wal_autocheckpoint pages,
// so the writer stops writing while it copies and syncs. A DB opened on a
// file instead checkpoints on a connection and goroutine of its own: every
// commit of the writer wakes the checkpointer, which runs a PASSIVE
// checkpoint (it never blocks the writer or readers) and then sleeps at
// least checkpointInterval, so that it syncs the file at most that often
// however busy the writer is. The writer's own automatic checkpoint stays
// as a backstop, at writerAutocheckpoint pages, for a checkpointer that
// cannot keep up or cannot finish (another process checkpointing, a
// reader holding an old snapshot).
//
// The price is disk: SQLite restarts the WAL from its start only when a
// write transaction begins with every frame copied, and under steady
// writing the next commit always lands before the checkpointer is done,
// so the WAL grows to the backstop (about 40 MiB with 4 KiB pages) before
// the writer's own checkpoint lets it restart, where SQLite's default
// keeps it near 4 MiB; the file keeps that size until the database is
// closed. A lower backstop costs the writer that checkpoint's sync more
// often: with 1,000 or 2,000 pages a single thread's W5 sync step took
// 195 and 186 µs, with 10,000 152 µs (median of 5, alternating).
const (
	// checkpointInterval is the least time between two checkpoints of the
	// checkpointer.
	checkpointInterval = 10 * time.Millisecond
	// writerAutocheckpoint is the writer connection's wal_autocheckpoint,
	// in pages (SQLite's default is 1,000).
	writerAutocheckpoint = 10000
	// writerCacheKiB caps the writer connection's page cache (PRAGMA
	// cache_size, negative: in KiB; SQLite's default is 2,000 KiB). The
	// cache only grows with the pages a connection reads, so a small
	// database costs no more than before; a large one that many threads
	// write at random places stops re-reading the index pages its
	// transactions touch.
	writerCacheKiB = 64 << 10
)

// checkpointer runs the checkpoints of a DB on a file.
type checkpointer struct {
	db   *sql.DB       // one connection of its own
	wake chan struct{} // a commit happened; capacity 1
	stop chan struct{} // closed by close
	done chan struct{} // closed when run returns

	closeOnce sync.Once
	closeErr  error
}

// newCheckpointer starts the checkpointer of the database file named by
// uri (its DSN).
func newCheckpointer(uri string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	c := &checkpointer{db: db, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c, nil
}

// committed tells the checkpointer that the writer committed. It never
// blocks.
func (c *checkpointer) committed() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run checkpoints after each wake-up, no more often than
// checkpointInterval, until close.
func (c *checkpointer) run() {
	defer close(c.done)
	pause := time.NewTimer(0)
	<-pause.C
	for {
		select {
		case <-c.stop:
			return
		case <-c.wake:
		}
		// A failed checkpoint (SQLITE_BUSY while another connection or
		// process checkpoints, or an I/O error, which the writer meets
		// too) is left to the next one or to the writer's backstop.
		_, _ = c.db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
		pause.Reset(checkpointInterval)
		select {
		case <-c.stop:
			pause.Stop()
			return
		case <-pause.C:
		}
	}
}

// close stops the checkpointer, waiting for a checkpoint in progress, and
// closes its connection. Later calls return the first one's error.
func (c *checkpointer) close() error {
	c.closeOnce.Do(func() {
		close(c.stop)
		<-c.done
		c.closeErr = c.db.Close()
	})
	return c.closeErr
}
