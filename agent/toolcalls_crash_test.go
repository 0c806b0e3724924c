//go:build unix

package agent_test

// Crash test: a child process (this test binary, re-executed with
// crashChildEnv set) runs an agent on a SQLite checkpointer whose model
// asks for three tool calls in one turn, and kills itself with SIGKILL
// inside the second call, once the first call's side effect is done and
// its result is saved as a pending write. The parent then resumes the
// thread and checks that every call ran exactly once.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

const (
	// crashChildEnv selects the child role and its agent ("react" or
	// "retrai"); crashDirEnv is the directory of its files.
	crashChildEnv = "AGENTGRAPH_TOOLCALL_CRASH_CHILD"
	crashDirEnv   = "AGENTGRAPH_TOOLCALL_CRASH_DIR"
	crashThread   = "crash"
	// crashLeaseTTL is short so that the parent need not wait long for the
	// dead child's lease of the thread to expire.
	crashLeaseTTL = 500 * time.Millisecond
)

// crashCalls is the turn of the model: three calls of the "effect" tool.
var crashCalls = []llms.ToolCall{
	state.ToolCall("c1", "effect", `{"name":"one"}`),
	state.ToolCall("c2", "effect", `{"name":"two"}`),
	state.ToolCall("c3", "effect", `{"name":"three"}`),
}

type effectArgs struct {
	Name string `json:"name" jsonschema:"required"`
}

// effectTool is a tool appending its argument's name as a line to the side
// effect log, then answering "did <name>". before, when set, runs first.
func effectTool(logPath string, before func(ctx context.Context, name string) error) tools.Tool {
	return tools.New("effect", "Record a side effect.", func(ctx context.Context, a effectArgs) (string, error) {
		if before != nil {
			if err := before(ctx, a.Name); err != nil {
				return "", err
			}
		}
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		if _, err := f.WriteString(a.Name + "\n"); err != nil {
			f.Close()
			return "", err
		}
		if err := f.Close(); err != nil {
			return "", err
		}
		return "did " + a.Name, nil
	})
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(data))
}

// savedResults returns the tool results ("did …") among the pending writes
// of the thread's latest checkpoint, once per result.
func savedResults(ctx context.Context, saver checkpoint.Saver) ([]string, error) {
	tuple, err := saver.Get(ctx, checkpoint.Ref{ThreadID: crashThread})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, name := range []string{"one", "two", "three"} {
		for _, w := range tuple.PendingWrites {
			if bytes.Contains(w.Value, []byte(`"did `+name+`"`)) {
				out = append(out, "did "+name)
				break
			}
		}
	}
	return out, nil
}

// crashAgent runs one kind of agent on the crash test's turn.
type crashAgent struct {
	// start runs the agent from its input.
	start func(ctx context.Context) error
	// resume resumes the thread and returns the final conversation.
	resume func(ctx context.Context) (*agent.RetraiState, []state.Message, error)
}

func newCrashAgent(t *testing.T, kind string, saver checkpoint.Saver, model llm.Model, effect tools.Tool) crashAgent {
	t.Helper()
	thread := graph.WithThread(crashThread)
	switch kind {
	case "react":
		g, err := agent.NewReAct(model, []tools.Tool{effect}, agent.WithCheckpointer(saver),
			agent.WithCompileOptions(graph.WithLeaseTTL(crashLeaseTTL)))
		require.NoError(t, err)
		return crashAgent{
			start: func(ctx context.Context) error {
				_, err := g.Invoke(ctx, input("do three things"), thread)
				return err
			},
			resume: func(ctx context.Context) (*agent.RetraiState, []state.Message, error) {
				out, err := g.Resume(ctx, graph.Command[agent.ReActState]{}, thread)
				return nil, out.Messages.List(), err
			},
		}
	case "retrai":
		g, err := agent.NewRetrai(model, &retraiGoal{check: achievedAt(1)},
			agent.WithRetraiTools(func(string) ([]tools.Tool, error) { return []tools.Tool{effect}, nil }),
			agent.WithRetraiCheckpointer(saver),
			agent.WithRetraiCompileOptions(graph.WithLeaseTTL(crashLeaseTTL)))
		require.NoError(t, err)
		return crashAgent{
			start: func(ctx context.Context) error {
				_, err := g.Invoke(ctx, retraiInput(0, false), thread)
				return err
			},
			resume: func(ctx context.Context) (*agent.RetraiState, []state.Message, error) {
				out, err := g.Resume(ctx, graph.Command[agent.RetraiState]{}, thread)
				return &out, out.Messages.List(), err
			},
		}
	}
	t.Fatalf("unknown agent %q", kind)
	return crashAgent{}
}

