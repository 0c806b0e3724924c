// Command codur is a coding assistant built on agent/codur: three planning
// phases (patterns, a quick classification, a full plan), delegation to
// model or CLI agents with a tool loop, and a review that runs the program,
// tries cheap local repairs and loops with the verification failure.
//
//	codur "task" [--cwd DIR] [--config FILE] [--model SPEC] [--sandbox MODE] [--verbose]
//	codur challenge [DIR…] [-j N] [--baseline] [--config FILE] [--model SPEC] [--sandbox MODE] [--report FILE.md] [--json FILE.json]
//	codur agents [--config FILE] [--model SPEC] [--json]
//	codur graph
//
// The model comes from --config (profiles, agents, MCP servers; see
// codur.Config), else --model, else $CODUR_MODEL, as a spec of llm.New
// ("openai:gpt-4o-mini", "ollama:qwen3", …). With none, codur runs
// offline: `codur "task"` and `codur challenge` run the bundled challenges
// on a SCRIPTED model whose replies are canned (the tools, the program
// runs, the verification and the local repairs are real), and say so.
//
// The challenge report says what solved each challenge — the model or an
// agent (on which iteration), a local repair, the textual pre-plan, or
// nothing: the program was already correct — and counts each;
// --baseline runs the same challenges again with a model that changes
// nothing and prints its counts beside.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/agent/codur/challenge"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/examples/internal/sandboxnote"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/tools"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

