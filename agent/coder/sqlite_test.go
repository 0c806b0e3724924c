package coder_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/coder"
	ckptsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/store"
	storesqlite "github.com/agentgraph/agentgraph/store/sqlite"
)

// open returns an agent on SQLite files in dbDir, closed with the test.
func openOnSQLite(t *testing.T, model llm.Model, dir, dbDir string, opts ...coder.Option) *coder.Agent {
	t.Helper()
	saver, err := ckptsqlite.Open(t.Context(), filepath.Join(dbDir, "checkpoints.db"))
	require.NoError(t, err)
	t.Cleanup(func() { saver.Close() })
	st, err := storesqlite.Open(t.Context(), filepath.Join(dbDir, "memory.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return newAgent(t, model, dir, append([]coder.Option{coder.WithCheckpointer(saver), coder.WithStore(st)}, opts...)...)
}

func TestSessionAndMemoryContinueOnSQLiteFilesReopened(t *testing.T) {
	dir, dbDir := goSample(t), t.TempDir()
	first := openOnSQLite(t, llm.NewScripted(text("Sum adds the numbers.")), dir, dbDir)
	_, err := first.Ask(t.Context(), "s1", "remember that I prefer short answers")
	require.NoError(t, err)
	_, err = first.Ask(t.Context(), "s1", sumQuestion)
	require.NoError(t, err)

	model := llm.NewScripted()
	second := openOnSQLite(t, model, dir, dbDir)
	evs, res := customEvents(t, second, "s1", sumQuestion)
	require.True(t, res.Cached, "the query cache is persistent")
	require.Equal(t, "Sum adds the numbers.", res.Answer)
	require.Contains(t, evs, any(coder.MemoryHit{Memory: coder.MemoryFileCache, Detail: "calc.go", Count: 1}))
	snap, err := second.Graph().GetState(t.Context(), graphThread("s1"))
	require.NoError(t, err)
	require.Equal(t, 3, snap.Values.Turn.Get())
	require.Len(t, snap.Values.History.Get(), 3)
	prefs, err := second.Memory().Preferences(t.Context())
	require.NoError(t, err)
	require.Equal(t, "I prefer short answers", prefs[0].Text)
	log, err := second.Memory().NodeLog(t.Context())
	require.NoError(t, err)
	require.Len(t, log, 2+3+3) // route, profile; route, plan_read, read; route, plan_read, read
}

// Two processes appending to the node log of one SQLite file at the same
// time lose no entry (they may draw the same sequence number), and the
// log stays capped.
func TestTwoStoresOnOneFileLoseNoLogEntry(t *testing.T) {
	dbDir := t.TempDir()
	agents := []*coder.Agent{
		openOnSQLite(t, llm.NewScripted(), t.TempDir(), dbDir),
		openOnSQLite(t, llm.NewScripted(), t.TempDir(), dbDir),
	}
	var wg sync.WaitGroup
	for i, a := range agents {
		wg.Go(func() {
			for j := range 60 {
				require.NoError(t, a.Memory().LogNode(t.Context(), coder.NodeLogEntry{Thread: fmt.Sprint("p", i), Node: fmt.Sprint("n", j)}))
			}
		})
	}
	wg.Wait()
	log, err := agents[0].Memory().NodeLog(t.Context())
	require.NoError(t, err)
	require.Len(t, log, 120)
}

func TestTheNodeLogCapHoldsWithTwoWriters(t *testing.T) {
	dbDir := t.TempDir()
	a := openOnSQLite(t, llm.NewScripted(), t.TempDir(), dbDir, coder.WithLogLimit(50))
	b := openOnSQLite(t, llm.NewScripted(), t.TempDir(), dbDir, coder.WithLogLimit(50))
	var wg sync.WaitGroup
	for _, ag := range []*coder.Agent{a, b} {
		wg.Go(func() {
			for j := range 80 {
				require.NoError(t, ag.Memory().LogNode(t.Context(), coder.NodeLogEntry{Node: fmt.Sprint("n", j)}))
			}
		})
	}
	wg.Wait()
	items, err := a.Memory().Store().Search(t.Context(), []string{"coder", "node_log"}, store.Limit(1000))
	require.NoError(t, err)
	require.Len(t, items, 50)
}
