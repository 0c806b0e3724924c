// Package challenge runs Codur on a folder of challenges and reports the
// pass rate.
//
// A challenge is a folder holding prompt.txt (the task), a program
// (main.py or main.go), expected.txt (its expected output when run with
// no arguments and no input), and optionally:
//
//   - cases/NAME/{expected.txt,args,stdin}: more runs of the program, each
//     with its arguments (one a line), standard input and expected output
//     (see codur.LoadCases). They are hidden: never copied into the
//     workspace the agent works in, nor shown in a verification failure,
//     and a pass needs every one of them — a program that prints the one
//     output it was shown does not pass.
//   - challenge.json ({"max_iterations": 3});
//   - offline.json: the replies of the scripted model used when no model
//     is configured, a list of {"text": "...", "tool_calls": [{"name":
//     "...", "args": {...}}]}.
//
// [Load] checks a folder when it reads it: a missing program or
// expected.txt, an unknown field of challenge.json or offline.json, or a
// malformed case is an error naming the file.
//
// [Run] runs each challenge on a temporary copy, several at once, and
// returns a [Report] that renders as Markdown or JSON. Each result says
// what solved it (an agent or a planning model on iteration N, a local
// repair, the textual pre-plan, or nothing: the program was already
// correct), and the report counts each. [Null] is the Setup of a model
// that changes nothing, the baseline of those counts. [Bundled] returns
// the challenges that ship with the package.
package challenge

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// Files that describe a challenge rather than belong to its program; they
// are not copied into the workspace.
const (
	PromptFile  = "prompt.txt"
	ConfigFile  = "challenge.json"
	OfflineFile = "offline.json"
)

// ExpectedFile is the expected output of the program's plain run.
const ExpectedFile = "expected.txt"

// Challenge is one challenge.
type Challenge struct {
	// Name is the folder's name.
	Name string `json:"name"`
	// Prompt is the task.
	Prompt string `json:"prompt"`
	// MaxIterations overrides the run's iteration limit when positive.
	MaxIterations int `json:"max_iterations,omitempty"`
	// Offline are the scripted model's replies, nil when the challenge has
	// no offline.json.
	Offline []llm.Reply `json:"-"`
	// Cases are the hidden cases of the cases folder.
	Cases []codur.Case `json:"-"`

	files fs.FS
	root  string
}

