package checkpoint

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// CopyThread copies every checkpoint of thread from — in every namespace,
// forks included — with its pending writes, to thread to, under the same
// checkpoint IDs, so that to has from's history and goes on from where
// from stands (LangGraph's thread copy). It refuses a thread to that has
// checkpoints already, and a from that has none (an error wrapping
// [ErrNotFound]). It works on any Saver through its interface; a copy cut
// short by an error leaves to with part of the history.
func CopyThread(ctx context.Context, s Saver, from, to string) error {
	if from == "" || to == "" || from == to {
		return fmt.Errorf("checkpoint: copying thread %q to %q: two different threads are needed", from, to)
	}
	for _, err := range s.List(ctx, to, ListOptions{Limit: 1}) {
		if err != nil {
			return fmt.Errorf("checkpoint: copying thread %q: %w", from, err)
		}
		return fmt.Errorf("checkpoint: copying thread %q to %q: the target thread has checkpoints already", from, to)
	}
	var all []*Tuple
	for t, err := range s.List(ctx, from, ListOptions{}) {
		if err != nil {
			return fmt.Errorf("checkpoint: copying thread %q: %w", from, err)
		}
		all = append(all, t)
	}
	if len(all) == 0 {
		return fmt.Errorf("checkpoint: copying thread %q: %w", from, ErrNotFound)
	}
	// Oldest first, namespace by namespace: a checkpoint's parent and the
	// values it shares with it are stored before it.
	slices.SortFunc(all, func(a, b *Tuple) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for _, t := range all {
		cp := t.Checkpoint.Clone()
		cp.ThreadID = to
		// Each is put as a fork: a history with branches has parents that
		// are not the latest checkpoint when their children are stored.
		cp.Fork = true
		ref := Ref{ThreadID: to, Namespace: cp.Namespace, ID: cp.ID}
		if err := s.Put(ctx, cp); err != nil {
			return fmt.Errorf("checkpoint: copying checkpoint %s of thread %q: %w", t.ID, from, err)
		}
		for task := range writesByTask(t.PendingWrites) {
			if err := s.PutWrites(ctx, ref, task); err != nil {
				return fmt.Errorf("checkpoint: copying the pending writes of checkpoint %s of thread %q: %w", t.ID, from, err)
			}
		}
	}
	return nil
}

// writesByTask yields ws (ordered by task ID) one task's writes at a time.
func writesByTask(ws []Write) func(func([]Write) bool) {
	return func(yield func([]Write) bool) {
		for len(ws) > 0 {
			n := 1
			for n < len(ws) && ws[n].TaskID == ws[0].TaskID {
				n++
			}
			if !yield(slices.Clone(ws[:n])) {
				return
			}
			ws = ws[n:]
		}
	}
}
