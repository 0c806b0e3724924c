package codur

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/tools"
)

// DefaultVerifyTimeout bounds one run of the program being verified.
const DefaultVerifyTimeout = 30 * time.Second

// Verifier checks a fix: it runs the program and compares its standard
// output with the expected output — once as it is (no arguments, no
// input, compared with Expected) and once per [Case], each with its own
// arguments, standard input and expected output. A fix passes when every
// run does, so a program that prints the one expected output it was shown
// does not pass a verifier with a case it was not. The expected outputs
// are read once, when the Verifier is made, so an agent that rewrites
// expected.txt does not change what counts as a pass; and the Protected
// files (the expected outputs, by default) are snapshotted before the
// first iteration and put back by [Verifier.Restore], which the review
// calls after every agent's turn: an edit of expected.txt does not
// survive into the next invocation either.
//
// Each run is in a scratch copy of Dir without the expected output file
// (expected.txt, ExpectedFile and the Protected files), removed
// afterwards: a program does not pass by printing expected.txt, and its
// runs — passed or failed, or interrupted — leave the user's files as
// they were. (Without the sandbox, a program that looks for the workspace
// by its absolute path still finds it: the copy then stops a casual read,
// not a determined one.) A Dir of more than 2000 files or 50 MB is not
// copied whole: only the files of the program's own directory are (a run
// then fails with [ErrWorkspaceTooLarge] when even they exceed the
// bounds).
//
// The program is code a model wrote: it runs through [tools.RunCommand],
// in the bubblewrap sandbox where the machine has one — the scratch copy
// is the only directory it can write besides a private /tmp, the rest of
// the file system (the user's workspace and home included) is absent
// apart from the read-only system directories and Go's toolchain and
// caches ([tools.WithGoCaches]), and it has no network. Sandboxed or not,
// it gets a scrubbed environment without this process's secrets, and
// every process it started is killed when it ends or times out. Where
// there is no sandbox it can read and write what this process can;
// RunOptions with tools.WithSandbox(tools.SandboxRequired) refuses to run
// it there instead. An interpreter installed outside the system
// directories (pyenv's, under HOME) is not visible in the sandbox: a
// python3 in /usr is used, or RunOptions names its directory with
// tools.WithReadOnlyPaths.
//
// A verification takes at most Timeout per run, and stops at the first
// run that fails: Timeout × (1 + len(Cases)) bounds it.
type Verifier struct {
	// Dir is the directory the program runs in.
	Dir string
	// Program is the source file the local repairs mutate, relative to Dir.
	Program string
	// Command runs the program (for example python3 main.py); a case's
	// arguments follow it.
	Command []string
	// Expected is the expected standard output of the plain run.
	Expected string
	// ExpectedFile is the file Expected was read from, relative to Dir;
	// runs do not see it (nor expected.txt).
	ExpectedFile string
	// Cases are more runs, each with its arguments, input and expected
	// output; all must pass.
	Cases []Case
	// Protected are files relative to Dir that the agents must not
	// change (DetectVerifier: the expected outputs). Their contents are
	// snapshotted when the graph is made ([New]) or by
	// [Verifier.Snapshot], and [Verifier.Restore] puts them back.
	Protected []string
	// Timeout bounds a run (DefaultVerifyTimeout if zero).
	Timeout time.Duration
	// RunOptions are options of tools.RunCommand for each run, after the
	// defaults (tools.WithGoCaches; sandbox where available, no network).
	RunOptions []tools.Option

	snap *snapshot
}

// Case is one run of a verification beside the plain one.
type Case struct {
	// Name names the case in reports.
	Name string `json:"name"`
	// Args follow the verifier's command; Stdin is the program's standard
	// input.
	Args  []string `json:"args,omitempty"`
	Stdin string   `json:"stdin,omitempty"`
	// Expected is the expected standard output.
	Expected string `json:"expected"`
	// Hidden cases are never shown to the agents: a failure names the
	// case, not its input or expected output.
	Hidden bool `json:"hidden,omitempty"`
}

