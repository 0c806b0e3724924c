package codur

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/tools"
)

// Config is Codur's configuration file (YAML):
//
//	default_agent: llm:coder
//	planner: planner              # the profile of the planning phases
//	profiles:
//	  coder:   {model: "openai:gpt-4o-mini", description: "writes and fixes code"}
//	  planner: {model: "openai:gpt-4o-mini"}
//	agents:
//	  claude:
//	    command: claude
//	    args: ["-p", "{prompt}"]
//	    timeout: 10m
//	    description: Claude Code, for large changes
//	    network: true                # the default; false cuts it in the sandbox
//	    read_only_paths: [/opt/claude]
//	    writable_paths: [/home/me/.claude]
//	    vcs_writes: true             # it commits: .git writable in the sandbox
//	sandbox: auto                   # auto | required | off: CLI agents and verified programs
//	mcp_servers:
//	  files: {command: my-mcp-server, args: ["--root", "."]}
//	  remote: {url: "http://localhost:8080/mcp", connect_timeout: 10s, call_timeout: 2m}
//	runtime:
//	  max_iterations: 10
//	  max_tool_rounds: 5
//	  pre_plan_confidence: 0.9
//	  detect_tool_calls_from_text: true
//	pruning: {keep_errors: 8, keep_attempts: 3, keep_recent: 4}
type Config struct {
	// DefaultAgent is the agent delegated to when the planner names none
	// that is registered.
	DefaultAgent string `yaml:"default_agent"`
	// Planner is the profile of the planning phases (default: the profile
	// of DefaultAgent).
	Planner string `yaml:"planner"`
	// Profiles are the models, "llm:<name>" in the registry.
	Profiles map[string]Profile `yaml:"profiles"`
	// Agents are the external CLIs, "agent:<name>" in the registry.
	Agents map[string]CLIConfig `yaml:"agents"`
	// MCPServers are the MCP servers whose tools are added.
	MCPServers map[string]MCPServer `yaml:"mcp_servers"`
	// Runtime are the limits of a run.
	Runtime Runtime `yaml:"runtime"`
	// Pruning is the message pruning policy.
	Pruning PruningPolicy `yaml:"pruning"`
	// Sandbox is how CLI agents and the programs verification runs are
	// confined: "auto" (the default: in the bubblewrap sandbox where the
	// machine has one), "required" (refuse to run them where there is
	// none) or "off". See [CLIAgent] and [Verifier].
	Sandbox string `yaml:"sandbox"`
	// Unknown collects the keys ParseConfig does not know, to reject them.
	Unknown map[string]any `yaml:",inline"`
}

// Profile is a model of the configuration, "llm:<name>" in the registry.
type Profile struct {
	// Model is a spec of llm.New ("openai:gpt-4o-mini").
	Model string `yaml:"model"`
	// Description is shown to the planner.
	Description string `yaml:"description"`
}

// CLIConfig is an external agent of the configuration, "agent:<name>" in
// the registry (see [CLIAgent]).
type CLIConfig struct {
	// Command and Args run it; "{prompt}" in Args is replaced by the
	// conversation (see [CLIAgent]).
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	// Timeout bounds a run ("10m"; DefaultCLITimeout if zero).
	Timeout time.Duration `yaml:"timeout"`
	// Env are added to its minimal environment: "KEY=value", or "KEY" to
	// pass this process's value (see [CLIAgent]).
	Env []string `yaml:"env"`
	// PromptInput is "arg", "stdin", or empty: an argument unless the
	// prompt is longer than MaxArgPrompt bytes (default
	// DefaultMaxArgPrompt), then standard input.
	PromptInput  PromptInput `yaml:"prompt_input"`
	MaxArgPrompt int         `yaml:"max_arg_prompt"`
	// Description is shown to the planner.
	Description string `yaml:"description"`
	// Network, when false, takes the network away from the CLI in the
	// sandbox (the default is to keep it: a CLI reaches its model).
	Network *bool `yaml:"network"`
	// ReadOnlyPaths and WritablePaths make more paths visible in the
	// sandbox (the CLI's installation, its login directory); Home is its
	// HOME, writable (a fresh one by default). See [CLIAgent].
	ReadOnlyPaths []string `yaml:"read_only_paths"`
	WritablePaths []string `yaml:"writable_paths"`
	Home          string   `yaml:"home"`
	// VCSWrites lets the CLI write the workspace's .git in the sandbox
	// (it commits); by default it is read-only there, so that the CLI
	// cannot plant a hook or setting the user's next git command runs
	// (tools.WithVCSWrites).
	VCSWrites bool `yaml:"vcs_writes"`
}