func TestToolCallsRunOnceAfterAKill(t *testing.T) {
	if kind := os.Getenv(crashChildEnv); kind != "" {
		runCrashChild(t, kind, os.Getenv(crashDirEnv))
		return
	}
	for _, kind := range []string{"react", "retrai"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			logPath := filepath.Join(dir, "effects.log")

			cmd := exec.Command(os.Args[0], "-test.run=^TestToolCallsRunOnceAfterAKill$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashChildEnv+"="+kind, crashDirEnv+"="+dir)
			output, err := cmd.CombinedOutput()
			exit, ok := errors.AsType[*exec.ExitError](err)
			require.True(t, ok, "the child did not fail: %v\n%s", err, output)
			status := exit.Sys().(syscall.WaitStatus)
			require.True(t, status.Signaled() && status.Signal() == syscall.SIGKILL,
				"the child did not die of SIGKILL: %v\n%s", err, output)

			// At the kill, the first call had run and its result was saved;
			// the second had not done its side effect yet.
			require.Equal(t, []string{"one"}, readLines(t, logPath))
			saver, err := sqlite.Open(t.Context(), filepath.Join(dir, "checkpoints.db"))
			require.NoError(t, err)
			t.Cleanup(func() { saver.Close() })
			saved, err := savedResults(t.Context(), saver)
			require.NoError(t, err)
			require.Equal(t, []string{"did one"}, saved)

			// Resume: the model answers once it has every result.
			var model *llm.Scripted
			if kind == "react" {
				model = llm.NewScripted(llm.Reply{Text: "All three done.", Expect: func(msgs []state.Message) error {
					if got := summary(msgs[len(msgs)-3:]); !slices.Equal(got, []string{
						"tool:  result(c1 effect did one)", "tool:  result(c2 effect did two)", "tool:  result(c3 effect did three)",
					}) {
						return errors.New("the model did not get the three results in call order: " + strings.Join(got, "; "))
					}
					return nil
				}})
			} else {
				model = llm.NewScripted() // the goal is reached at the first check: no model call
			}
			a := newCrashAgent(t, kind, saver, model, effectTool(logPath, nil))
			var (
				ret  *agent.RetraiState
				msgs []state.Message
			)
			for range 100 {
				ret, msgs, err = a.resume(t.Context())
				held, ok := errors.AsType[*checkpoint.LeaseHeldError](err)
				if !ok {
					break
				}
				// The dead child's lease has not expired yet.
				time.Sleep(min(max(time.Until(held.Expires), 10*time.Millisecond), crashLeaseTTL))
			}
			require.NoError(t, err)
			require.Zero(t, model.Remaining())

			// Each call ran exactly once: the first before the kill, the
			// others after the resume.
			lines := readLines(t, logPath)
			require.Equal(t, "one", lines[0])
			require.ElementsMatch(t, []string{"one", "two", "three"}, lines)

			// One tool message per call, in call order.
			var results []string
			for _, m := range msgs {
				for _, r := range m.ToolResults() {
					results = append(results, r.ToolCallID+" "+r.Content)
				}
			}
			require.Equal(t, []string{"c1 did one", "c2 did two", "c3 did three"}, results)
			if ret != nil {
				require.Equal(t, agent.OutcomeAchieved, ret.Outcome())
				var callIDs []string
				for _, r := range ret.ToolResults.Get() {
					callIDs = append(callIDs, r.CallID)
				}
				require.Equal(t, []string{"c1", "c2", "c3"}, callIDs)
				require.Empty(t, ret.PendingToolCalls.Get())
			}
		})
	}
}

// runCrashChild is the child's part: it runs the agent until the second
// tool call, which kills the process once the first call's result is
// saved. The third call, if it starts, waits to be killed. Should the kill
// not come (a regression), the run is cancelled after a while and the
// child fails instead of hanging.
func runCrashChild(t *testing.T, kind, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	saver, err := sqlite.Open(ctx, filepath.Join(dir, "checkpoints.db"))
	require.NoError(t, err)
	before := func(ctx context.Context, name string) error {
		switch name {
		case "two":
			for {
				saved, err := savedResults(ctx, saver)
				if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
					return err
				}
				if len(saved) > 0 {
					if err := syscall.Kill(os.Getpid(), syscall.SIGKILL); err != nil {
						return err
					}
					select {}
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(5 * time.Millisecond):
				}
			}
		case "three":
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	model := llm.NewScripted(llm.Reply{Text: "Doing three things.", ToolCalls: crashCalls})
	a := newCrashAgent(t, kind, saver, model, effectTool(filepath.Join(dir, "effects.log"), before))
	err = a.start(ctx)
	t.Fatalf("the child was not killed: the run returned %v", err)
}