// ErrNoProgram is returned by [DetectVerifier] for a directory without
// main.py or main.go, or without expected.txt.
var ErrNoProgram = errors.New("codur: no main.py or main.go with an expected.txt")

// CasesDir is the folder of a workspace's (or a challenge's) extra cases:
// CasesDir/NAME/expected.txt, with optional CasesDir/NAME/args (one
// argument a line) and CasesDir/NAME/stdin.
const CasesDir = "cases"

// DetectVerifier returns the Verifier of dir: main.py run with python3, or
// main.go run with go run, compared with expected.txt, and with the cases
// of dir's cases folder (see [LoadCases]), visible ones. Its Protected
// files are expected.txt and the cases' files, snapshotted now.
func DetectVerifier(dir string) (*Verifier, error) {
	expected, err := os.ReadFile(filepath.Join(dir, "expected.txt"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoProgram, err)
	}
	for _, c := range []struct {
		file string
		cmd  []string
	}{
		{"main.py", []string{"python3", "main.py"}},
		{"main.go", []string{"go", "run", "main.go"}},
	} {
		if _, err := os.Stat(filepath.Join(dir, c.file)); err != nil {
			continue
		}
		v := &Verifier{Dir: dir, Program: c.file, Command: c.cmd, Expected: string(expected), ExpectedFile: "expected.txt",
			Protected: []string{"expected.txt"}}
		root := os.DirFS(dir)
		if fi, err := fs.Stat(root, CasesDir); err == nil && fi.IsDir() {
			cases, files, err := LoadCases(root, CasesDir)
			if err != nil {
				return nil, err
			}
			v.Cases = cases
			v.Protected = append(v.Protected, files...)
		}
		if err := v.Snapshot(); err != nil {
			return nil, err
		}
		return v, nil
	}
	return nil, ErrNoProgram
}

// Files of a case's folder.
const (
	caseExpected = "expected.txt"
	caseArgs     = "args"
	caseStdin    = "stdin"
)

// CaseError reports a cases folder that is not well formed: a case
// without an expected output, or a file that is not one of expected.txt,
// args and stdin.
type CaseError struct {
	// Path is the offending file or folder, slash-separated.
	Path string
	// Problem says what is wrong.
	Problem string
}

// Error implements error.
func (e *CaseError) Error() string { return fmt.Sprintf("codur: case %s: %s", e.Path, e.Problem) }

// LoadCases reads the cases of dir in fsys, one a subfolder sorted by
// name, each with an expected.txt and optionally args (one argument a
// line; blank lines ignored) and stdin. It returns them and the paths of
// the files read (slash-separated, under dir). Anything else in dir or in
// a case's folder is a [*CaseError], so that a misspelt file is not
// silently ignored.
func LoadCases(fsys fs.FS, dir string) ([]Case, []string, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, nil, fmt.Errorf("codur: cases: %w", err)
	}
	var cases []Case
	var files []string
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		if !e.IsDir() {
			return nil, nil, &CaseError{Path: p, Problem: "not a folder: each case is a folder holding expected.txt, and optionally args and stdin"}
		}
		c := Case{Name: e.Name()}
		inner, err := fs.ReadDir(fsys, p)
		if err != nil {
			return nil, nil, fmt.Errorf("codur: cases: %w", err)
		}
		haveExpected := false
		for _, f := range inner {
			fp := path.Join(p, f.Name())
			if !f.Type().IsRegular() {
				return nil, nil, &CaseError{Path: fp, Problem: "not a regular file"}
			}
			data, err := fs.ReadFile(fsys, fp)
			if err != nil {
				return nil, nil, fmt.Errorf("codur: cases: %w", err)
			}
			switch f.Name() {
			case caseExpected:
				c.Expected, haveExpected = string(data), true
			case caseStdin:
				c.Stdin = string(data)
			case caseArgs:
				for _, line := range strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n") {
					if strings.TrimSpace(line) != "" {
						c.Args = append(c.Args, line)
					}
				}
			default:
				return nil, nil, &CaseError{Path: fp, Problem: "unknown file (want expected.txt, args or stdin)"}
			}
			files = append(files, fp)
		}
		if !haveExpected {
			return nil, nil, &CaseError{Path: p, Problem: "no expected.txt"}
		}
		cases = append(cases, c)
	}
	return cases, files, nil
}