// MCPServer is an MCP server whose tools are added to Codur's: a command
// speaking MCP over stdio, or the URL of a streamable HTTP server.
type MCPServer struct {
	// Command, Args and Env start a stdio server (in the workspace). Env
	// entries are "NAME=value", or "NAME" to pass this process's value, as
	// a CLI agent's are.
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []string `yaml:"env"`
	// URL is the endpoint of a streamable HTTP server, and Headers are
	// sent with every request to it; ${NAME} in a header's value is this
	// process's variable NAME, which must be set ("Authorization: Bearer
	// ${MCP_TOKEN}"); any other "$" is kept as written.
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	// ConnectTimeout bounds the server's start and handshake ("10s";
	// mcp.DefaultConnectTimeout, 30 s, if zero); CallTimeout each request,
	// the tool listing included (mcp.DefaultCallTimeout, 5 min, if zero).
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	CallTimeout    time.Duration `yaml:"call_timeout"`
}

// Runtime are the limits of a run.
type Runtime struct {
	// MaxIterations, MaxToolRounds and PrePlanConfidence set the options
	// of the same names when positive.
	MaxIterations     int     `yaml:"max_iterations"`
	MaxToolRounds     int     `yaml:"max_tool_rounds"`
	PrePlanConfidence float64 `yaml:"pre_plan_confidence"`
	// DetectToolCallsFromText, when set to false, turns text detection off.
	DetectToolCallsFromText *bool `yaml:"detect_tool_calls_from_text"`
	// ExtractToolCallsWithModel turns WithToolCallExtraction on.
	ExtractToolCallsWithModel bool `yaml:"extract_tool_calls_with_model"`
}

// LoadConfig reads a configuration file. Unknown top-level keys are
// errors, so that a misspelt section is not silently ignored.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("codur: config: %w", err)
	}
	return ParseConfig(data)
}

