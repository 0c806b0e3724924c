package retrai_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// calcProject writes a Go module whose TestAdd fails and TestOther passes.
func calcProject(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	dir := t.TempDir()
	for name, content := range map[string]string{
		"go.mod":        "module example.com/calc\n\ngo 1.21\n",
		"calc.go":       "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
		"calc_test.go":  "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n",
		"other_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestOther(t *testing.T) {}\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return dir
}

// rmTool is a tool removing files of dir.
func rmTool(dir string) func(string) ([]tools.Tool, error) {
	type rmArgs struct {
		Path string `json:"path"`
	}
	return func(string) ([]tools.Tool, error) {
		return []tools.Tool{tools.New("rm", "Remove a file.", func(_ context.Context, a rmArgs) (string, error) {
			return "removed", os.Remove(filepath.Join(dir, a.Path))
		})}, nil
	}
}

// sharedCache has the tests' sandboxed go test runs share one build cache
// (kept between runs), so that each project does not compile the
// standard library anew.
var sharedCache = []tools.Option{tools.WithCacheDir(filepath.Join(os.TempDir(), fmt.Sprintf("agentgraph-retrai-test-cache-%d", os.Geteuid())))}

// The baseline lives in the checkpointed state: a resumed run, in a new
// process with a new goal, is still held to it.
func TestBaselineSurvivesResume(t *testing.T) {
	dir := calcProject(t)
	saver := checkpoint.NewMemory()
	thread := graph.WithThread("resume")
	newGraph := func(replies ...llm.Reply) *graph.Graph[retrai.State] {
		goal, err := goals.New(goals.GoalGoTest, goals.Config{TestOptions: sharedCache})
		require.NoError(t, err)
		g, err := retrai.New(llm.NewScripted(replies...), goal, retrai.WithTools(rmTool(dir)), retrai.WithCheckpointer(saver))
		require.NoError(t, err)
		return g
	}
	_, err := newGraph(llm.Reply{Text: "Looking."}).Invoke(t.Context(),
		retrai.Input(retrai.Run{RunID: "run-1", Cwd: dir, MaxIterations: 2, HITL: true}), thread)
	_, ok := errors.AsType[*graph.Interrupted](err)
	require.True(t, ok, "want *graph.Interrupted, got %v", err)

	g := newGraph(llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "rm", `{"path":"calc_test.go"}`)}})
	out, err := g.Resume(t.Context(), graph.Command[retrai.State]{Resume: "approve"}, thread)
	require.NoError(t, err)
	require.Equal(t, retrai.OutcomeFailed, out.Outcome())
	require.Equal(t, "go-test: example.com/calc.TestAdd was in the baseline but did not run (deleted or renamed?); "+
		"protected test file calc_test.go was deleted (test files may not be changed: restore them and fix the code under test)", out.GoalReason.Get())
}

// A model that deletes the failing test does not reach a test goal: the
// baseline was taken before its first step.
func TestDeletingTheFailingTestDoesNotReachTheGoal(t *testing.T) {
	dir := calcProject(t)
	goal, err := goals.New(goals.GoalGoTest, goals.Config{TestOptions: sharedCache})
	require.NoError(t, err)
	model := llm.NewScripted(llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "rm", `{"path":"calc_test.go"}`)}})
	g, err := retrai.New(model, goal, retrai.WithTools(rmTool(dir)))
	require.NoError(t, err)

	var rec recorder
	out, err := invoke(t, g, &rec, retrai.Input(retrai.Run{RunID: "run-1", Cwd: dir, MaxIterations: 1}))
	require.NoError(t, err)
	require.Equal(t, retrai.OutcomeFailed, out.Outcome())
	require.Equal(t, "go-test: example.com/calc.TestAdd was in the baseline but did not run (deleted or renamed?); "+
		"protected test file calc_test.go was deleted (test files may not be changed: restore them and fix the code under test)", out.GoalReason.Get())
	require.Equal(t, 2, out.GoalBaseline.Get().NumTests())
	require.Equal(t, []retrai.BaselineRecorded{{Summary: out.GoalBaseline.Get().Summary}}, ofType[retrai.BaselineRecorded](&rec))
	require.Equal(t, []string{"run_started", "node_started:baseline", "retrai.baseline_recorded", "node_ended:baseline"}, rec.kinds()[:4],
		"the baseline is recorded before the first iteration")
}