// Outcome is the result of one verification: of its first failing run,
// or of the plain run when all passed.
type Outcome struct {
	// Passed reports every run's output equal to its expected output
	// (ignoring trailing spaces on each line and trailing blank lines).
	Passed bool
	// Case names the failing case ("" for the plain run); Hidden reports
	// a hidden one, whose input and expected output are not shown.
	Case   string
	Hidden bool
	// Expected is the failing run's expected output.
	Expected string
	// Actual and Stderr are what the program wrote; ExitCode its status
	// (-1 when killed).
	Actual, Stderr string
	ExitCode       int
	// TimedOut reports a program stopped by the timeout, Timeout.
	TimedOut bool
	Timeout  time.Duration
	// Runs counts the runs made; Duration is how long the run reported
	// took.
	Runs     int
	Duration time.Duration
}

// Run verifies the program: the plain run, then each case, in a scratch
// copy of Dir, up to the first that fails.
func (v *Verifier) Run(ctx context.Context) (Outcome, error) {
	if len(v.Command) == 0 {
		return Outcome{}, errors.New("codur: verifier has no command")
	}
	sc, err := newScratch(v)
	if err != nil {
		return Outcome{}, err
	}
	defer sc.Close()
	return v.runIn(ctx, sc.Dir, v.Timeout)
}

// runIn runs the plain run and the cases in dir, a scratch copy of v.Dir,
// up to the first that fails.
func (v *Verifier) runIn(ctx context.Context, dir string, timeout time.Duration) (Outcome, error) {
	plain, err := v.runCase(ctx, dir, timeout, Case{Expected: v.Expected})
	if err != nil || !plain.Passed {
		return plain, err
	}
	for _, c := range v.Cases {
		out, err := v.runCase(ctx, dir, timeout, c)
		plain.Runs++
		if err != nil {
			return Outcome{}, err
		}
		if !out.Passed {
			out.Runs = plain.Runs
			return out, nil
		}
	}
	return plain, nil
}

// runCase runs the program once, for c.
func (v *Verifier) runCase(ctx context.Context, dir string, timeout time.Duration, c Case) (Outcome, error) {
	if len(v.Command) == 0 {
		return Outcome{}, errors.New("codur: verifier has no command")
	}
	if timeout <= 0 {
		timeout = DefaultVerifyTimeout
	}
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		return Outcome{}, fmt.Errorf("codur: run %s: %w", strings.Join(v.Command, " "), err)
	}
	opts := []tools.Option{tools.WithGoCaches()}
	opts = append(append(opts, v.RunOptions...), tools.WithTimeout(timeout))
	var stdout, stderr bytes.Buffer
	cmd := tools.Command{
		Args:   append(slices.Clone(v.Command), c.Args...),
		Stdout: &limitWriter{w: &stdout, n: 1 << 20},
		Stderr: &limitWriter{w: &stderr, n: 1 << 20},
	}
	if c.Stdin != "" {
		cmd.Stdin = strings.NewReader(c.Stdin)
	}
	start := time.Now()
	res, err := tools.RunCommand(ctx, ws, cmd, opts...)
	elapsed := time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			return Outcome{}, ctx.Err()
		}
		return Outcome{}, fmt.Errorf("codur: run %s: %w", strings.Join(v.Command, " "), err)
	}
	out := Outcome{Case: c.Name, Hidden: c.Hidden, Expected: c.Expected, Actual: stdout.String(), Stderr: stderr.String(),
		ExitCode: res.ExitCode, TimedOut: res.TimedOut, Runs: 1, Duration: elapsed}
	if res.TimedOut {
		out.Timeout = timeout
		out.Stderr += fmt.Sprintf("\n[timed out: killed after the time limit of %s]", timeout)
	}
	out.Passed = !res.TimedOut && res.ExitCode == 0 && normalizeOutput(out.Actual) == normalizeOutput(c.Expected)
	return out, nil
}

