//go:build unix

package agenttest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

const (
	// CrashThread is the thread the crash test runs on.
	CrashThread = "crash"
	// crashDirEnv selects the child role and names the directory of its
	// files.
	crashDirEnv = "AGENTGRAPH_TOOLCALL_CRASH_DIR"
	// crashLeaseTTL is short so that the parent need not wait long for the
	// dead child's lease of the thread to expire.
	crashLeaseTTL = 500 * time.Millisecond
)

// CrashCalls is the model's turn in the crash test: three calls of the
// "effect" tool, c1 to c3, with names one, two and three.
var CrashCalls = []llms.ToolCall{
	state.ToolCall("c1", "effect", `{"name":"one"}`),
	state.ToolCall("c2", "effect", `{"name":"two"}`),
	state.ToolCall("c3", "effect", `{"name":"three"}`),
}

// Agent is one agent on the crash test's thread.
type Agent struct {
	// Start runs the agent from its input.
	Start func(ctx context.Context) error
	// Resume resumes the thread and returns the final conversation.
	Resume func(ctx context.Context) ([]state.Message, error)
}

// Crash is the crash test of an agent's tool calls: a child process (the
// test binary, re-executed) runs the agent on a SQLite checkpointer with a
// model whose turn is [CrashCalls], and kills itself with SIGKILL inside
// the second call, once the first call's side effect is done and its
// result is saved as a pending write. The parent then resumes the thread
// and checks that every call ran exactly once and that the conversation
// has one tool message per call, in call order.
type Crash struct {
	// Test is the name of the test function that calls Run: the child runs
	// it again.
	Test string
	// New builds the agent with saver as its checkpointer, model, the one
	// tool effect and opts added to its compilation; it reads and writes
	// the thread CrashThread.
	New func(t *testing.T, saver checkpoint.Saver, model llm.Model, effect tools.Tool, opts ...graph.CompileOption) Agent
	// Resume are the model's replies in the resumed run, all of which it
	// must use.
	Resume []llm.Reply
}

// Run runs the crash test and returns the final conversation of the
// resumed run; in the child, it runs the agent until it is killed.
func (c Crash) Run(t *testing.T) []state.Message {
	t.Helper()
	if dir := os.Getenv(crashDirEnv); dir != "" {
		c.child(t, dir)
		return nil
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "effects.log")

	cmd := exec.Command(os.Args[0], "-test.run=^"+c.Test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	output, err := cmd.CombinedOutput()
	exit, ok := errors.AsType[*exec.ExitError](err)
	require.True(t, ok, "the child did not fail: %v\n%s", err, output)
	status := exit.Sys().(syscall.WaitStatus)
	require.True(t, status.Signaled() && status.Signal() == syscall.SIGKILL,
		"the child did not die of SIGKILL: %v\n%s", err, output)

	// At the kill, the first call had run and its result was saved; the
	// second had not done its side effect yet.
	require.Equal(t, []string{"one"}, readLines(t, logPath))
	saver, err := sqlite.Open(t.Context(), filepath.Join(dir, "checkpoints.db"))
	require.NoError(t, err)
	t.Cleanup(func() { saver.Close() })
	saved, err := savedResults(t.Context(), saver)
	require.NoError(t, err)
	require.Equal(t, []string{"did one"}, saved)

	model := llm.NewScripted(c.Resume...)
	a := c.New(t, saver, model, effectTool(logPath, nil), graph.WithLeaseTTL(crashLeaseTTL))
	var msgs []state.Message
	for range 100 {
		msgs, err = a.Resume(t.Context())
		held, ok := errors.AsType[*checkpoint.LeaseHeldError](err)
		if !ok {
			break
		}
		// The dead child's lease has not expired yet.
		time.Sleep(min(max(time.Until(held.Expires), 10*time.Millisecond), crashLeaseTTL))
	}
	require.NoError(t, err)
	require.Zero(t, model.Remaining())

	// Each call ran exactly once: the first before the kill, the others
	// after the resume.
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
	return msgs
}

// child is the child's part: it runs the agent until the second tool call,
// which kills the process once the first call's result is saved. The third
// call, if it starts, waits to be killed. Should the kill not come (a
// regression), the run is cancelled after a while and the child fails
// instead of hanging.
func (c Crash) child(t *testing.T, dir string) {
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
	model := llm.NewScripted(llm.Reply{Text: "Doing three things.", ToolCalls: CrashCalls})
	a := c.New(t, saver, model, effectTool(filepath.Join(dir, "effects.log"), before), graph.WithLeaseTTL(crashLeaseTTL))
	err = a.Start(ctx)
	t.Fatalf("the child was not killed: the run returned %v", err)
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
	tuple, err := saver.Get(ctx, checkpoint.Ref{ThreadID: CrashThread})
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
