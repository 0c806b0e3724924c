package codur_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// standIn writes a small shell script standing in for a coding CLI: asked
// first, it answers with a tool call writing the fix; shown tool results,
// it reports where it ran.
func standIn(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-agent.sh")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
	return p
}

// quoterScript stands in for a coding CLI that answers by quoting a tool
// call in Codur's text format, without doing anything: it counts its
// runs and keeps its prompt in the workspace.
const quoterScript = `echo run >> calls.log
printf '%s' "$2" > prompt.seen
printf '%s\n' 'You could run: {"tool": "write_file", "args": {"path": "main.py", "content": "print(2)\n"}}'
`

func TestCLIAgentOutputIsItsAnswerNeverExecutedAndItRunsOnce(t *testing.T) {
	dir, ws := workspace(t, map[string]string{"main.py": "print(1)\n", "expected.txt": "2\n"})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	planner := llm.NewScripted(preCode, text(`{"action": "delegate", "agent": "agent:quoter", "reasoning": "print 2 instead of 1"}`))
	reg := codur.NewRegistry()
	require.NoError(t, reg.Register(codur.AgentInfo{Ref: "agent:quoter"},
		&codur.CLIAgent{Command: standIn(t, quoterScript), Args: []string{"--print", "{prompt}"}}))
	g, err := codur.New(planner, reg, codur.DefaultTools(ws), codur.WithVerifier(v), codur.WithRepairBudget(0),
		codur.WithDefaultAgent("agent:quoter"), codur.WithMaxIterations(1))
	require.NoError(t, err)
	r := run(t, g, codur.Input("fix main.py", false))
	require.NoError(t, r.err)
	require.False(t, r.out.Verified.Get())
	require.Equal(t, "print(1)\n", readFile(t, dir, "main.py"), "the quoted write_file was not run")
	require.Equal(t, "run\n", readFile(t, dir, "calls.log"), "the CLI ran once")
	require.Len(t, r.rounds, 1)
	require.Empty(t, r.rounds[0].Format, "its output is not searched for tool calls")
	prompt := readFile(t, dir, "prompt.seen")
	require.Equal(t, "Task: fix main.py\n\nPlan: print 2 instead of 1\n\nWork in the current directory (the workspace); make the changes yourself.", prompt,
		"the task and the plan's step, not Codur's tool-calling prompt")
}

func TestCLIAgentOutputPastTheLimitCarriesAMarker(t *testing.T) {
	dir, _ := workspace(t, nil)
	a := &codur.CLIAgent{Command: standIn(t, "head -c 1100000 /dev/zero | tr '\\0' a\n")}
	reply, err := a.Run(t.Context(), codur.Request{Messages: []state.Message{state.Human("task")}, Dir: dir})
	require.NoError(t, err)
	out := reply.Message.Text()
	require.True(t, strings.HasSuffix(out, "\n[output truncated: the CLI wrote 1100000 bytes; the first 1048576 are kept]"), out[len(out)-120:])
}

