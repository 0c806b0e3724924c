package codur

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// Agent is something the planner can delegate a task to: a model, or an
// external coding CLI.
type Agent interface {
	// Run answers the conversation req.Messages. An agent that can call
	// tools natively returns them as the tool calls of its message; one
	// that cannot writes them in its text (see [Detector]).
	Run(ctx context.Context, req Request) (*Reply, error)
}

// Request is what an [Agent] is asked.
type Request struct {
	// Messages is the conversation: a system message, the task, the
	// context, and the tool results of earlier rounds.
	Messages []state.Message
	// Tools describe the tools the agent may call.
	Tools []llms.Tool
	// Dir is the workspace.
	Dir string
}

// Reply is an [Agent]'s answer.
type Reply struct {
	// Message is the answer, an AI message.
	Message state.Message
	// Usage is the token usage, zero when unknown.
	Usage llm.Usage
}

// Autonomous is implemented by an [Agent] that works on the workspace by
// itself, with tools of its own — a coding CLI ([CLIAgent]). Codur gives
// it the task (with the planner's step and the last verification
// failure), not its own tool-calling prompt and tool list; runs it once
// per delegation; and takes its output as its answer: the output is never
// searched for tool calls, nor executed.
type Autonomous interface {
	Agent
	// Autonomous marks the agent; Codur does not call it.
	Autonomous()
}

// ModelAgent is an [Agent] backed by a chat model; it binds the tools.
type ModelAgent struct {
	Model llm.Model
	// CallOptions are added to every call.
	CallOptions []llm.CallOption
}

// Run implements [Agent].
func (a *ModelAgent) Run(ctx context.Context, req Request) (*Reply, error) {
	opts := slices.Clone(a.CallOptions)
	if len(req.Tools) > 0 {
		opts = append(opts, llm.WithTools(req.Tools))
	}
	resp, err := llm.GenerateToGraph(ctx, a.Model, req.Messages, opts...)
	if err != nil {
		return nil, err
	}
	return &Reply{Message: resp.Message, Usage: resp.Usage}, nil
}

// DefaultCLITimeout bounds a run of a [CLIAgent] whose Timeout is zero.
const DefaultCLITimeout = 10 * time.Minute

// DefaultMaxArgPrompt is the largest prompt a [CLIAgent] in [PromptAuto]
// mode passes as an argument; a larger one goes on standard input (the
// system's limit on a command line is often 128 KB per argument).
const DefaultMaxArgPrompt = 64 << 10

// PromptInput says how a [CLIAgent] gets its prompt.
type PromptInput string

// The ways of passing the prompt.
const (
	// PromptAuto passes the prompt as an argument, or on standard input
	// when it is longer than MaxArgPrompt.
	PromptAuto PromptInput = ""
	// PromptArg always passes it as an argument.
	PromptArg PromptInput = "arg"
	// PromptStdin always passes it on standard input.
	PromptStdin PromptInput = "stdin"
)

// CLIAgent is an [Agent] that runs an external coding CLI as a
// subprocess, in the workspace. It is [Autonomous]: Codur runs it once per
// delegation, with the task as its prompt. The prompt (the conversation
// as text) replaces "{prompt}" in Args, or is the last argument when no
// argument has the placeholder; on standard input (see [PromptInput]), an
// argument that is just "{prompt}" is dropped and the placeholder removed
// from the others. Its standard output is the answer — never executed:
// the CLI changes the workspace itself. Output past 1 MiB is cut, with a
// marker saying so. Every process the command started is killed when it
// exits or times out; a CLI that times out returns a [*CLIError] holding
// what it wrote until then.
//
// The CLI runs through [tools.RunCommand], confined to the workspace: in
// the bubblewrap sandbox where the machine has one, the workspace is the
// only directory it can write besides a private /tmp and HOME, and the
// rest of the file system (this user's home included) is absent apart
// from the read-only system directories (/usr, /etc, /opt, …) and the
// CLI's own executable. It has the network, which a coding CLI needs to
// reach its model, unless RunOptions holds tools.WithNetwork(false) (the
// configuration's network: false). A CLI installed elsewhere (an npm
// prefix under HOME) or one that keeps its login in HOME needs those
// directories in RunOptions (tools.WithReadOnlyPaths,
// tools.WithWritablePaths, tools.WithHome); the configuration file's
// read_only_paths, writable_paths and home set them. The workspace's .git
// is read-only in the sandbox, so that the CLI cannot plant a hook the
// user's next git command runs; a CLI that commits needs
// tools.WithVCSWrites(true) (vcs_writes). Where there is no
// sandbox the CLI is a process of this user started in the workspace, and
// can read and write whatever this user can — unless RunOptions holds
// tools.WithSandbox(tools.SandboxRequired), which refuses to run it
// there. Sandboxed or not, it is not given this process's environment:
// it gets PATH, LANG, LC_*, TERM, TZ, USER, LOGNAME, a HOME of its own,
// and Env — so an API key it needs must be in Env ("NAME=value", or "NAME"
// to pass this process's variable of that name).
type CLIAgent struct {
	// Command and Args run the CLI.
	Command string
	Args    []string
	// Timeout bounds a run (DefaultCLITimeout if zero).
	Timeout time.Duration
	// Env is added to the minimal environment: "NAME=value", or "NAME"
	// to pass this process's value of NAME.
	Env []string
	// Prompt says how the prompt is passed (default PromptAuto).
	Prompt PromptInput
	// MaxArgPrompt is the longest prompt PromptAuto passes as an argument
	// (DefaultMaxArgPrompt if zero).
	MaxArgPrompt int
	// RunOptions are options of tools.RunCommand for each run, after the
	// defaults (sandbox where available, network).
	RunOptions []tools.Option
}

