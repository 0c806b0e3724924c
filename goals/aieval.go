package goals

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

// DefaultHarness is where ai-eval keeps its harness, relative to the
// project directory.
const DefaultHarness = ".retrai/eval_test.sh"

// aiEvalGoal is reached when a harness written by a model from a
// natural-language objective exits 0.
type aiEvalGoal struct {
	objective string
	harness   string // slash-separated, relative to the project
	planner   llm.Model
	timeout   time.Duration

	mu     sync.Mutex
	pinned map[string][]byte // harness content by absolute path
}

func newAIEvalGoal(cfg Config) (Goal, error) {
	if err := checkTimeout(GoalAIEval, &cfg); err != nil {
		return nil, err
	}
	objective := strings.TrimSpace(cfg.Eval.Objective)
	if objective == "" {
		return nil, &SettingError{Goal: GoalAIEval, Setting: "eval.objective", Problem: "is required"}
	}
	harness := filepath.ToSlash(filepath.Clean(orDefaultString(cfg.Eval.Harness, DefaultHarness)))
	if !filepath.IsLocal(filepath.FromSlash(harness)) {
		return nil, &SettingError{Goal: GoalAIEval, Setting: "eval.harness", Problem: fmt.Sprintf("%q must be a relative path inside the project", cfg.Eval.Harness)}
	}
	return &aiEvalGoal{
		objective: objective,
		harness:   harness,
		planner:   cfg.Eval.Planner,
		timeout:   cfg.timeout(),
		pinned:    make(map[string][]byte),
	}, nil
}

// orDefaultString returns s, or def if s is blank.
func orDefaultString(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

func (g *aiEvalGoal) Name() string { return GoalAIEval }

func (g *aiEvalGoal) SystemPrompt() string {
	return fmt.Sprintf(`Your goal is this objective:

%s

Success is verified by an acceptance test harness, the executable script %s, written from the objective by a planner model before the first check. It is run from the project directory, and the goal is achieved when it exits with status 0 within %s. It prints "PASS: <check>" or "FAIL: <check>: <problem>" for each thing it checks; after every check you are shown the failing checks and its output.

Read the harness to learn exactly what is checked, then change the project until it passes. Do not modify or delete the harness: it is restored before every check.`,
		g.objective, g.harness, g.timeout)
}

func (g *aiEvalGoal) Check(ctx context.Context, _ State, cwd string) (Result, error) {
	start := time.Now()
	path := filepath.Join(cwd, filepath.FromSlash(g.harness))
	script, note, err := g.ensureHarness(ctx, cwd, path)
	if err != nil {
		return Result{}, err
	}
	name, args := harnessCommand(script, path)
	res, err := runProcess(ctx, program{goal: GoalAIEval, dir: cwd, name: name, args: args, timeout: g.timeout})
	if err != nil {
		return Result{}, err
	}
	d := Details{
		Command:  g.harness,
		Harness:  g.harness,
		ExitCode: res.exitCode,
		TimedOut: res.timedOut,
		Output:   res.output,
	}
	var failures []Failure
	d.Passed, failures = parseHarnessOutput(res.output)
	ok := res.exitCode == 0 && !res.timedOut
	if !ok && len(failures) == 0 {
		failures = []Failure{{Name: g.harness, Output: tail(res.output, MaxFailureOutputChars)}}
	}
	d.Failed = len(failures)
	d.Failures = capFailures(failures)
	d.Duration = time.Since(start)
	reason := fmt.Sprintf("%s: the harness passed (%d checks)", GoalAIEval, d.Passed)
	if !ok {
		reason = fmt.Sprintf("%s: %s", GoalAIEval, exitReason("the harness", res, g.timeout))
		if len(failures) > 0 && failures[0].Name != g.harness {
			reason += "; failed: " + nameList(d.Failures, d.Failed)
		}
	}
	if note != "" {
		reason += " (" + note + ")"
	}
	return Result{Achieved: ok, Reason: reason, Details: d}, nil
}

// ensureHarness makes sure the harness at path exists, is executable and
// still has the content it had at the first check, writing it with the
// planner if it does not exist yet. It returns the harness and, when it
// restored it, a note saying so.
func (g *aiEvalGoal) ensureHarness(ctx context.Context, cwd, path string) (script []byte, note string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	pinned := g.pinned[path]
	data, err := os.ReadFile(path)
	write := false
	switch {
	case err == nil && pinned == nil:
		pinned = data
		g.pinned[path] = pinned
	case err == nil && !bytes.Equal(data, pinned):
		note, write = "the harness had been modified and was restored", true
	case err == nil:
	case !errors.Is(err, fs.ErrNotExist):
		return nil, "", fmt.Errorf("goals: %s: read harness: %w", GoalAIEval, err)
	case pinned != nil:
		note, write = "the harness had been deleted and was restored", true
	default:
		if g.planner == nil {
			return nil, "", &SettingError{Goal: GoalAIEval, Setting: "Eval.Planner",
				Problem: fmt.Sprintf("is nil and the harness %s does not exist", g.harness)}
		}
		s, err := planHarness(ctx, g.planner, cwd, g.objective, g.timeout)
		if err != nil {
			return nil, "", err
		}
		pinned, write = []byte(s), true
		g.pinned[path] = pinned
	}
	if write {
		if err := writeHarness(path, pinned); err != nil {
			return nil, "", err
		}
	}
	if err := os.Chmod(path, 0o755); err != nil {
		return nil, "", fmt.Errorf("goals: %s: %w", GoalAIEval, err)
	}
	return pinned, note, nil
}

// harnessCommand returns the program and arguments that run the script
// stored at path: the interpreter of its "#!" line (with that line's
// optional argument) or bash. Passing the script to its interpreter, rather
// than executing it, also avoids "text file busy" errors right after it is
// written.
func harnessCommand(script []byte, path string) (name string, args []string) {
	line, _, _ := bytes.Cut(script, []byte("\n"))
	interp, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("#!"))
	fields := strings.SplitN(strings.TrimSpace(string(interp)), " ", 2)
	if !ok || fields[0] == "" {
		return "bash", []string{path}
	}
	if len(fields) == 2 && strings.TrimSpace(fields[1]) != "" {
		return fields[0], []string{strings.TrimSpace(fields[1]), path}
	}
	return fields[0], []string{path}
}