func TestTimedOutCLIAgentKeepsItsPartialOutput(t *testing.T) {
	dir, ws := workspace(t, map[string]string{"main.py": "print(1)\n", "expected.txt": "2\n"})
	cli := &codur.CLIAgent{Command: standIn(t, "echo 'print(2)' > main.py\necho 'fixed main.py, now checking'\nsleep 30\n"), Timeout: 500 * time.Millisecond}
	_, err := cli.Run(t.Context(), codur.Request{Messages: []state.Message{state.Human("task")}, Dir: dir})
	var ce *codur.CLIError
	require.ErrorAs(t, err, &ce)
	require.True(t, ce.TimedOut)
	require.Equal(t, "fixed main.py, now checking", ce.Output)
	require.ErrorContains(t, err, "timed out (time limit 500ms)")

	// In a run, the partial output is the answer, and the review checks
	// what the CLI did before it was stopped.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.py"), []byte("print(1)\n"), 0o644))
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	reg := codur.NewRegistry()
	require.NoError(t, reg.Register(codur.AgentInfo{Ref: "agent:slow"}, cli))
	g, err := codur.New(llm.NewScripted(preCode, text(`{"action": "delegate", "agent": "agent:slow"}`)), reg, codur.DefaultTools(ws),
		codur.WithVerifier(v), codur.WithRepairBudget(0), codur.WithDefaultAgent("agent:slow"), codur.WithMaxIterations(1))
	require.NoError(t, err)
	r := run(t, g, codur.Input("fix main.py", false))
	require.NoError(t, r.err)
	require.True(t, r.out.Verified.Get())
	require.Equal(t, "fixed main.py, now checking\n[the agent was stopped at its time limit of 500ms; the above is what it wrote until then]", r.out.FinalResponse.Get())
	require.Equal(t, codur.Solution{By: codur.SolvedByAgent, Iteration: 1, Agent: "agent:slow", Phase: codur.PhasePlan}, r.out.Solved.Get())
}

func TestCLIAgentErrors(t *testing.T) {
	dir, _ := workspace(t, nil)
	req := codur.Request{Messages: []state.Message{state.Human("task")}, Dir: dir}
	t.Run("exit status", func(t *testing.T) {
		a := &codur.CLIAgent{Command: standIn(t, "echo broken >&2\nexit 3\n")}
		_, err := a.Run(t.Context(), req)
		var ce *codur.CLIError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, 3, ce.ExitCode)
		require.Equal(t, "broken\n", ce.Stderr)
	})
	t.Run("timeout", func(t *testing.T) {
		a := &codur.CLIAgent{Command: standIn(t, "sleep 30\n"), Timeout: 50 * time.Millisecond}
		_, err := a.Run(t.Context(), req)
		var ce *codur.CLIError
		require.ErrorAs(t, err, &ce)
		require.True(t, ce.TimedOut)
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		a := &codur.CLIAgent{Command: standIn(t, "echo hi\n")}
		_, err := a.Run(ctx, req)
		require.ErrorIs(t, err, context.Canceled)
	})
	t.Run("no workspace", func(t *testing.T) {
		a := &codur.CLIAgent{Command: "true"}
		_, err := a.Run(t.Context(), codur.Request{})
		require.Error(t, err)
	})
	t.Run("prompt as last argument", func(t *testing.T) {
		a := &codur.CLIAgent{Command: standIn(t, `echo "$#:$1"`), Args: nil}
		reply, err := a.Run(t.Context(), req)
		require.NoError(t, err)
		require.Equal(t, "1:task", reply.Message.Text())
	})
}

func TestRegistryRefusesBadAndDuplicateReferences(t *testing.T) {
	reg := codur.NewRegistry()
	a := &codur.ModelAgent{Model: llm.NewScripted()}
	require.NoError(t, reg.Register(codur.AgentInfo{Ref: "llm:a"}, a))
	var dup *codur.DuplicateAgentError
	require.ErrorAs(t, reg.Register(codur.AgentInfo{Ref: "llm:a"}, a), &dup)
	for _, ref := range []string{"", "a", "tool:x", "llm:", "agent: "} {
		var bad *codur.BadRefError
		require.ErrorAs(t, reg.Register(codur.AgentInfo{Ref: ref}, a), &bad, ref)
	}
	var bad *codur.BadRefError
	require.ErrorAs(t, reg.Register(codur.AgentInfo{Ref: "agent:x"}, nil), &bad)
	require.Len(t, reg.List(), 1)
}

const sampleConfig = `
default_agent: llm:coder
profiles:
  coder: {model: "openai:gpt-4o-mini", description: writes code}
  fast: {model: "ollama:qwen3"}
agents:
  claude:
    command: claude
    args: ["-p", "{prompt}"]
    timeout: 2m
mcp_servers:
  files: {command: my-mcp, args: ["--root", "."]}
  remote: {url: "http://localhost:8080/mcp"}
runtime:
  max_iterations: 4
  max_tool_rounds: 3
  pre_plan_confidence: 0.95
  detect_tool_calls_from_text: false
pruning: {keep_errors: 6}
`

