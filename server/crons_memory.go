package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/server/internal/jsonb"
)

// memoryCrons keeps crons in memory, for a Backend of one process (the
// [MemoryBackend] embeds it). It
// has every method of [CronBackend] but FireCron, which the Backend
// that embeds it builds on fire with its own creation of a run:
//
//	func (b *memoryBackend) FireCron(ctx context.Context, id string, due, next time.Time, run *RunRecord, create *ThreadRecord) (RunRecord, error) {
//		return b.crons.fire(id, due, next, run, func() (RunRecord, error) { return b.CreateRun(ctx, *run, create) })
//	}
//
// and its DeleteThread calls deleteThread. It never calls the Backend
// while it holds its own lock, so the Backend may hold its lock while it
// calls it. Records are copied in and out: a caller's later change to a
// map or payload it passed or got is not seen.
type memoryCrons struct {
	mu    sync.Mutex
	crons map[string]CronRecord
}

// copyCron returns c with maps and payload of its own.
func copyCron(c CronRecord) CronRecord {
	c.Metadata = normalizeMap(c.Metadata)
	c.Payload = slices.Clone(c.Payload)
	return c
}

// CreateCron implements [CronBackend].
func (m *memoryCrons) CreateCron(ctx context.Context, c CronRecord) (CronRecord, error) {
	if len(c.Payload) > 0 && !json.Valid(c.Payload) {
		return c, fmt.Errorf("server: cron %s: payload is not JSON", c.ID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crons == nil {
		m.crons = map[string]CronRecord{}
	}
	if _, dup := m.crons[c.ID]; dup {
		return c, fmt.Errorf("cron %s: %w", c.ID, ErrExists)
	}
	m.crons[c.ID] = copyCron(c)
	return copyCron(c), nil
}

// Cron implements [CronBackend].
func (m *memoryCrons) Cron(ctx context.Context, id string) (CronRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.crons[id]
	if !ok {
		return c, fmt.Errorf("cron %s: %w", id, ErrNotFound)
	}
	return copyCron(c), nil
}

// SearchCrons implements [CronBackend].
func (m *memoryCrons) SearchCrons(ctx context.Context, q CronQuery) ([]CronRecord, int, error) {
	var order func(a, b CronRecord) int
	switch q.SortBy {
	case "cron_id":
		order = func(a, b CronRecord) int { return 0 }
	case "assistant_id":
		order = func(a, b CronRecord) int { return strings.Compare(a.AssistantID, b.AssistantID) }
	case "thread_id":
		order = func(a, b CronRecord) int { return strings.Compare(a.ThreadID, b.ThreadID) }
	case "updated_at":
		order = func(a, b CronRecord) int { return a.UpdatedAt.Compare(b.UpdatedAt) }
	case "next_run_date":
		order = func(a, b CronRecord) int { return a.NextRunAt.Compare(b.NextRunAt) }
	case "created_at", "":
		order = func(a, b CronRecord) int { return a.CreatedAt.Compare(b.CreatedAt) }
	default:
		return nil, 0, fmt.Errorf("server: cannot sort crons by %q", q.SortBy)
	}
	md := normalizeMap(q.Metadata)
	m.mu.Lock()
	var all []CronRecord
	for _, c := range m.crons {
		if (q.AssistantID == "" || c.AssistantID == q.AssistantID) && (q.ThreadID == "" || c.ThreadID == q.ThreadID) &&
			(q.Enabled == nil || c.Enabled == *q.Enabled) && jsonb.Contains(map[string]any(c.Metadata), map[string]any(md)) {
			all = append(all, copyCron(c))
		}
	}
	m.mu.Unlock()
	total := len(all)
	if q.Limit == 0 {
		return nil, total, nil
	}
	slices.SortFunc(all, func(a, b CronRecord) int {
		n := cmp.Or(order(a, b), strings.Compare(a.ID, b.ID))
		if q.Desc {
			return -n
		}
		return n
	})
	return pageOf(all, q.Limit, q.Offset), total, nil
}

// UpdateCron implements [CronBackend].
func (m *memoryCrons) UpdateCron(ctx context.Context, id string, apply func(*CronRecord) error) (CronRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.crons[id]
	if !ok {
		return cur, fmt.Errorf("cron %s: %w", id, ErrNotFound)
	}
	c := copyCron(cur)
	if err := apply(&c); err != nil {
		return cur, err
	}
	if len(c.Payload) > 0 && !json.Valid(c.Payload) {
		return cur, fmt.Errorf("server: cron %s: payload is not JSON", id)
	}
	c.ID, c.CreatedAt = id, cur.CreatedAt
	m.crons[id] = copyCron(c)
	return c, nil
}

// DeleteCron implements [CronBackend].
func (m *memoryCrons) DeleteCron(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.crons[id]; !ok {
		return fmt.Errorf("cron %s: %w", id, ErrNotFound)
	}
	delete(m.crons, id)
	return nil
}

// DueCrons implements [CronBackend].
func (m *memoryCrons) DueCrons(ctx context.Context, now time.Time, graphs []string, limit int) ([]CronRecord, error) {
	m.mu.Lock()
	var due []CronRecord
	for _, c := range m.crons {
		if c.Enabled && !c.NextRunAt.IsZero() && !c.NextRunAt.After(now) && (graphs == nil || slices.Contains(graphs, c.GraphID)) {
			due = append(due, copyCron(c))
		}
	}
	m.mu.Unlock()
	slices.SortFunc(due, func(a, b CronRecord) int {
		return cmp.Or(a.NextRunAt.Compare(b.NextRunAt), strings.Compare(a.ID, b.ID))
	})
	return due[:min(len(due), max(limit, 0))], nil
}

// fire is FireCron with create as the run's creation (not called when
// run is nil). The tick is taken before create is called, outside the
// lock; when create fails with an error other than those of the
// contract (ErrThreadBusy, ErrNotFound, ErrGraphMismatch), the tick is
// given back, unless the cron changed meanwhile.
func (m *memoryCrons) fire(id string, due, next time.Time, run *RunRecord, create func() (RunRecord, error)) (RunRecord, error) {
	m.mu.Lock()
	c, ok := m.crons[id]
	if !ok || !c.NextRunAt.Equal(due) {
		m.mu.Unlock()
		return RunRecord{}, fmt.Errorf("cron %s at %v: %w", id, due, ErrTickTaken)
	}
	c.NextRunAt = next
	m.crons[id] = c
	m.mu.Unlock()
	if run == nil {
		return RunRecord{}, nil
	}
	rec, err := create()
	if err == nil || errors.Is(err, ErrThreadBusy) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrGraphMismatch) {
		return rec, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.crons[id]; ok && c.NextRunAt.Equal(next) {
		c.NextRunAt = due
		m.crons[id] = c
	}
	return rec, err
}

// deleteThread deletes the crons of thread tid, for the Backend's
// DeleteThread.
func (m *memoryCrons) deleteThread(tid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	maps.DeleteFunc(m.crons, func(_ string, c CronRecord) bool { return c.ThreadID == tid })
}