// snapshot holds the protected files' contents as they were.
type snapshot struct {
	files map[string]snapFile
}

type snapFile struct {
	data   []byte
	mode   os.FileMode
	exists bool
}

// Snapshot records the Protected files' contents, for [Verifier.Restore];
// a second call does nothing. [New] calls it.
func (v *Verifier) Snapshot() error {
	if v.snap != nil {
		return nil
	}
	snap := &snapshot{files: map[string]snapFile{}}
	root, err := os.OpenRoot(v.Dir)
	if err != nil {
		return fmt.Errorf("codur: snapshot: %w", err)
	}
	defer root.Close()
	for _, p := range v.protected() {
		fi, err := root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			snap.files[p] = snapFile{}
			continue
		} else if err != nil {
			return fmt.Errorf("codur: snapshot: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("codur: snapshot: protected file %s is not a regular file", p)
		}
		data, err := root.ReadFile(p)
		if err != nil {
			return fmt.Errorf("codur: snapshot: %w", err)
		}
		snap.files[p] = snapFile{data: data, mode: fi.Mode().Perm(), exists: true}
	}
	v.snap = snap
	return nil
}

// protected returns the protected files, cleaned, ExpectedFile included.
func (v *Verifier) protected() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range append(slices.Clone(v.Protected), v.ExpectedFile) {
		if p == "" {
			continue
		}
		p = filepath.Clean(filepath.FromSlash(p))
		if !filepath.IsLocal(p) || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Restore puts back the Protected files that differ from their snapshot
// (changed, removed, replaced by a link or a folder, or created where
// there was none), and returns their paths, slash-separated. Without a
// snapshot it does nothing.
func (v *Verifier) Restore() ([]string, error) {
	if v.snap == nil {
		return nil, nil
	}
	root, err := os.OpenRoot(v.Dir)
	if err != nil {
		return nil, fmt.Errorf("codur: restore: %w", err)
	}
	defer root.Close()
	var restored []string
	var errs []error
	for _, p := range slices.Sorted(maps.Keys(v.snap.files)) {
		want := v.snap.files[p]
		fi, err := root.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if !want.exists {
				continue
			}
		case err != nil:
			errs = append(errs, err)
			continue
		case want.exists && fi.Mode().IsRegular() && fi.Mode().Perm() == want.mode:
			if got, err := root.ReadFile(p); err == nil && bytes.Equal(got, want.data) {
				continue
			}
		}
		if err == nil {
			if err := root.RemoveAll(p); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if want.exists {
			if err := root.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := writeAtomic(root, p, want.data, want.mode); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		restored = append(restored, filepath.ToSlash(p))
	}
	if err := errors.Join(errs...); err != nil {
		return restored, fmt.Errorf("codur: restore protected files: %w", err)
	}
	return restored, nil
}

// normalizeOutput drops trailing spaces of each line, carriage returns and
// trailing blank lines.
func normalizeOutput(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// limitWriter keeps the first n bytes written to it and counts the
// dropped rest.
type limitWriter struct {
	w       *bytes.Buffer
	n       int
	dropped int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	keep := min(max(l.n-l.w.Len(), 0), len(p))
	l.w.Write(p[:keep])
	l.dropped += len(p) - keep
	return len(p), nil
}
