//go:build unix

package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// rvCrashCP is step of thread/ns in the crash test: a list that grows by
// one element a step (stored as deltas), a whole value, and a channel
// that changes every third step only.
func rvCrashCP(thread, ns string, step int) *checkpoint.Checkpoint {
	id := fmt.Sprintf("%08d", step)
	parent := ""
	if step > 1 {
		parent = fmt.Sprintf("%08d", step-1)
	}
	var list strings.Builder
	list.WriteString("[")
	for i := 1; i <= step; i++ {
		if i > 1 {
			list.WriteString(",")
		}
		fmt.Fprintf(&list, `"%s/%s/%d"`, thread, ns, i)
	}
	list.WriteString("]")
	chs := []checkpoint.Channel{
		{Name: "msgs", Version: int64(step), Value: []byte(list.String())},
		{Name: "step", Version: int64(step), Value: []byte(fmt.Sprint(step))},
	}
	slow := checkpoint.Channel{Name: "t", Version: int64((step + 2) / 3)}
	if step%3 == 1 {
		slow.Value = []byte(fmt.Sprintf(`{"third":%d}`, (step+2)/3))
	}
	chs = append(chs, slow)
	return &checkpoint.Checkpoint{ThreadID: thread, Namespace: ns, ID: id, ParentID: parent, Channels: chs}
}

func TestReviewSQBCrashKeepsValues(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for trial := range 2 {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "crash.db")
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestReviewSQBCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "REVSQB_CRASH="+path)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			type key struct{ thread, ns string }
			acked := map[key]int{}
			n, killAt := 0, 500+400*trial
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				require.Len(t, f, 3, "child wrote %q", sc.Text())
				ns := f[1]
				if ns == "-" {
					ns = ""
				}
				step, err := strconv.Atoi(f[2])
				require.NoError(t, err)
				acked[key{f[0], ns}] = step
				if n++; n == killAt {
					require.NoError(t, cmd.Process.Kill())
				}
			}
			require.Error(t, cmd.Wait())
			require.GreaterOrEqual(t, n, killAt)

			db := rawDB(t, path)
			var ok string
			require.NoError(t, db.QueryRowContext(t.Context(), `PRAGMA integrity_check`).Scan(&ok))
			require.Equal(t, "ok", ok)

			s := open(t, path)
			for k, last := range acked {
				latest, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: k.thread, Namespace: k.ns})
				require.NoError(t, err)
				top, err := strconv.Atoi(latest.ID)
				require.NoError(t, err)
				if top < last {
					rows, err := db.QueryContext(t.Context(), `SELECT id, parent_id FROM checkpoints WHERE thread_id = ? AND ns = ? ORDER BY id`, k.thread, k.ns)
					require.NoError(t, err)
					var ids []string
					for rows.Next() {
						var id, p string
						require.NoError(t, rows.Scan(&id, &p))
						ids = append(ids, id+"<"+p)
					}
					rows.Close()
					t.Logf("%v: latest %s, rows %v", k, latest.ID, ids)
				}
				require.GreaterOrEqual(t, top, last, "%v lost acknowledged checkpoints", k)
				for step := 1; step <= top; step++ {
					want := rvCrashCP(k.thread, k.ns, step)
					got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: k.thread, Namespace: k.ns, ID: want.ID})
					require.NoError(t, err, "%v step %d", k, step)
					require.Equal(t, want.ParentID, got.ParentID)
					vals := map[string]string{}
					for _, c := range got.Channels {
						vals[c.Name] = string(c.Value)
					}
					require.Equal(t, string(want.Channels[0].Value), vals["msgs"], "%v step %d", k, step)
					require.Equal(t, string(want.Channels[1].Value), vals["step"], "%v step %d", k, step)
					require.Equal(t, fmt.Sprintf(`{"third":%d}`, (step+2)/3), vals["t"], "%v step %d", k, step)
				}
			}
		})
	}
}

func TestReviewSQBCrashChild(t *testing.T) {
	path := os.Getenv("REVSQB_CRASH")
	if path == "" {
		t.Skip("child process")
	}
	s := open(t, path)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 48 {
		wg.Go(func() {
			thread := fmt.Sprintf("k%d", i%16)
			ns := []string{"", "sub", "sub|x"}[i/16]
			for step := 1; ; step++ {
				if err := s.Put(context.Background(), rvCrashCP(thread, ns, step)); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				name := ns
				if name == "" {
					name = "-"
				}
				_, err := fmt.Fprintf(os.Stdout, "%s %s %d\n", thread, name, step)
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
}