// cliEnv resolves a CLI agent's Env: "NAME" becomes this process's
// NAME=value, or nothing when it is unset.
func cliEnv(extra []string) []string {
	var env []string
	for _, kv := range extra {
		if strings.Contains(kv, "=") {
			env = append(env, kv)
		} else if v, ok := os.LookupEnv(kv); ok {
			env = append(env, kv+"="+v)
		}
	}
	return env
}

// CLIError reports a CLI agent that exited with a non-zero status or
// timed out.
type CLIError struct {
	Command  string
	ExitCode int
	// TimedOut reports a CLI killed at its time limit, Timeout.
	TimedOut bool
	Timeout  time.Duration
	// Stderr is the end of what it wrote on its standard error.
	Stderr string
	// Output is what it wrote on its standard output (its partial answer
	// when it timed out), cut as an answer is.
	Output string
}

// Error implements error.
func (e *CLIError) Error() string {
	if e.TimedOut {
		return fmt.Sprintf("codur: agent command %s timed out (time limit %s)", e.Command, e.Timeout)
	}
	return fmt.Sprintf("codur: agent command %s exited with status %d: %s", e.Command, e.ExitCode, strings.TrimSpace(e.Stderr))
}

// maxCLIOutput bounds what is kept of a CLI agent's output.
const maxCLIOutput = 1 << 20

// Autonomous implements [Autonomous].
func (a *CLIAgent) Autonomous() {}

// Run implements [Agent].
func (a *CLIAgent) Run(ctx context.Context, req Request) (*Reply, error) {
	if a.Command == "" {
		return nil, errors.New("codur: CLI agent has no command")
	}
	if req.Dir == "" {
		return nil, errors.New("codur: CLI agent needs a workspace directory")
	}
	prompt := promptText(req.Messages)
	onStdin := false
	switch a.Prompt {
	case PromptArg:
	case PromptStdin:
		onStdin = true
	case PromptAuto:
		limit := a.MaxArgPrompt
		if limit <= 0 {
			limit = DefaultMaxArgPrompt
		}
		onStdin = len(prompt) > limit
	default:
		return nil, fmt.Errorf("codur: CLI agent: unknown prompt input %q (want %q or %q)", a.Prompt, PromptArg, PromptStdin)
	}
	args := make([]string, 0, len(a.Args)+1)
	placed := false
	for _, arg := range a.Args {
		if strings.Contains(arg, "{prompt}") {
			placed = true
			if onStdin {
				if arg == "{prompt}" {
					continue
				}
				arg = strings.ReplaceAll(arg, "{prompt}", "")
			} else {
				arg = strings.ReplaceAll(arg, "{prompt}", prompt)
			}
		}
		args = append(args, arg)
	}
	if !placed && !onStdin {
		args = append(args, prompt)
	}
	var stdin io.Reader
	if onStdin {
		stdin = strings.NewReader(prompt)
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultCLITimeout
	}
	ws, err := tools.NewWorkspace(req.Dir)
	if err != nil {
		return nil, fmt.Errorf("codur: agent command %s: %w", a.Command, err)
	}
	opts := append(append([]tools.Option{tools.WithNetwork(true)}, a.RunOptions...), tools.WithTimeout(timeout))
	var stdout, stderr bytes.Buffer
	out := &limitWriter{w: &stdout, n: maxCLIOutput}
	res, err := tools.RunCommand(ctx, ws, tools.Command{
		Args:        append([]string{a.Command}, args...),
		ShowProgram: true, // the CLI is visible in the sandbox wherever it is installed
		Env:         cliEnv(a.Env),
		Stdin:       stdin,
		Stdout:      out,
		Stderr:      &limitWriter{w: &stderr, n: 64 << 10},
	}, opts...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("codur: agent command %s: %w", a.Command, err)
	}
	answer := strings.TrimSpace(stdout.String())
	if out.dropped > 0 {
		answer += fmt.Sprintf("\n[output truncated: the CLI wrote %d bytes; the first %d are kept]", out.n+out.dropped, out.n)
	}
	if res.TimedOut || res.ExitCode != 0 {
		tail := stderr.String()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		ce := &CLIError{Command: a.Command, ExitCode: res.ExitCode, TimedOut: res.TimedOut, Stderr: tail, Output: answer}
		if res.TimedOut {
			ce.Timeout = timeout
		}
		return nil, ce
	}
	return &Reply{Message: state.AI(answer)}, nil
}

