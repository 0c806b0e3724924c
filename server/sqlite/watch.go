package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentgraph/agentgraph/internal/sqlitedb"
	"github.com/agentgraph/agentgraph/server/internal/runwatch"
)

// WatchRun implements [server.RunWatcher] with one poller per Backend:
// while requests of this process wait on runs, the poller reads, every
// poll interval ([WithPollInterval]), the status and last event of all
// those runs in one query, and wakes the requests of the runs that
// changed; the changes this Backend makes itself (an event appended, a
// run finished, cancelled or deleted) wake them at once. However many
// requests wait, the process makes one poll query per interval, and none
// while nothing is watched.
func (b *Backend) WatchRun(runID string) (<-chan struct{}, func()) {
	return b.watch.Watch(runID)
}

// read runs fn in a read transaction, counted: the reads of the runs
// watched (Run, Events and the poll), which the tests count.
func (b *Backend) read(ctx context.Context, fn func(sqlitedb.Tx) error) error {
	b.reads.Add(1)
	return b.db.Read(ctx, fn)
}

// marks reads what the poller compares of the runs ids names.
func (b *Backend) marks(ctx context.Context, ids []string) (map[string]runwatch.Mark, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("server/sqlite: encoding run ids: %w", err)
	}
	out := make(map[string]runwatch.Mark, len(ids))
	err = b.read(ctx, func(tx sqlitedb.Tx) error {
		clear(out)
		rows, err := tx.Query(`SELECT r.run_id, r.status, COALESCE((SELECT max(e.id) FROM `+eventsTable+` e WHERE e.run_id = r.run_id), -1)
			FROM `+runsTable+` r WHERE r.run_id IN (SELECT value FROM json_each(?1))`, string(list))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			m := runwatch.Mark{Exists: true}
			if err := rows.Scan(&id, &m.Status, &m.LastEvent); err != nil {
				return err
			}
			out[id] = m
		}
		return rows.Err()
	})
	return out, wrap(err, "polling %d watched runs", len(ids))
}

// changed wakes this process's requests waiting on run id once a write
// to it committed (err is nil); other processes' see it at their next
// poll.
func (b *Backend) changed(err error, id string) {
	if err == nil {
		b.watch.Changed(id)
	}
}