// offlineReply is a reply of offline.json.
type offlineReply struct {
	Text      string `json:"text"`
	ToolCalls []struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"tool_calls"`
}

// LoadError reports a challenge folder that is not well formed.
type LoadError struct {
	// Challenge is the folder's name; File the file at fault, if one.
	Challenge, File string
	// Err says what is wrong.
	Err error
}

// Error implements error.
func (e *LoadError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("challenge %s: %v", e.Challenge, e.Err)
	}
	return fmt.Sprintf("challenge %s: %s: %v", e.Challenge, e.File, e.Err)
}

// Unwrap returns the cause.
func (e *LoadError) Unwrap() error { return e.Err }

// decodeStrict decodes data into v, rejecting unknown fields and
// trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

//go:embed all:testdata/challenges
var bundled embed.FS

// Bundled returns the challenges that ship with the package, sorted by
// name.
func Bundled() ([]Challenge, error) { return LoadFS(bundled, "testdata/challenges") }

// Load returns the challenges of dirs: a folder with a prompt.txt is a
// challenge; any other folder holds challenges, one a subfolder.
func Load(dirs ...string) ([]Challenge, error) {
	var all []Challenge
	for _, d := range dirs {
		chs, err := LoadFS(os.DirFS(d), ".")
		if le, ok := errors.AsType[*LoadError](err); ok && le.Challenge == "." {
			le.Challenge = filepath.Base(filepath.Clean(d))
		}
		if err != nil {
			return nil, fmt.Errorf("challenge: %s: %w", d, err)
		}
		if len(chs) == 1 && chs[0].root == "." {
			chs[0].Name = filepath.Base(filepath.Clean(d))
		}
		all = append(all, chs...)
	}
	return all, nil
}

// LoadFS returns the challenges of root in fsys (see [Load]).
func LoadFS(fsys fs.FS, root string) ([]Challenge, error) {
	if _, err := fs.Stat(fsys, path.Join(root, PromptFile)); err == nil {
		ch, err := loadOne(fsys, root)
		if err != nil {
			return nil, err
		}
		return []Challenge{ch}, nil
	}
	entries, err := fs.ReadDir(fsys, root)
	if err != nil {
		return nil, err
	}
	var out []Challenge
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := fs.Stat(fsys, path.Join(root, e.Name(), PromptFile)); err != nil {
			continue
		}
		ch, err := loadOne(fsys, path.Join(root, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	if len(out) == 0 {
		return nil, errors.New("no challenges (folders with a prompt.txt)")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func loadOne(fsys fs.FS, dir string) (Challenge, error) {
	ch := Challenge{Name: path.Base(dir), files: fsys, root: dir}
	bad := func(file string, err error) (Challenge, error) {
		return ch, &LoadError{Challenge: ch.Name, File: file, Err: err}
	}
	prompt, err := fs.ReadFile(fsys, path.Join(dir, PromptFile))
	if err != nil {
		return bad(PromptFile, err)
	}
	ch.Prompt = strings.TrimSpace(string(prompt))
	if ch.Prompt == "" {
		return bad(PromptFile, errors.New("empty task"))
	}
	if _, err := fs.Stat(fsys, path.Join(dir, ExpectedFile)); err != nil {
		return bad(ExpectedFile, errors.New("missing: the expected output of the program"))
	}
	hasProgram := false
	for _, p := range []string{"main.py", "main.go"} {
		if fi, err := fs.Stat(fsys, path.Join(dir, p)); err == nil && fi.Mode().IsRegular() {
			hasProgram = true
		}
	}
	if !hasProgram {
		return bad("", errors.New("no program: want main.py or main.go"))
	}
	if data, err := fs.ReadFile(fsys, path.Join(dir, ConfigFile)); err == nil {
		var c struct {
			MaxIterations int `json:"max_iterations"`
		}
		if err := decodeStrict(data, &c); err != nil {
			return bad(ConfigFile, err)
		}
		if c.MaxIterations < 0 {
			return bad(ConfigFile, fmt.Errorf("max_iterations %d is negative", c.MaxIterations))
		}
		ch.MaxIterations = c.MaxIterations
	}
	if data, err := fs.ReadFile(fsys, path.Join(dir, OfflineFile)); err == nil {
		ch.Offline = []llm.Reply{}
		var replies []offlineReply
		if err := decodeStrict(data, &replies); err != nil {
			return bad(OfflineFile, err)
		}
		for _, r := range replies {
			reply := llm.Reply{Text: r.Text}
			for _, c := range r.ToolCalls {
				reply.ToolCalls = append(reply.ToolCalls, llms.ToolCall{FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: string(c.Args)}})
			}
			ch.Offline = append(ch.Offline, reply)
		}
	}
	casesDir := path.Join(dir, codur.CasesDir)
	if fi, err := fs.Stat(fsys, casesDir); err == nil {
		if !fi.IsDir() {
			return bad(codur.CasesDir, errors.New("not a folder"))
		}
		cases, _, err := codur.LoadCases(fsys, casesDir)
		if err != nil {
			return bad("", err)
		}
		for i := range cases {
			cases[i].Hidden = true
		}
		ch.Cases = cases
	}
	return ch, nil
}

// CopyTo writes the challenge's files, except prompt.txt, challenge.json,
// offline.json and the hidden cases, into dir.
func (ch Challenge) CopyTo(dir string) error {
	return fs.WalkDir(ch.files, ch.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, ch.root), "/")
		if ch.root == "." {
			rel = p
		}
		if rel == "." || rel == "" {
			return nil
		}
		switch rel {
		case PromptFile, ConfigFile, OfflineFile:
			return nil
		case codur.CasesDir:
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil // symlinks and devices of a hostile folder are not copied
		}
		data, err := fs.ReadFile(ch.files, p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// Setup returns the planner model and the agent registry of a challenge's
// run; dir is its temporary workspace.
type Setup func(ctx context.Context, ch Challenge, dir string) (llm.Model, *codur.Registry, error)

// ErrNoScript is returned by [Offline] for a challenge without offline.json.
var ErrNoScript = errors.New("challenge: no offline.json: this challenge needs a real model")

// Offline is the Setup of offline runs: one llm.Scripted model answering
// with the challenge's offline.json replies, as the planner and as the
// agent "llm:default".
func Offline(ctx context.Context, ch Challenge, dir string) (llm.Model, *codur.Registry, error) {
	if ch.Offline == nil {
		return nil, nil, ErrNoScript
	}
	m := llm.NewScripted(ch.Offline...)
	reg := codur.NewRegistry()
	if err := reg.Register(codur.AgentInfo{Ref: codur.DefaultAgent, Description: "scripted offline model", Detail: "scripted"}, &codur.ModelAgent{Model: m}); err != nil {
		return nil, nil, err
	}
	return m, reg, nil
}

// Null is the Setup of the baseline: a model that answers every call
// with the same words and no tool call, as the planner and as the agent
// "llm:default" — it changes nothing, so what passes with it passes
// without a model.
func Null(ctx context.Context, ch Challenge, dir string) (llm.Model, *codur.Registry, error) {
	m := nullModel{}
	reg := codur.NewRegistry()
	if err := reg.Register(codur.AgentInfo{Ref: codur.DefaultAgent, Description: "a model that changes nothing", Detail: "null"}, &codur.ModelAgent{Model: m}); err != nil {
		return nil, nil, err
	}
	return m, reg, nil
}

// NullReply is what the [Null] model answers.
const NullReply = "I made no change."

// nullModel answers NullReply to every call.
type nullModel struct{}

func (nullModel) Generate(context.Context, []state.Message, ...llm.CallOption) (*llm.Response, error) {
	return &llm.Response{Message: state.AI(NullReply), StopReason: llm.StopEnd}, nil
}

// Attribution is what a passing challenge owes its pass to.
type Attribution string

// The attributions; a failed challenge has none ("").
const (
	// ByModel is a model or agent: the agent delegated to, or a model
	// planning phase's tool calls.
	ByModel Attribution = "model"
	// ByRepair is a local repair, without a model.
	ByRepair Attribution = "repair"
	// ByPrePlan is the textual pre-plan's tool calls (a pattern on the
	// task's wording), without a model.
	ByPrePlan Attribution = "pre_plan"
	// AlreadyCorrect is a program that passed before any change.
	AlreadyCorrect Attribution = "already_correct"
)

// Result is the outcome of one challenge.
type Result struct {
	// Name is the challenge's.
	Name string `json:"name"`
	// Passed reports a program whose output matches after the run (checked
	// again after the graph's own review).
	Passed bool `json:"passed"`
	// Iterations is the number of reviews.
	Iterations int `json:"iterations"`
	// Tokens is the model tokens the run used (as the model reported).
	Tokens int `json:"tokens"`
	// ModelCalls counts the calls of the scripted model (offline runs).
	ModelCalls int `json:"model_calls,omitempty"`
	// Duration is the run's wall time.
	Duration time.Duration `json:"duration_ns"`
	// DecidedBy is the phase that routed the last iteration.
	DecidedBy codur.Phase `json:"decided_by"`
	// Repairs are the local repairs that fixed the program.
	Repairs []string `json:"repairs,omitempty"`
	// Attribution is what the pass is owed to ("" for a failure), and
	// SolvedBy says it in words ("agent llm:default on iteration 2",
	// "local repair off_by_one_range on iteration 1", "already correct
	// before any change").
	Attribution Attribution `json:"attribution,omitempty"`
	SolvedBy    string      `json:"solved_by,omitempty"`
	// Solution is the graph's account of the passing verification (zero
	// when none passed, or for a program already correct).
	Solution codur.Solution `json:"solution,omitzero"`
	// Cases is the number of hidden cases verified beside the plain run.
	Cases int `json:"cases,omitempty"`
	// Restored are the protected files (expected outputs) the agents
	// changed and the review put back.
	Restored []string `json:"restored,omitempty"`
	// Error is the error that stopped the run, if any.
	Error string `json:"error,omitempty"`
}

// Report is the outcome of a set of challenges.
type Report struct {
	// Model names the model ("scripted (offline)" for offline runs).
	Model string `json:"model"`
	// Results are the challenges' results, in the order they were given.
	Results []Result `json:"results"`
	// Passed and Failed count them.
	Passed int `json:"passed"`
	Failed int `json:"failed"`
	// The passes by attribution: by a model or agent, by a local repair,
	// by the textual pre-plan, and of programs already correct. They add
	// up to Passed.
	ByModel        int `json:"by_model"`
	ByRepair       int `json:"by_repair"`
	ByPrePlan      int `json:"by_pre_plan"`
	AlreadyCorrect int `json:"already_correct"`
	// Baseline is the report of the same challenges run with the [Null]
	// model, when it was run (see codur challenge --baseline).
	Baseline *Report `json:"baseline,omitempty"`
	// Duration is the wall time of the whole run.
	Duration time.Duration `json:"duration_ns"`
}

// PassRate is Passed over the number of challenges (0 when none).
func (r *Report) PassRate() float64 {
	if n := len(r.Results); n > 0 {
		return float64(r.Passed) / float64(n)
	}
	return 0
}

// JSON returns the report as indented JSON.
func (r *Report) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

// Summary is the report's summary line: the passes, and what they are
// owed to.
func (r *Report) Summary() string {
	return fmt.Sprintf("%s — %d/%d passed (%.0f%%): %d by the model, %d by local repairs, %d by the textual pre-plan, %d already correct",
		r.Model, r.Passed, len(r.Results), 100*r.PassRate(), r.ByModel, r.ByRepair, r.ByPrePlan, r.AlreadyCorrect)
}

// Markdown returns the report as a Markdown table with a summary line
// (and the baseline's, when there is one).
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Codur challenge report\n\nModel: %s in %s\n", r.Summary(), r.Duration.Round(time.Millisecond))
	if r.Baseline != nil {
		fmt.Fprintf(&b, "Baseline: %s\n", r.Baseline.Summary())
	}
	b.WriteString("\n| challenge | result | solved by | iterations | tokens | time | decided by | error |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---|---|\n")
	for _, res := range r.Results {
		result := "FAIL"
		if res.Passed {
			result = "pass"
		}
		note := res.Error
		if len(res.Restored) > 0 {
			note = strings.TrimSpace(note + " (restored after the agent changed them: " + strings.Join(res.Restored, ", ") + ")")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %s | %s | %s |\n", res.Name, result, mdCell(res.SolvedBy), res.Iterations, res.Tokens,
			res.Duration.Round(time.Millisecond), res.DecidedBy, mdCell(note))
	}
	return b.String()
}

func mdCell(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", "\\|")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// Option configures [Run].
type Option func(*runConfig)

type runConfig struct {
	parallel  int
	model     string
	codurOpts []codur.Option
	toolOpts  []tools.Option
	extra     []ToolSource
	progress  func(Result)
}

// ToolSource gives more tools to a challenge's run — the MCP tools of a
// configuration ([codur.Config.MCPTools]), say: dir is the challenge's
// temporary workspace; release is called when the run ends.
type ToolSource func(ctx context.Context, dir string) (ts []tools.Tool, release func() error, err error)

// WithTools adds the tools of src to every challenge's graph.
func WithTools(src ToolSource) Option {
	return func(c *runConfig) {
		if src != nil {
			c.extra = append(c.extra, src)
		}
	}
}

// WithParallel runs up to n challenges at once (default 1).
func WithParallel(n int) Option { return func(c *runConfig) { c.parallel = n } }

// WithModelName names the model in the report.
func WithModelName(name string) Option { return func(c *runConfig) { c.model = name } }

// WithCodurOptions adds options to every challenge's graph.
func WithCodurOptions(opts ...codur.Option) Option {
	return func(c *runConfig) { c.codurOpts = append(c.codurOpts, opts...) }
}

// WithToolOptions configures the tools of every challenge and the runs of
// its program by verification ([codur.Verifier.RunOptions]), such as
// tools.WithSandbox.
func WithToolOptions(opts ...tools.Option) Option {
	return func(c *runConfig) { c.toolOpts = append(c.toolOpts, opts...) }
}

// WithProgress calls fn with each result as soon as it is known (from the
// goroutine that ran it; calls are serialised).
func WithProgress(fn func(Result)) Option { return func(c *runConfig) { c.progress = fn } }

// Run runs the challenges, each in a temporary copy removed afterwards,
// with the planner and agents setup returns. A challenge that fails — a
// mismatch after its iterations, or an error such as a model that failed
// — is a failed Result, not an error of Run; Run fails only when ctx is
// done or a temporary directory cannot be made.
func Run(ctx context.Context, chs []Challenge, setup Setup, opts ...Option) (*Report, error) {
	cfg := runConfig{parallel: 1, model: "unnamed model"}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	cfg.parallel = max(cfg.parallel, 1)
	start := time.Now()
	results := make([]Result, len(chs))
	errs := make([]error, len(chs))
	sem := make(chan struct{}, cfg.parallel)
	var wg sync.WaitGroup
	var progressMu sync.Mutex
	for i, ch := range chs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			results[i], errs[i] = runOne(ctx, ch, setup, cfg)
			if errs[i] == nil && cfg.progress != nil {
				progressMu.Lock()
				cfg.progress(results[i])
				progressMu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rep := &Report{Model: cfg.model, Results: results, Duration: time.Since(start)}
	for _, r := range results {
		if !r.Passed {
			rep.Failed++
			continue
		}
		rep.Passed++
		switch r.Attribution {
		case ByModel:
			rep.ByModel++
		case ByRepair:
			rep.ByRepair++
		case ByPrePlan:
			rep.ByPrePlan++
		case AlreadyCorrect:
			rep.AlreadyCorrect++
		}
	}
	return rep, nil
}

// runOne runs one challenge; its error is only for a broken environment
// or a done context.
func runOne(ctx context.Context, ch Challenge, setup Setup, cfg runConfig) (Result, error) {
	res := Result{Name: ch.Name}
	dir, err := os.MkdirTemp("", "codur-challenge-")
	if err != nil {
		return res, fmt.Errorf("challenge %s: %w", ch.Name, err)
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	fail := func(err error) (Result, error) {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Error = err.Error()
		res.Duration = time.Since(start)
		return res, nil
	}
	if err := ch.CopyTo(dir); err != nil {
		return fail(fmt.Errorf("copy: %w", err))
	}
	ver, err := codur.DetectVerifier(dir)
	if err != nil {
		return fail(err)
	}
	ver.RunOptions = cfg.toolOpts
	ver.Cases = append(ver.Cases, ch.Cases...)
	res.Cases = len(ch.Cases)
	// Whether the program passes before anyone touches it: a pass then is
	// no one's.
	before, err := ver.Run(ctx)
	if err != nil {
		return fail(err)
	}
	planner, reg, err := setup(ctx, ch, dir)
	if err != nil {
		return fail(err)
	}
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		return fail(err)
	}
	opts := append([]codur.Option{codur.WithVerifier(ver), codur.WithWorkspace(dir)}, cfg.codurOpts...)
	if ch.MaxIterations > 0 {
		opts = append(opts, codur.WithMaxIterations(ch.MaxIterations))
	}
	ts := codur.DefaultTools(ws, cfg.toolOpts...)
	for _, src := range cfg.extra {
		more, release, err := src(ctx, dir)
		if err != nil {
			return fail(fmt.Errorf("tools: %w", err))
		}
		if release != nil {
			defer release()
		}
		ts = append(ts, more...)
	}
	g, err := codur.New(planner, reg, ts, opts...)
	if err != nil {
		return fail(err)
	}
	out, runErr := g.Invoke(ctx, codur.Input(ch.Prompt, true))
	res.Iterations = out.Iterations.Get()
	res.Tokens = out.Tokens.Get()
	res.DecidedBy = out.DecidedBy.Get()
	res.Repairs = out.Repairs.Get()
	res.Restored = out.Restored.Get()
	if s, ok := planner.(*llm.Scripted); ok {
		res.ModelCalls = len(s.Calls())
	}
	if runErr != nil {
		return fail(runErr)
	}
	// Check again, independently of the review, against the expected
	// outputs read before the run: the workspace must hold a passing
	// program now.
	if _, err := ver.Restore(); err != nil {
		return fail(err)
	}
	check, err := ver.Run(ctx)
	if err != nil {
		return fail(err)
	}
	res.Passed = out.Verified.Get() && check.Passed
	if !res.Passed {
		why := "the iteration limit"
		if final := out.FinalResponse.Get(); !strings.HasPrefix(final, "Gave up after") {
			why = "the run ended without a passing verification"
		}
		what := "output mismatch"
		if check.TimedOut {
			what = fmt.Sprintf("timeout (the program ran over its time limit of %s)", check.Timeout)
		} else if check.Hidden {
			what = "output mismatch on hidden case " + check.Case
		}
		res.Error = fmt.Sprintf("%s after %d iterations (%s)", what, res.Iterations, why)
		res.Duration = time.Since(start)
		return res, nil
	}
	sol := out.Solved.Get()
	switch {
	case before.Passed:
		res.Attribution, res.SolvedBy = AlreadyCorrect, "already correct before any change"
	case sol.By == codur.SolvedByRepair:
		res.Attribution, res.Solution, res.SolvedBy = ByRepair, sol, sol.String()
	case sol.By == codur.SolvedByPrePlan:
		res.Attribution, res.Solution, res.SolvedBy = ByPrePlan, sol, sol.String()
	default:
		res.Attribution, res.Solution, res.SolvedBy = ByModel, sol, sol.String()
	}
	res.Duration = time.Since(start)
	return res, nil
}