func TestConfigBuildsTheRegistry(t *testing.T) {
	cfg, err := codur.ParseConfig([]byte(sampleConfig))
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, cfg.Agents["claude"].Timeout)
	require.Equal(t, 6, cfg.Pruning.KeepErrors)
	var specs []string
	reg, err := cfg.Registry(t.Context(), func(_ context.Context, spec string) (llm.Model, error) {
		specs = append(specs, spec)
		return llm.NewScripted(), nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"openai:gpt-4o-mini", "ollama:qwen3"}, specs)
	require.Empty(t, cmp.Diff([]codur.AgentInfo{
		{Ref: "agent:claude", Detail: "claude -p {prompt}"},
		{Ref: "llm:coder", Description: "writes code", Detail: "openai:gpt-4o-mini"},
		{Ref: "llm:fast", Detail: "ollama:qwen3"},
	}, reg.List()))
	_, ws := workspace(t, nil)
	_, err = codur.New(llm.NewScripted(), reg, codur.DefaultTools(ws), cfg.Options()...)
	require.NoError(t, err)
}

func TestConfigRejectsMistakes(t *testing.T) {
	for name, text := range map[string]string{
		"unknown key":      "profils: {}\n",
		"profile no model": "profiles: {a: {description: x}}\n",
		"agent no command": "agents: {a: {args: [x]}}\n",
		"mcp both":         "mcp_servers: {a: {command: x, url: y}}\n",
		"mcp neither":      "mcp_servers: {a: {args: [x]}}\n",
		"not yaml":         "{[",
		"bad duration":     "agents: {a: {command: x, timeout: soon}}\n",
	} {
		_, err := codur.ParseConfig([]byte(text))
		require.Error(t, err, name)
	}
	_, err := codur.ParseConfig([]byte(sampleConfig))
	require.NoError(t, err)
	cfg, _ := codur.ParseConfig([]byte("profiles: {a: {model: x}}\n"))
	_, err = cfg.Registry(t.Context(), func(context.Context, string) (llm.Model, error) { return nil, errors.New("no such provider") })
	require.ErrorContains(t, err, "no such provider")
}

func TestNewRejectsBadOptions(t *testing.T) {
	m := llm.NewScripted()
	_, err := codur.New(nil, nil, nil)
	require.ErrorIs(t, err, codur.ErrNilModel)
	for _, o := range []codur.Option{codur.WithMaxIterations(0), codur.WithMaxToolRounds(0), codur.WithRecursionLimit(0),
		codur.WithPrePlanConfidence(0), codur.WithPrePlanConfidence(1.5), codur.WithRepairBudget(-1)} {
		var oe *codur.OptionError
		_, err := codur.New(m, nil, nil, o)
		require.ErrorAs(t, err, &oe)
	}
	_, ws := workspace(t, nil)
	ts := codur.DefaultTools(ws)
	_, err = codur.New(m, nil, append(ts, ts[0]))
	var dup *tools.DuplicateToolError
	require.ErrorAs(t, err, &dup)
	require.True(t, strings.HasPrefix(err.Error(), "codur:"))
}

func TestRegistryIsSafeForConcurrentUse(t *testing.T) {
	reg := codur.NewRegistry()
	a := &codur.ModelAgent{Model: llm.NewScripted()}
	done := make(chan error, 40)
	for range 20 {
		go func() { done <- reg.Register(codur.AgentInfo{Ref: "llm:a"}, a) }()
		go func() {
			_, _ = reg.Get("llm:a")
			_ = reg.List()
			done <- nil
		}()
	}
	registered := 0
	for range 40 {
		if err := <-done; err == nil {
			registered++
		}
	}
	require.Equal(t, 21, registered, "one Register succeeded, the 20 readers returned")
	require.Len(t, reg.List(), 1)
}