// writeHarness writes an executable script, creating its directory.
func writeHarness(path string, script []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("goals: %s: write harness: %w", GoalAIEval, err)
	}
	if err := os.WriteFile(path, script, 0o755); err != nil {
		return fmt.Errorf("goals: %s: write harness: %w", GoalAIEval, err)
	}
	return nil
}

var harnessLineRe = regexp.MustCompile(`^\s*(PASS|FAIL)\b:?\s*(.*)$`)

// parseHarnessOutput counts the harness's "PASS: check" lines and returns
// its "FAIL: check: problem" lines as failures.
func parseHarnessOutput(out string) (passed int, failures []Failure) {
	for line := range strings.Lines(out) {
		m := harnessLineRe.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
		if m == nil {
			continue
		}
		if m[1] == "PASS" {
			passed++
			continue
		}
		name, msg, _ := strings.Cut(m[2], ": ")
		failures = append(failures, Failure{Name: strings.TrimSpace(name), Output: strings.TrimSpace(msg)})
	}
	return passed, failures
}

// PlanHarness asks model to write an acceptance test harness for objective
// in the project at dir and returns the script. The model is shown the
// project's file tree and key files and must answer with the script in a
// fenced code block; a reply without one gives an error wrapping
// ErrNoCodeBlock. A script without a "#!" line gets "#!/usr/bin/env bash".
//
// The harness is meant to be run from dir, to exit 0 exactly when the
// objective is met, and to print "PASS: <check>" and
// "FAIL: <check>: <problem>" lines. The ai-eval goal calls PlanHarness
// itself when its harness does not exist yet.
func PlanHarness(ctx context.Context, model llm.Model, dir, objective string) (string, error) {
	return planHarness(ctx, model, dir, objective, DefaultTimeout)
}

func planHarness(ctx context.Context, model llm.Model, dir, objective string, timeout time.Duration) (string, error) {
	if model == nil {
		return "", &SettingError{Goal: GoalAIEval, Setting: "Eval.Planner", Problem: "is nil"}
	}
	msgs := []state.Message{
		state.System(fmt.Sprintf(plannerPrompt, timeout)),
		state.Human("Objective:\n" + objective + "\n\n" + scanProject(dir)),
	}
	resp, err := model.Generate(ctx, msgs)
	if err != nil {
		return "", fmt.Errorf("goals: %s: plan harness: %w", GoalAIEval, err)
	}
	script, ok := extractCodeBlock(resp.Message.Text())
	if !ok {
		return "", fmt.Errorf("goals: %s: plan harness: %w", GoalAIEval, ErrNoCodeBlock)
	}
	if !strings.HasPrefix(script, "#!") {
		script = "#!/usr/bin/env bash\n" + script
	}
	if !strings.HasSuffix(script, "\n") {
		script += "\n"
	}
	return script, nil
}