// ParseConfig parses a configuration (see [Config]).
func ParseConfig(data []byte) (Config, error) {
	var c Config
	if err := yaml.Unmarshal(data, &c); err != nil {
		return Config{}, fmt.Errorf("codur: config: %w", err)
	}
	if len(c.Unknown) > 0 {
		keys := make([]string, 0, len(c.Unknown))
		for k := range c.Unknown {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return Config{}, fmt.Errorf("codur: config: unknown keys %s", strings.Join(keys, ", "))
	}
	for name, p := range c.Profiles {
		if strings.TrimSpace(p.Model) == "" {
			return Config{}, fmt.Errorf("codur: config: profile %q has no model", name)
		}
	}
	for name, a := range c.Agents {
		if strings.TrimSpace(a.Command) == "" {
			return Config{}, fmt.Errorf("codur: config: agent %q has no command", name)
		}
		switch a.PromptInput {
		case PromptAuto, PromptArg, PromptStdin:
		default:
			return Config{}, fmt.Errorf("codur: config: agent %q: prompt_input %q: want arg or stdin", name, a.PromptInput)
		}
		if a.MaxArgPrompt < 0 {
			return Config{}, fmt.Errorf("codur: config: agent %q: max_arg_prompt %d is negative", name, a.MaxArgPrompt)
		}
	}
	if _, err := tools.ParseSandboxMode(c.Sandbox); err != nil {
		return Config{}, fmt.Errorf("codur: config: %w", err)
	}
	for name, s := range c.MCPServers {
		if (s.Command == "") == (s.URL == "") {
			return Config{}, fmt.Errorf("codur: config: MCP server %q needs exactly one of command and url", name)
		}
		if len(s.Headers) > 0 && s.URL == "" {
			return Config{}, fmt.Errorf("codur: config: MCP server %q: headers need a url", name)
		}
		if s.ConnectTimeout < 0 || s.CallTimeout < 0 {
			return Config{}, fmt.Errorf("codur: config: MCP server %q: negative timeout", name)
		}
	}
	return c, nil
}

// ModelFactory makes the model of a spec; llm.New is one.
type ModelFactory func(ctx context.Context, spec string) (llm.Model, error)

// Registry builds the registry of the configuration: each profile as
// "llm:<name>" with its model made by newModel (llm.New when nil), each
// CLI agent as "agent:<name>".
func (c Config) Registry(ctx context.Context, newModel ModelFactory) (*Registry, error) {
	if newModel == nil {
		newModel = func(ctx context.Context, spec string) (llm.Model, error) { return llm.New(ctx, spec) }
	}
	r := NewRegistry()
	var errs []error
	for _, name := range sortedKeys(c.Profiles) {
		p := c.Profiles[name]
		m, err := newModel(ctx, p.Model)
		if err != nil {
			errs = append(errs, fmt.Errorf("profile %s: %w", name, err))
			continue
		}
		errs = append(errs, r.Register(profileInfo(name, p), &ModelAgent{Model: m}))
	}
	for _, name := range sortedKeys(c.Agents) {
		a := c.Agents[name]
		errs = append(errs, r.Register(agentInfo(name, a),
			&CLIAgent{Command: a.Command, Args: a.Args, Timeout: a.Timeout, Env: a.Env, Prompt: a.PromptInput, MaxArgPrompt: a.MaxArgPrompt,
				RunOptions: c.agentRunOptions(a)}))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("codur: config: %w", err)
	}
	return r, nil
}

// AgentInfos lists the agents of the configuration as [Config.Registry]
// registers them, sorted by reference, without making their models: it
// needs no API key.
func (c Config) AgentInfos() []AgentInfo {
	var out []AgentInfo
	for _, name := range sortedKeys(c.Profiles) {
		out = append(out, profileInfo(name, c.Profiles[name]))
	}
	for _, name := range sortedKeys(c.Agents) {
		out = append(out, agentInfo(name, c.Agents[name]))
	}
	slices.SortFunc(out, func(a, b AgentInfo) int { return strings.Compare(a.Ref, b.Ref) })
	return out
}

// profileInfo describes the profile name, "llm:<name>".
func profileInfo(name string, p Profile) AgentInfo {
	return AgentInfo{Ref: "llm:" + name, Description: p.Description, Detail: p.Model}
}

// agentInfo describes the CLI agent name, "agent:<name>".
func agentInfo(name string, a CLIConfig) AgentInfo {
	detail := strings.TrimSpace(a.Command + " " + strings.Join(a.Args, " "))
	return AgentInfo{Ref: "agent:" + name, Description: a.Description, Detail: detail}
}

// RunOptions returns the tools.RunCommand options the configuration sets
// for the programs verification runs ([Verifier.RunOptions]): its
// sandbox mode.
func (c Config) RunOptions() []tools.Option {
	mode, _ := tools.ParseSandboxMode(c.Sandbox) // checked by ParseConfig
	return []tools.Option{tools.WithSandbox(mode)}
}

// agentRunOptions returns the tools.RunCommand options of the CLI agent
// a: the sandbox mode and the paths it sees.
func (c Config) agentRunOptions(a CLIConfig) []tools.Option {
	opts := c.RunOptions()
	if len(a.ReadOnlyPaths) > 0 {
		opts = append(opts, tools.WithReadOnlyPaths(a.ReadOnlyPaths...))
	}
	if len(a.WritablePaths) > 0 {
		opts = append(opts, tools.WithWritablePaths(a.WritablePaths...))
	}
	if a.Home != "" {
		opts = append(opts, tools.WithHome(a.Home))
	}
	if a.Network != nil {
		opts = append(opts, tools.WithNetwork(*a.Network))
	}
	if a.VCSWrites {
		opts = append(opts, tools.WithVCSWrites(true))
	}
	return opts
}

// Options returns the options of [New] the configuration sets.
func (c Config) Options() []Option {
	var opts []Option
	if c.DefaultAgent != "" {
		opts = append(opts, WithDefaultAgent(c.DefaultAgent))
	}
	if c.Runtime.MaxIterations > 0 {
		opts = append(opts, WithMaxIterations(c.Runtime.MaxIterations))
	}
	if c.Runtime.MaxToolRounds > 0 {
		opts = append(opts, WithMaxToolRounds(c.Runtime.MaxToolRounds))
	}
	if c.Runtime.PrePlanConfidence > 0 {
		opts = append(opts, WithPrePlanConfidence(c.Runtime.PrePlanConfidence))
	}
	if c.Runtime.DetectToolCallsFromText != nil {
		opts = append(opts, WithTextToolCalls(*c.Runtime.DetectToolCallsFromText))
	}
	if c.Runtime.ExtractToolCallsWithModel {
		opts = append(opts, WithToolCallExtraction(true))
	}
	opts = append(opts, WithPruning(c.Pruning))
	return opts
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
