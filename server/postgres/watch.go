package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentgraph/agentgraph/internal/backoff"
	"github.com/agentgraph/agentgraph/server/internal/runwatch"
)

// Defaults of the options of [New].
const (
	// DefaultSafetyPollInterval is how often the watched runs are polled
	// while the LISTEN connection is up, when [WithSafetyPollInterval] is
	// not given.
	DefaultSafetyPollInterval = 10 * time.Second
	// DefaultListenLinger is how long the LISTEN connection stays open
	// after the last request watching a run ended.
	DefaultListenLinger = 30 * time.Second
)

// An Option configures [New].
type Option func(*options)

type options struct {
	poll, safety, linger time.Duration
}

// WithPollInterval sets how often the runs that requests of this process
// wait on are polled while the Backend's LISTEN connection is down (not
// yet open, or lost and being opened again): default
// [server.DefaultPollInterval]. See [Backend.WatchRun]. A value of zero or
// less keeps the default.
func WithPollInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.poll = d
		}
	}
}

// WithSafetyPollInterval sets how often the runs that requests of this
// process wait on are polled while the LISTEN connection is up, in case a
// notification was lost (default [DefaultSafetyPollInterval]). A value of
// zero or less keeps the default.
func WithSafetyPollInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.safety = d
		}
	}
}

// channelName returns the NOTIFY channel of the Backend's tables in
// schema: channels are per database, so the Backends of two schemas of
// one database keep apart. A name longer than PostgreSQL's identifiers
// (63 bytes) becomes a hash of the schema.
func channelName(schema string) string {
	name := "agentgraph_server_" + schema
	if len(name) > 63 {
		sum := sha256.Sum256([]byte(schema))
		name = "agentgraph_server_" + hex.EncodeToString(sum[:16])
	}
	return name
}

// listener is the state of the Backend's LISTEN connection.
type listener struct {
	open     atomic.Bool  // a LISTEN connection is open
	up       atomic.Bool  // notifications come: LISTEN is in effect, its pings come back
	connects atomic.Int64 // LISTEN connections opened, for the tests
	deaf     atomic.Bool  // notifications are dropped, for the tests
	// The pings each poll sends through the pool, which the LISTEN
	// connection must receive: the last sent, the last received, and
	// since when (Unix nanoseconds) the Backend waits for the next: the
	// last ping received, or the first sent after it.
	sent, got, unanswered atomic.Int64
}

// pingPrefix starts the payload of a ping; a run id (a UUID) never does.
const pingPrefix = "agentgraph:ping:"

// pingGrace is how long a ping may stay unanswered before the LISTEN
// connection is taken for deaf (a pooler in transaction mode delivers no
// notification; a connection may be half-open): the watched runs are then
// polled every poll interval until pings come back.
const pingGrace = 2 * time.Second

// WatchRun implements [server.RunWatcher] with one LISTEN connection per
// Backend. Every write that changes a run as its watchers see it (an event
// appended; the run finished, cancelled, interrupted by a new run, or
// deleted) sends NOTIFY, with the run's id, on the channel of the
// Backend's schema, in the transaction of the write: a process is never
// told of a change it cannot read yet. While requests of this process
// watch runs, the Backend holds one connection taken from the pool
// (pgxpool's Hijack: it leaves the pool, which may open another in its
// place) that LISTENs on the channel and wakes the requests of the run
// named, whichever process wrote; it closes it [DefaultListenLinger]
// after the last watch ended, or at [Backend.Close].
//
// Polling is only a fallback: all the watched runs are read in one query
// every [WithSafetyPollInterval] while LISTEN is in effect, in case a
// notification was lost, and every [WithPollInterval] while it is not —
// before the connection is open, and after it was lost, while the
// Backend opens a new one (backing off up to five seconds between
// tries), after which it polls once more to catch up with the changes
// it missed. Each poll while the connection is open also sends it a
// ping (a NOTIFY in the poll's transaction); a ping unanswered for two
// seconds makes the Backend take the connection for deaf — behind a
// pooler in transaction mode, which delivers no notification, or on a
// half-open connection — and poll every poll interval until a ping comes
// back. However many requests wait, an idle process costs the database
// one transaction per safety interval.
//
// NOTIFY makes PostgreSQL serialize the commits of the transactions that
// send it, a cost paid per event appended rather than per watcher.
func (b *Backend) WatchRun(runID string) (<-chan struct{}, func()) {
	return b.watch.Watch(runID)
}

// Close closes the Backend's LISTEN connection, if open, and waits until
// its goroutines returned; it returns nil (its result makes the Backend an
// io.Closer, as the SQLite one is). It does not close the pool. A Backend that is
// not closed closes the connection [DefaultListenLinger] after the last
// watch ended; runs watched after Close are polled by nobody, so Close a
// Backend only once done serving.
func (b *Backend) Close() error {
	b.watch.Close()
	return nil
}