// promptText renders a conversation as the text given to a CLI agent.
func promptText(msgs []state.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		text := strings.TrimSpace(m.Text())
		if text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		switch m.Role {
		case llms.ChatMessageTypeAI:
			b.WriteString("[your earlier answer]\n")
		case llms.ChatMessageTypeTool:
			b.WriteString("[tool result]\n")
		}
		b.WriteString(text)
	}
	return b.String()
}

// AgentInfo describes an agent of a [Registry].
type AgentInfo struct {
	// Ref is how the planner names it: "llm:<profile>" or "agent:<name>".
	Ref string `json:"ref"`
	// Description is shown to the planner.
	Description string `json:"description,omitempty"`
	// Detail says what runs: the model spec, or the command line.
	Detail string `json:"detail,omitempty"`
}

// DuplicateAgentError is returned by [Registry.Register] for a reference
// already registered.
type DuplicateAgentError struct{ Ref string }

// Error implements error.
func (e *DuplicateAgentError) Error() string {
	return fmt.Sprintf("codur: agent %q is already registered", e.Ref)
}

// BadRefError is returned for an agent reference that is neither
// "llm:<profile>" nor "agent:<name>".
type BadRefError struct{ Ref string }

// Error implements error.
func (e *BadRefError) Error() string {
	return fmt.Sprintf("codur: bad agent reference %q: want llm:<profile> or agent:<name>", e.Ref)
}

// Registry holds the agents the planner can delegate to. It is safe for
// concurrent use; its zero value is empty and ready.
type Registry struct {
	mu     sync.RWMutex
	agents map[string]Agent
	infos  map[string]AgentInfo
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Register adds the agent a under info.Ref, which must be "llm:<profile>"
// or "agent:<name>" and not registered yet.
func (r *Registry) Register(info AgentInfo, a Agent) error {
	kind, name, ok := strings.Cut(info.Ref, ":")
	if !ok || (kind != "llm" && kind != "agent") || strings.TrimSpace(name) == "" || a == nil {
		return &BadRefError{Ref: info.Ref}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.agents[info.Ref]; dup {
		return &DuplicateAgentError{Ref: info.Ref}
	}
	if r.agents == nil {
		r.agents, r.infos = map[string]Agent{}, map[string]AgentInfo{}
	}
	r.agents[info.Ref], r.infos[info.Ref] = a, info
	return nil
}

// Get returns the agent registered under ref.
func (r *Registry) Get(ref string) (Agent, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.agents[ref]
	return a, ok
}

// List returns the agents, sorted by reference.
func (r *Registry) List() []AgentInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]AgentInfo, 0, len(r.infos))
	for _, i := range r.infos {
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b AgentInfo) int { return strings.Compare(a.Ref, b.Ref) })
	return out
}

// toolDescriptions lists tools for the prompts.
func toolDescriptions(ts []tools.Tool) string {
	if len(ts) == 0 {
		return "(none)"
	}
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteByte('\n')
		}
		desc, _, _ := strings.Cut(t.Description(), ". ")
		fmt.Fprintf(&b, "- %s: %s (arguments: %s)", t.Name(), strings.TrimSuffix(desc, "."), t.Parameters())
	}
	return b.String()
}
