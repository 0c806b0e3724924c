package goals_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/tools"
)

// writeFiles creates files (slash-separated paths relative to root) and
// returns root.
func writeFiles(t testing.TB, root string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return root
}

// project returns a new temporary directory holding files.
func project(t testing.TB, files map[string]string) string {
	t.Helper()
	return writeFiles(t, t.TempDir(), files)
}

// fakeBin puts executable bash scripts first on PATH. Tests using it
// cannot run in parallel.
func fakeBin(t *testing.T, scripts map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/bash\n"+body), 0o755))
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// testCacheDir is the build cache directory of the tests' sandboxed test
// runs: shared by their many projects (and kept between runs), so that
// each does not compile the standard library anew in a cache of its own.
var testCacheDir = filepath.Join(os.TempDir(), fmt.Sprintf("agentgraph-goals-test-cache-%d", os.Geteuid()))

// newGoal builds the goal name with cfg, its test runs sharing
// testCacheDir.
func newGoal(t testing.TB, name string, cfg goals.Config) goals.Goal {
	t.Helper()
	cfg.TestOptions = append([]tools.Option{tools.WithCacheDir(testCacheDir)}, cfg.TestOptions...)
	g, err := goals.New(name, cfg)
	require.NoError(t, err)
	require.Equal(t, name, g.Name())
	return g
}

// check runs g's check on dir.
func check(t testing.TB, g goals.Goal, dir string) goals.Result {
	t.Helper()
	res, err := g.Check(context.Background(), goals.State{RunID: "test", Iteration: 1, MaxIterations: 10}, dir)
	require.NoError(t, err)
	return res
}

var (
	// ignoreVolatile ignores the Details fields that vary between runs.
	ignoreVolatile = cmpopts.IgnoreFields(goals.Details{}, "Duration", "Output")
	// cmpIgnoreDuration ignores the wall time of checks.
	cmpIgnoreDuration = cmpopts.IgnoreFields(goals.Details{}, "Duration")
)