const usage = `codur — a three-phase planning coding assistant.

Usage:
  codur "task" [--cwd DIR] [--config FILE] [--model SPEC] [--sandbox auto|required|off] [--verbose]
  codur challenge [DIR…] [-j N] [--baseline] [--config FILE] [--model SPEC] [--sandbox auto|required|off] [--report FILE.md] [--json FILE.json]
                            run challenges (default: the bundled ones);
                            --baseline also runs them with a model that changes nothing
  codur agents [--config FILE] [--model SPEC] [--json]
                            list the agents the planner can delegate to
  codur graph               print the graph as a Mermaid flowchart

Without --config, --model or $CODUR_MODEL, codur runs offline on a scripted model.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "challenge":
		return challengeCommand(ctx, args[1:], stdout, stderr)
	case "agents":
		return agentsCommand(ctx, args[1:], stdout, stderr)
	case "graph":
		return graphCommand(stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	return taskCommand(ctx, args, stdout, stderr)
}

// modelFlags are the flags choosing the models.
type modelFlags struct {
	config, model, sandbox string

	loaded sync.Once // loadConfig reads the file once, for every challenge
	cfg    codur.Config
	cfgErr error
}

func (m *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.config, "config", "", "configuration file (YAML)")
	fs.StringVar(&m.model, "model", "", "model spec for the planner and llm:default (default $CODUR_MODEL)")
	fs.StringVar(&m.sandbox, "sandbox", "", "auto|required|off: how CLI agents, verified programs and bash_exec are confined (default: the config's sandbox, else auto)")
}

// loadConfig reads --config, with --sandbox over its sandbox setting,
// once.
func (m *modelFlags) loadConfig() (codur.Config, error) {
	m.loaded.Do(func() {
		m.cfg, m.cfgErr = codur.LoadConfig(m.config)
		if m.cfgErr == nil && m.sandbox != "" {
			m.cfg.Sandbox = m.sandbox
		}
	})
	return m.cfg, m.cfgErr
}

// sandboxMode returns how the programs a run starts (CLI agents,
// bash_exec, the verified program) are confined: --sandbox, else the
// configuration's sandbox setting, else auto.
func (m *modelFlags) sandboxMode() (tools.SandboxMode, error) {
	setting := m.sandbox
	if setting == "" && m.config != "" {
		cfg, err := m.loadConfig()
		if err != nil {
			return tools.SandboxAuto, err
		}
		setting = cfg.Sandbox
	}
	mode, err := tools.ParseSandboxMode(setting)
	if err != nil {
		return tools.SandboxAuto, fmt.Errorf("--sandbox: %w", err)
	}
	return mode, nil
}

// offline reports that no model is configured.
func (m *modelFlags) offline() bool {
	return m.config == "" && m.model == "" && os.Getenv("CODUR_MODEL") == ""
}

// models returns the planner and the registry of the flags, and the
// configuration when --config is given (nil otherwise).
func (m *modelFlags) models(ctx context.Context) (llm.Model, *codur.Registry, *codur.Config, error) {
	if m.config == "" {
		spec := m.model
		if spec == "" {
			spec = os.Getenv("CODUR_MODEL")
		}
		model, err := llm.New(ctx, spec)
		if err != nil {
			return nil, nil, nil, err
		}
		reg := codur.NewRegistry()
		err = reg.Register(codur.AgentInfo{Ref: codur.DefaultAgent, Description: "the model " + spec, Detail: spec}, &codur.ModelAgent{Model: model})
		return model, reg, nil, err
	}
	cfg, err := m.loadConfig()
	if err != nil {
		return nil, nil, nil, err
	}
	reg, err := cfg.Registry(ctx, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	plannerRef := "llm:" + cfg.Planner
	if cfg.Planner == "" {
		plannerRef = cfg.DefaultAgent
	}
	a, ok := reg.Get(plannerRef)
	ma, isModel := a.(*codur.ModelAgent)
	if !ok || !isModel {
		return nil, nil, nil, fmt.Errorf("config: the planner %q must be a profile (set planner: or default_agent: llm:<profile>)", plannerRef)
	}
	return ma.Model, reg, &cfg, nil
}

// setup returns the planner, the registry, the options and the MCP tools
// of the flags for the workspace dir. An MCP server that cannot be
// reached is reported on stderr, and the run goes on without its tools.
func (m *modelFlags) setup(ctx context.Context, dir string, stderr io.Writer) (llm.Model, *codur.Registry, []codur.Option, []tools.Tool, func() error, error) {
	noop := func() error { return nil }
	planner, reg, cfg, err := m.models(ctx)
	if err != nil || cfg == nil {
		return planner, reg, nil, nil, noop, err
	}
	mcpTools, closeMCP, err := mcpTools(cfg, stderr)(ctx, dir)
	if err != nil {
		return nil, nil, nil, nil, noop, err
	}
	return planner, reg, cfg.Options(), mcpTools, closeMCP, nil
}

// mcpTools is cfg.MCPTools, which reports the MCP servers that could
// not be reached on stderr, once, and goes on with the others' tools. A
// server that failed is left out of the later calls (the challenges after
// the first): connecting to it again would cost its connect time limit
// every time.
func mcpTools(cfg *codur.Config, stderr io.Writer) challenge.ToolSource {
	var once sync.Once
	var mu sync.Mutex
	failed := map[string]bool{}
	return func(ctx context.Context, dir string) ([]tools.Tool, func() error, error) {
		c := *cfg
		mu.Lock()
		if len(failed) > 0 {
			c.MCPServers = maps.Clone(cfg.MCPServers)
			for name := range failed {
				delete(c.MCPServers, name)
			}
		}
		mu.Unlock()
		ts, closeMCP, err := c.MCPTools(ctx, dir)
		if partial, ok := errors.AsType[*codur.MCPServersError](err); ok {
			mu.Lock()
			for name := range partial.Failed {
				failed[name] = true
			}
			mu.Unlock()
			once.Do(func() { printError(stderr, partial) })
			err = nil
		}
		return ts, closeMCP, err
	}
}

const offlineNotice = `No model configured (--config, --model or $CODUR_MODEL): running OFFLINE on a
SCRIPTED model whose replies are canned. The tools, the program runs, the
verification and the local repairs are real; the model's words are not.
Set CODUR_MODEL=openai:gpt-4o-mini (or --config codur.yaml) to use a real model.
`

func taskCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("codur", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	cwd := fs.String("cwd", ".", "workspace directory")
	verbose := fs.Bool("verbose", false, "print model calls and tool results in full")
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(positional) > 1 {
		fmt.Fprintf(stderr, "codur: one task, quoted: codur %q\n", strings.Join(positional, " "))
		return exitUsage
	}
	task := ""
	if len(positional) == 1 {
		task = positional[0]
	}
	if strings.TrimSpace(task) == "" {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	mode, err := mf.sandboxMode()
	if err != nil {
		printError(stderr, err)
		return exitUsage
	}
	fmt.Fprint(stdout, sandboxnote.Lines(tools.SandboxStatus(), mode))
	if mf.offline() {
		fmt.Fprint(stdout, offlineNotice)
		fmt.Fprintf(stdout, "Your task %q was not run; the bundled challenges show every phase instead.\n\n", task)
		// A demonstration: its impossible challenge fails by design, and
		// the task itself did not run, so only a broken run is an error.
		_, code := runChallenges(ctx, nil, challengeFlags{jobs: 2, verbose: *verbose}, mode, &mf, stdout, stderr)
		return code
	}
	dir, err := filepath.Abs(*cwd)
	if err != nil {
		printError(stderr, err)
		return exitError
	}
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		printError(stderr, err)
		return exitError
	}
	planner, reg, opts, mcpTools, closeMCP, err := mf.setup(ctx, dir, stderr)
	if err != nil {
		printError(stderr, err)
		return exitError
	}
	defer closeMCP()
	opts = append(opts, codur.WithWorkspace(dir))
	run := []tools.Option{tools.WithSandbox(mode)}
	v, err := codur.DetectVerifier(dir)
	switch {
	case err == nil:
		v.RunOptions = run
		opts = append(opts, codur.WithVerifier(v))
		cases := ""
		if len(v.Cases) > 0 {
			cases = fmt.Sprintf(" and %d cases", len(v.Cases))
		}
		fmt.Fprintf(stdout, "verifying with: %s (expected.txt%s)\n", strings.Join(v.Command, " "), cases)
		// Whatever ends the run, the expected outputs an agent changed
		// are put back: the next invocation verifies against the same.
		defer func() {
			if restored, err := v.Restore(); err != nil {
				printError(stderr, err)
			} else if len(restored) > 0 {
				fmt.Fprintf(stdout, "restored %s: an agent had changed it\n", strings.Join(restored, ", "))
			}
		}()
	case !errors.Is(err, codur.ErrNoProgram):
		printError(stderr, err)
		return exitError
	}
	g, err := codur.New(planner, reg, append(codur.DefaultTools(ws, run...), mcpTools...), opts...)
	if err != nil {
		printError(stderr, err)
		return exitError
	}
	var final codur.State
	for ev, err := range g.Stream(ctx, codur.Input(task, false), graph.WithStreamModes(graph.ModeValues|graph.ModeCustom)) {
		if err != nil {
			printError(stderr, err)
			return exitError
		}
		if s, ok := ev.Payload.(codur.State); ok {
			final = s
			continue
		}
		printEvent(stdout, ev.Payload, *verbose)
	}
	fmt.Fprintf(stdout, "\n%s\n", final.FinalResponse.Get())
	if final.Iterations.Get() > 0 && !final.Verified.Get() && final.Failures.Len() > 0 {
		return exitError
	}
	return exitOK
}

// printEvent prints one event of a run.
func printEvent(w io.Writer, p any, verbose bool) {
	switch e := p.(type) {
	case codur.Decision:
		line := fmt.Sprintf("[%s] %s", e.Phase, e.Action)
		if e.Agent != "" {
			line += " → " + e.Agent
		}
		if len(e.Tools) > 0 {
			line += " → " + strings.Join(e.Tools, ", ")
		}
		if e.Confidence > 0 {
			line += fmt.Sprintf(" (confidence %.2f)", e.Confidence)
		}
		if e.Fallback {
			line += " (fallback)"
		}
		if e.Reason != "" {
			line += ": " + e.Reason
		}
		fmt.Fprintln(w, line)
	case codur.ToolRound:
		if e.Format != "" {
			fmt.Fprintf(w, "  %s round %d: %s calls %s", e.Agent, e.Round, e.Format, strings.Join(e.Tools, ", "))
			if e.LimitReached {
				fmt.Fprint(w, " (round limit reached, not run)")
			}
			fmt.Fprintln(w)
		}
	case events.ToolResult:
		fmt.Fprintf(w, "    %s → %s\n", e.Name, clip(e.Result, verbose))
	case codur.Verification:
		for _, p := range e.Restored {
			fmt.Fprintf(w, "  %s was changed by the agent: restored\n", p)
		}
		status := "FAILED"
		switch {
		case e.Passed:
			status = "passed"
		case e.TimedOut > 0:
			status = fmt.Sprintf("FAILED: timeout (time limit %s)", e.TimedOut)
		}
		if !e.Passed && e.Case != "" {
			kind := "case"
			if e.Hidden {
				kind = "hidden case"
			}
			status += fmt.Sprintf(" (%s %s)", kind, e.Case)
		}
		fmt.Fprintf(w, "  verification %d %s (%d runs)\n", e.Iteration, status, e.Runs)
	case codur.RepairAttempted:
		switch {
		case e.Skipped != "":
			fmt.Fprintf(w, "  no local repair: %s\n", e.Skipped)
			return
		case e.Partial:
			fmt.Fprint(w, "  (the workspace is large: repairs ran in a copy of the program's directory)\n")
		}
		if e.Fixed != "" {
			fmt.Fprintf(w, "  local repair %s fixed it (%d candidates)\n", e.Fixed, e.Tried)
		} else if e.OutOfTime > 0 {
			fmt.Fprintf(w, "  no local repair among %d candidates (out of its time, %s)\n", e.Tried, e.OutOfTime)
		} else {
			fmt.Fprintf(w, "  no local repair among %d candidates\n", e.Tried)
		}
	case events.ModelCall:
		if verbose {
			fmt.Fprintf(w, "  model: %s\n", clip(e.Text, true))
		}
	}
}

func clip(s string, full bool) string {
	s = strings.TrimSpace(s)
	if !full {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[:i] + " …"
		}
		if len(s) > 100 {
			s = s[:100] + "…"
		}
	}
	return s
}

// parseInterspersed parses args with fs, flags and positional arguments in
// any order, and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func challengeCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("codur challenge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	var cf challengeFlags
	fs.IntVar(&cf.jobs, "j", 2, "challenges run at once")
	fs.StringVar(&cf.report, "report", "", "write the Markdown report to this file")
	fs.StringVar(&cf.json, "json", "", "write the JSON report to this file")
	fs.BoolVar(&cf.verbose, "verbose", false, "print each result as it comes")
	fs.BoolVar(&cf.baseline, "baseline", false, "also run the challenges with a model that changes nothing, and report its score beside")
	dirs, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	mode, err := mf.sandboxMode()
	if err != nil {
		printError(stderr, err)
		return exitUsage
	}
	fmt.Fprint(stdout, sandboxnote.Lines(tools.SandboxStatus(), mode))
	if mf.offline() {
		fmt.Fprint(stdout, offlineNotice+"\n")
	}
	failed, code := runChallenges(ctx, dirs, cf, mode, &mf, stdout, stderr)
	if code == exitOK && failed > 0 {
		fmt.Fprintf(stderr, "codur: %d challenge(s) failed\n", failed)
		return exitError
	}
	return code
}

// challengeFlags are the flags of codur challenge.
type challengeFlags struct {
	jobs         int
	report, json string
	verbose      bool
	baseline     bool
}

// runChallenges runs the challenges of dirs (the bundled ones when none),
// and with cf.baseline again with the null model, prints and writes the
// report, and returns how many failed; code is exitError when the run
// itself could not be made. mode confines bash_exec and the verified
// programs.
func runChallenges(ctx context.Context, dirs []string, cf challengeFlags, mode tools.SandboxMode,
	mf *modelFlags, stdout, stderr io.Writer) (failed, code int) {
	var chs []challenge.Challenge
	var err error
	if len(dirs) == 0 {
		chs, err = challenge.Bundled()
	} else {
		chs, err = challenge.Load(dirs...)
	}
	if err != nil {
		printError(stderr, err)
		return 0, exitError
	}
	setup, name := challenge.Setup(challenge.Offline), "scripted (offline)"
	// The sandbox mode applies to bash_exec and to the verified programs.
	opts := []challenge.Option{challenge.WithToolOptions(tools.WithSandbox(mode))}
	if !mf.offline() {
		name = mf.model
		if mf.config != "" {
			name = "config " + mf.config
		} else if name == "" {
			name = os.Getenv("CODUR_MODEL")
		}
		setup = func(ctx context.Context, _ challenge.Challenge, _ string) (llm.Model, *codur.Registry, error) {
			planner, reg, _, err := mf.models(ctx)
			return planner, reg, err
		}
		if mf.config != "" {
			// The configuration's options (default agent, limits …) and
			// MCP servers apply to every challenge, as to a task.
			cfg, err := mf.loadConfig()
			if err != nil {
				printError(stderr, err)
				return 0, exitError
			}
			opts = append(opts, challenge.WithCodurOptions(cfg.Options()...), challenge.WithTools(mcpTools(&cfg, stderr)))
		}
	}
	opts = append(opts, challenge.WithParallel(cf.jobs))
	if cf.verbose {
		opts = append(opts, challenge.WithProgress(func(r challenge.Result) {
			status := "FAIL: " + r.Error
			if r.Passed {
				status = "pass: " + r.SolvedBy
			}
			fmt.Fprintf(stdout, "%s %s (%d iterations, decided by %s)\n", r.Name, status, r.Iterations, r.DecidedBy)
		}))
	}
	rep, err := challenge.Run(ctx, chs, setup, append(opts, challenge.WithModelName(name))...)
	if err != nil {
		printError(stderr, err)
		return 0, exitError
	}
	if cf.baseline {
		// The same challenges, tools and limits, with a model that
		// changes nothing: what passes then is not the model's.
		// One iteration is enough: the null model's next ones would see
		// the same workspace, verify the same, and skip the repair search
		// of the same program.
		base, err := challenge.Run(ctx, chs, challenge.Null, challenge.WithToolOptions(tools.WithSandbox(mode)), challenge.WithParallel(cf.jobs),
			challenge.WithCodurOptions(codur.WithMaxIterations(1)), challenge.WithModelName("baseline (a model that changes nothing)"))
		if err != nil {
			printError(stderr, err)
			return 0, exitError
		}
		rep.Baseline = base
	}
	md := rep.Markdown()
	fmt.Fprint(stdout, md)
	mdPath, jsonPath := cf.report, cf.json
	if mdPath != "" {
		if err := os.WriteFile(mdPath, []byte(md), 0o644); err != nil {
			printError(stderr, err)
			return 0, exitError
		}
	}
	if jsonPath != "" {
		b, err := rep.JSON()
		if err == nil {
			err = os.WriteFile(jsonPath, b, 0o644)
		}
		if err != nil {
			printError(stderr, err)
			return 0, exitError
		}
	}
	return rep.Failed, exitOK
}

func agentsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("codur agents", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if mf.config != "" {
		// The configuration's agents are listed without making their
		// models: no API key is needed.
		cfg, err := mf.loadConfig()
		if err != nil {
			printError(stderr, err)
			return exitError
		}
		printAgents(stdout, cfg.AgentInfos(), *asJSON)
		return exitOK
	}
	var reg *codur.Registry
	if mf.offline() {
		fmt.Fprintln(stderr, "codur: no model configured; showing the offline registry")
		reg = codur.NewRegistry()
		if err := reg.Register(codur.AgentInfo{Ref: codur.DefaultAgent, Description: "scripted offline model", Detail: "scripted"},
			&codur.ModelAgent{Model: llm.NewScripted()}); err != nil {
			printError(stderr, err)
			return exitError
		}
	} else {
		var err error
		if _, reg, _, _, _, err = mf.setup(ctx, ".", stderr); err != nil {
			printError(stderr, err)
			return exitError
		}
	}
	printAgents(stdout, reg.List(), *asJSON)
	return exitOK
}

// printAgents prints the agents one a line, or as JSON.
func printAgents(w io.Writer, list []codur.AgentInfo, asJSON bool) {
	if asJSON {
		b, _ := json.MarshalIndent(list, "", "  ")
		fmt.Fprintln(w, string(b))
		return
	}
	for _, a := range list {
		fmt.Fprintf(w, "%-20s %s", a.Ref, a.Detail)
		if a.Description != "" {
			fmt.Fprintf(w, " — %s", a.Description)
		}
		fmt.Fprintln(w)
	}
}

func graphCommand(stdout, stderr io.Writer) int {
	m := llm.NewScripted()
	reg := codur.NewRegistry()
	err := reg.Register(codur.AgentInfo{Ref: codur.DefaultAgent}, &codur.ModelAgent{Model: m})
	if err != nil {
		printError(stderr, err)
		return exitError
	}
	g, err := codur.New(m, reg, nil)
	if err != nil {
		printError(stderr, err)
		return exitError
	}
	fmt.Fprint(stdout, g.Mermaid())
	return exitOK
}

// printError prints err on w, prefixed "codur: " unless it says so
// already (the errors of package codur do).
func printError(w io.Writer, err error) {
	msg := err.Error()
	if !strings.HasPrefix(msg, "codur:") {
		msg = "codur: " + msg
	}
	fmt.Fprintln(w, msg)
}