const plannerPrompt = `You are the planner of an autonomous coding agent. Given an objective in natural language and a view of a software project, you write an acceptance test harness: a bash script that checks whether the objective has been met. Another agent will then change the project until your harness passes, so the harness must test the objective faithfully and strictly, and must not pass before the work is done.

Rules for the harness:
- Reply with the complete script in a single fenced code block marked bash.
- It is run with no arguments and no input from the project's root directory, and must finish within %s.
- It exits 0 only if every part of the objective is met, and non-zero otherwise.
- For each thing it checks it prints one line: "PASS: <check>" or "FAIL: <check>: <what was wrong>".
- It does not modify project files; temporary files go in a directory made with mktemp -d and removed at exit.
- It uses no network, only common Unix tools and the project's own toolchain.
- It tests behaviour from the outside (build and run the program, call its command line or API, run its tests) rather than searching the source text, unless the objective is about the text itself.`

var codeBlockRe = regexp.MustCompile("(?s)```([A-Za-z0-9_+-]*)[^\\n]*\\n(.*?)```")

// extractCodeBlock returns the first fenced code block of text marked as a
// shell script, else the first unmarked one, else the first one.
func extractCodeBlock(text string) (string, bool) {
	blocks := codeBlockRe.FindAllStringSubmatch(text, -1)
	if len(blocks) == 0 {
		return "", false
	}
	pick := func(match func(lang string) bool) (string, bool) {
		for _, b := range blocks {
			if match(strings.ToLower(b[1])) {
				return b[2], true
			}
		}
		return "", false
	}
	if s, ok := pick(func(l string) bool { return slices.Contains([]string{"bash", "sh", "shell", "zsh"}, l) }); ok {
		return s, true
	}
	if s, ok := pick(func(l string) bool { return l == "" }); ok {
		return s, true
	}
	return blocks[0][2], true
}

// Limits of the project view shown to the planner.
const (
	scanMaxFiles      = 300   // paths listed
	scanMaxFileChars  = 4000  // characters of one file
	scanMaxTotalChars = 24000 // characters of file contents in all
)

// scanSkipDirs are directories left out of the project view.
var scanSkipDirs = map[string]bool{
	"node_modules": true, "vendor": true, "target": true, "dist": true, "build": true,
	"__pycache__": true, "venv": true, "env": true,
}

// keyFiles are shown first, in this order.
var keyFiles = []string{
	"README.md", "README", "README.rst", "go.mod", "package.json", "pyproject.toml", "setup.py",
	"requirements.txt", "Cargo.toml", "Makefile", ConfigFile,
}

// sourceExts are the source files shown after the key files, while the
// budget lasts.
var sourceExts = map[string]bool{
	".go": true, ".py": true, ".js": true, ".mjs": true, ".ts": true, ".tsx": true, ".rs": true,
	".sh": true, ".rb": true, ".java": true, ".c": true, ".h": true, ".cpp": true, ".sql": true,
}

// scanProject renders a view of the project at dir for the planner: its
// file tree, its key files and some source files, within fixed limits.
func scanProject(dir string) string {
	var files []string
	truncated := false
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if path == dir {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if strings.HasPrefix(name, ".") || scanSkipDirs[name] {
				return fs.SkipDir
			}
			return nil
		}
		if len(files) == scanMaxFiles {
			truncated = true
			return fs.SkipAll
		}
		if rel, err := filepath.Rel(dir, path); err == nil {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	var b strings.Builder
	b.WriteString("Project files:\n")
	if len(files) == 0 {
		b.WriteString("(none)\n")
	}
	for _, f := range files {
		b.WriteString(f + "\n")
	}
	if truncated {
		fmt.Fprintf(&b, "(only the first %d files are listed)\n", scanMaxFiles)
	}

	budget := scanMaxTotalChars
	show := func(rel string) {
		if budget <= 0 {
			return
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil || bytes.IndexByte(data, 0) >= 0 {
			return
		}
		text := truncateMiddle(strings.ToValidUTF8(string(data), "\uFFFD"), min(scanMaxFileChars, budget))
		budget -= len([]rune(text))
		fmt.Fprintf(&b, "\n=== %s ===\n%s\n", rel, strings.TrimRight(text, "\n"))
	}
	shown := make(map[string]bool)
	for _, k := range keyFiles {
		if _, err := os.Stat(filepath.Join(dir, k)); err == nil {
			shown[k] = true
			show(k)
		}
	}
	// Shallow files first: they are more likely to be entry points.
	src := slices.Clone(files)
	slices.SortStableFunc(src, func(a, b string) int {
		return strings.Count(a, "/") - strings.Count(b, "/")
	})
	for _, f := range src {
		if !shown[f] && sourceExts[filepath.Ext(f)] {
			show(f)
		}
	}
	return b.String()
}
