package sqlite_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// TestReviewSQBTwoSaversRace: two Savers on one file, 24 goroutines each,
// race to extend the same 8 threads (in two namespaces), reading the
// latest and putting the next; refusals must be conflicts only, every
// thread stays a chain, and every value reads back as put.
func TestReviewSQBTwoSaversRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.db")
	savers := []checkpoint.Saver{open(t, path), open(t, path)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conflicts, oks := 0, 0
	for i := range 48 {
		wg.Go(func() {
			s := savers[i%2]
			thread := fmt.Sprintf("t%d", i%8)
			ns := []string{"", "sub"}[(i/8)%2]
			for range 40 {
				parent, step := "", 1
				if tup, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: thread, Namespace: ns}); err == nil {
					parent = tup.ID
					fmt.Sscanf(tup.ID, "%d", &step)
					step++
				} else if !errors.Is(err, checkpoint.ErrNotFound) {
					t.Error(err)
					return
				}
				cp := rvCrashCP(thread, ns, step)
				cp.ID = fmt.Sprintf("%08d", step)
				cp.ParentID = parent
				err := s.Put(t.Context(), cp)
				mu.Lock()
				if err == nil {
					oks++
				} else if _, ok := errors.AsType[*checkpoint.ConflictError](err); ok {
					conflicts++
				} else if _, ok := errors.AsType[*checkpoint.VersionConflictError](err); ok {
					conflicts++ // the same step put by another writer with the same value: not expected
					t.Errorf("version conflict: %v", err)
				} else {
					t.Errorf("put: %v", err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("ok %d conflicts %d", oks, conflicts)
	s := savers[0]
	for i := range 8 {
		for _, ns := range []string{"", "sub"} {
			thread := fmt.Sprintf("t%d", i)
			parent := ""
			n := 0
			for tup, err := range s.List(t.Context(), thread, checkpoint.ListOptions{Namespace: &ns}) {
				require.NoError(t, err)
				if parent != "" {
					require.Equal(t, parent, tup.ID)
				}
				parent = tup.ParentID
				n++
				var step int
				_, err := fmt.Sscanf(tup.ID, "%08d", &step)
				require.NoError(t, err)
				want := rvCrashCP(thread, ns, step)
				vals := map[string]string{}
				for _, c := range tup.Channels {
					vals[c.Name] = string(c.Value)
				}
				require.Equal(t, string(want.Channels[0].Value), vals["msgs"])
				require.Equal(t, fmt.Sprint(step), vals["step"])
			}
			require.Empty(t, parent)
			require.Positive(t, n)
		}
	}
}