// pollInterval is the time between two polls of the watched runs.
func (b *Backend) pollInterval() time.Duration {
	if b.lis.up.Load() {
		return b.opts.safety
	}
	return b.opts.poll
}

// listen keeps a LISTEN connection open until ctx is done, opening a new
// one, backing off, when it is lost.
func (b *Backend) listen(ctx context.Context, h *runwatch.Hub) {
	var warned time.Time
	for attempt := 0; ctx.Err() == nil; attempt++ {
		err := b.listenOnce(ctx, h)
		h.SetLive(false)
		if b.lis.up.Swap(false) {
			attempt = 0
			h.PollNow() // poll often until LISTEN is back
		}
		if ctx.Err() != nil {
			return
		}
		if time.Since(warned) > 10*time.Second {
			warned = time.Now()
			slog.Warn("server/postgres: the LISTEN connection failed; polling the watched runs until it is back",
				"channel", b.channel, "err", err)
		}
		if backoff.Sleep(ctx, backoff.Delay(attempt, 100*time.Millisecond, 5*time.Second)) != nil {
			return
		}
	}
}

// listenOnce opens a LISTEN connection and wakes the watchers of the runs
// it is notified of, until the connection fails or ctx is done.
func (b *Backend) listenOnce(ctx context.Context, h *runwatch.Hub) error {
	pc, err := b.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	conn := pc.Hijack()
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{b.channel}.Sanitize()); err != nil {
		return err
	}
	b.lis.connects.Add(1)
	b.lis.got.Store(b.lis.sent.Load()) // the pings sent before it are not its to answer
	b.lis.open.Store(true)
	defer b.lis.open.Store(false)
	b.lis.up.Store(true)
	h.SetLive(true)
	// What changed before LISTEN took effect was not notified: the runs
	// watched since are polled once.
	h.PollNow()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if b.lis.deaf.Load() {
			continue
		}
		if seq, ok := strings.CutPrefix(n.Payload, pingPrefix); ok {
			if i, err := strconv.ParseInt(seq, 10, 64); err == nil && i > b.lis.got.Load() {
				b.lis.got.Store(i)
				// The pings still under way are waited for from now.
				b.lis.unanswered.Store(time.Now().UnixNano())
			}
			if !b.lis.up.Swap(true) { // deaf no more
				h.SetLive(true)
				h.PollNow()
			}
			continue
		}
		h.Changed(n.Payload)
	}
}

// marks reads what the fallback poll compares of the runs ids names.
// While a LISTEN connection is open it also sends it a ping, in the same
// transaction, and takes the connection for deaf when a ping stayed
// unanswered for pingGrace.
func (b *Backend) marks(ctx context.Context, ids []string) (map[string]runwatch.Mark, error) {
	out := make(map[string]runwatch.Mark, len(ids))
	read := func(q interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}) error {
		clear(out)
		rows, err := q.Query(ctx, `SELECT r.run_id, r.status,
			COALESCE((SELECT max(e.id) FROM agentgraph_server_events e WHERE e.run_id = r.run_id), -1)
			FROM agentgraph_server_runs r WHERE r.run_id = ANY($1)`, ids)
		if err != nil {
			return err
		}
		var id string
		m := runwatch.Mark{Exists: true}
		_, err = pgx.ForEachRow(rows, []any{&id, &m.Status, &m.LastEvent}, func() error {
			out[id] = m
			return nil
		})
		return err
	}
	var err error
	if !b.lis.open.Load() {
		err = read(b.pool)
	} else {
		b.checkPings()
		err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			if b.lis.sent.Load() == b.lis.got.Load() {
				b.lis.unanswered.Store(time.Now().UnixNano())
			}
			seq := b.lis.sent.Add(1)
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, b.channel, pingPrefix+strconv.FormatInt(seq, 10)); err != nil {
				return err
			}
			return read(tx)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("server/postgres: polling %d watched runs: %w", len(ids), err)
	}
	return out, nil
}

// checkPings takes the LISTEN connection for deaf when a ping stayed
// unanswered for pingGrace: the watched runs are polled every poll
// interval from then on, until a ping comes back.
func (b *Backend) checkPings() {
	l := &b.lis
	if !l.up.Load() || l.sent.Load() <= l.got.Load() || time.Since(time.Unix(0, l.unanswered.Load())) < pingGrace {
		return
	}
	if l.up.Swap(false) {
		b.watch.SetLive(false)
		slog.Warn("server/postgres: the LISTEN connection receives no notification (behind a pooler in transaction mode?); polling the watched runs",
			"channel", b.channel)
	}
}

// notify sends, in tx, the notification that the runs ids changed.
func (b *Backend) notify(ctx context.Context, tx pgx.Tx, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, id) FROM unnest($2::text[]) id`, b.channel, ids)
	return err
}
