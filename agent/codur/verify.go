package codur

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/tools"
)

// DefaultVerifyTimeout bounds one run of the program being verified.
const DefaultVerifyTimeout = 30 * time.Second

// Verifier checks a fix: it runs the program and compares its standard
// output with the expected output. The expected output is read once, when
// the Verifier is made, so an agent that rewrites expected.txt does not
// change what counts as a pass.
//
// Each run is in a scratch copy of Dir without the expected output file
// (expected.txt and ExpectedFile), removed afterwards: a program does not
// pass by printing expected.txt, and its runs — passed or failed, or
// interrupted — leave the user's files as they were. (Without the sandbox,
// a program that looks for the workspace by its absolute path still finds
// it: the copy then stops a casual read, not a determined one.) A Dir of
// more than 2000 files or 50 MB is not copied whole: only the files of the
// program's own directory are (a run then fails with
// [ErrWorkspaceTooLarge] when even they exceed the bounds).
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
type Verifier struct {
	// Dir is the directory the program runs in.
	Dir string
	// Program is the source file the local repairs mutate, relative to Dir.
	Program string
	// Command runs the program (for example python3 main.py).
	Command []string
	// Expected is the expected standard output.
	Expected string
	// ExpectedFile is the file Expected was read from, relative to Dir;
	// runs do not see it (nor expected.txt).
	ExpectedFile string
	// Timeout bounds a run (DefaultVerifyTimeout if zero).
	Timeout time.Duration
	// RunOptions are options of tools.RunCommand for each run, after the
	// defaults (tools.WithGoCaches; sandbox where available, no network).
	RunOptions []tools.Option
}

// ErrNoProgram is returned by [DetectVerifier] for a directory without
// main.py or main.go, or without expected.txt.
var ErrNoProgram = errors.New("codur: no main.py or main.go with an expected.txt")

// DetectVerifier returns the Verifier of dir: main.py run with python3, or
// main.go run with go run, compared with expected.txt.
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
		if _, err := os.Stat(filepath.Join(dir, c.file)); err == nil {
			return &Verifier{Dir: dir, Program: c.file, Command: c.cmd, Expected: string(expected), ExpectedFile: "expected.txt"}, nil
		}
	}
	return nil, ErrNoProgram
}

// Outcome is the result of one verification run.
type Outcome struct {
	// Passed reports output equal to the expected output (ignoring
	// trailing spaces on each line and trailing blank lines).
	Passed bool
	// Actual and Stderr are what the program wrote; ExitCode its status
	// (-1 when killed).
	Actual, Stderr string
	ExitCode       int
	// TimedOut reports a program stopped by the timeout.
	TimedOut bool
}

// Run runs the program once, in a scratch copy of Dir.
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

// runIn runs the program in dir, a scratch copy of v.Dir.
func (v *Verifier) runIn(ctx context.Context, dir string, timeout time.Duration) (Outcome, error) {
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
	res, err := tools.RunCommand(ctx, ws, tools.Command{
		Args:   v.Command,
		Stdout: &limitWriter{w: &stdout, n: 1 << 20},
		Stderr: &limitWriter{w: &stderr, n: 1 << 20},
	}, opts...)
	if err != nil {
		if ctx.Err() != nil {
			return Outcome{}, ctx.Err()
		}
		return Outcome{}, fmt.Errorf("codur: run %s: %w", strings.Join(v.Command, " "), err)
	}
	out := Outcome{Actual: stdout.String(), Stderr: stderr.String(), ExitCode: res.ExitCode, TimedOut: res.TimedOut}
	if res.TimedOut {
		out.Stderr += fmt.Sprintf("\n[killed after %s]", timeout)
	}
	out.Passed = !res.TimedOut && res.ExitCode == 0 && normalizeOutput(out.Actual) == normalizeOutput(v.Expected)
	return out, nil
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

// limitWriter keeps the first n bytes written to it and drops the rest.
type limitWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
