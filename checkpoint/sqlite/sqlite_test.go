package sqlite_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
)

func open(t *testing.T, path string, opts ...sqlite.Option) *sqlite.Saver {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestConformance(t *testing.T) {
	paths := map[checkpoint.Saver]string{} // subtests run one at a time
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
		path := filepath.Join(t.TempDir(), "checkpoints.db")
		s := open(t, path)
		paths[s] = path
		return s
	}, checkpointtest.WithSecondInstance(func(t *testing.T, s checkpoint.Saver) checkpoint.Saver {
		return open(t, paths[s])
	}))
}

func TestConformanceInMemory(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
		return open(t, ":memory:")
	})
}

func TestReopenKeepsCheckpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a b?c#d%.db")
	s, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	id := checkpoint.NewID()
	cp := &checkpoint.Checkpoint{ID: id, ThreadID: "t", Channels: []checkpoint.Channel{{Name: "a", Version: 1, Value: []byte(`[1]`)}}}
	require.NoError(t, s.Put(t.Context(), cp))
	require.NoError(t, s.Close())
	require.FileExists(t, path)

	s = open(t, path)
	got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: "t"})
	require.NoError(t, err)
	require.Equal(t, id, got.ID)
	require.Equal(t, `[1]`, string(got.Value("a")))
	require.True(t, got.CreatedAt.IsZero())
}

func TestOpenRecordsMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	open(t, path)
	db := rawDB(t, path)
	var n, maxV int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &maxV))
	require.Equal(t, sqlite.SchemaVersion(), n)
	require.Equal(t, sqlite.SchemaVersion(), maxV)
	var mode string
	require.NoError(t, db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	require.Equal(t, "wal", mode)
}

func TestOpenNewerSchemaFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	s, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	db := rawDB(t, path)
	_, err = db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`, sqlite.SchemaVersion()+7)
	require.NoError(t, err)

	_, err = sqlite.Open(t.Context(), path)
	var verr *sqlite.SchemaVersionError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, sqlite.SchemaVersion()+7, verr.Found)
	require.Equal(t, sqlite.SchemaVersion(), verr.Supported)
	require.Equal(t, path, verr.Path)
	require.Regexp(t, "^checkpoint/sqlite: .* newer than", err.Error())
}

func TestOpenMissingDirectoryFails(t *testing.T) {
	_, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"))
	require.Error(t, err)
	require.Contains(t, err.Error(), "x.db")
}

func TestOpenInvalidSynchronousFails(t *testing.T) {
	_, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), sqlite.WithSynchronous("SOMETIMES"))
	require.ErrorContains(t, err, "SOMETIMES")
}

func TestTwoSaversShareOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a, b := open(t, path), open(t, path)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() { errs[i] = writeThread(t, s, fmt.Sprintf("g%d", i), 10) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	for i := range errs {
		requireThread(t, a, fmt.Sprintf("g%d", i), 10)
		requireThread(t, b, fmt.Sprintf("g%d", i), 10)
	}
}

// TestSeveralProcessesShareOneFile runs copies of the test binary that
// write to one database file at the same time as this process.
func TestSeveralProcessesShareOneFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const procs, steps = 3, 15
	path := filepath.Join(t.TempDir(), "shared.db")
	s := open(t, path)
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := range procs {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "CHECKPOINT_SQLITE_HELPER="+path, "CHECKPOINT_SQLITE_THREAD=p"+strconv.Itoa(i), "CHECKPOINT_SQLITE_STEPS="+strconv.Itoa(steps))
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	require.NoError(t, writeThread(t, s, "parent", steps))
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), "process %d:\n%s", i, outs[i])
	}
	requireThread(t, s, "parent", steps)
	for i := range procs {
		requireThread(t, s, "p"+strconv.Itoa(i), steps)
	}
}

// TestHelperProcess is the body of the processes started by
// TestSeveralProcessesShareOneFile; run on its own it does nothing.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv("CHECKPOINT_SQLITE_HELPER")
	if path == "" {
		t.Skip("helper process for TestSeveralProcessesShareOneFile")
	}
	steps, err := strconv.Atoi(os.Getenv("CHECKPOINT_SQLITE_STEPS"))
	require.NoError(t, err)
	s := open(t, path)
	require.NoError(t, writeThread(t, s, os.Getenv("CHECKPOINT_SQLITE_THREAD"), steps))
}

// writeThread puts steps checkpoints with a growing list and a pending
// write each; it may run on any goroutine.
func writeThread(t *testing.T, s *sqlite.Saver, thread string, steps int) error {
	ctx := t.Context()
	parent := ""
	list := "["
	for i := range steps {
		if i > 0 {
			list += ","
		}
		list += fmt.Sprintf(`"%s-%d"`, thread, i)
		id := checkpoint.NewID()
		cp := &checkpoint.Checkpoint{
			ID: id, ThreadID: thread, ParentID: parent,
			Metadata: checkpoint.Metadata{Source: "loop", Step: i},
			Channels: []checkpoint.Channel{{Name: "list", Version: int64(i + 1), Value: []byte(list + "]")}},
		}
		if err := s.Put(ctx, cp); err != nil {
			return err
		}
		ref := checkpoint.Ref{ThreadID: thread, ID: id}
		if err := s.PutWrites(ctx, ref, []checkpoint.Write{{TaskID: "t", Channel: "list", Value: []byte(`1`)}}); err != nil {
			return err
		}
		got, err := s.Get(ctx, checkpoint.Ref{ThreadID: thread})
		if err != nil {
			return err
		}
		if got.ID != id || string(got.Value("list")) != list+"]" {
			return fmt.Errorf("%s step %d: got %s %s", thread, i, got.ID, got.Value("list"))
		}
		parent = id
	}
	return nil
}

func requireThread(t *testing.T, s *sqlite.Saver, thread string, steps int) {
	t.Helper()
	n := 0
	for tup, err := range s.List(t.Context(), thread, checkpoint.ListOptions{}) {
		require.NoError(t, err)
		require.Equal(t, steps-1-n, tup.Metadata.Step)
		require.Len(t, tup.PendingWrites, 1)
		n++
	}
	require.Equal(t, steps, n, "thread %s", thread)
}

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}
