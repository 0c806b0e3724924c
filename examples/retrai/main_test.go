package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
	"github.com/agentgraph/agentgraph/examples/retrai/samples"
)

// runCLI runs the command line args with stdin and returns the exit code
// and what was printed.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli(t.Context(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// isolate gives the test its own home directory (where the default
// database lives) and no model in the environment.
func isolate(t *testing.T) string {
	t.Helper()
	// Keep the Go caches of the real home: the go-test sample runs go test.
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	require.NoError(t, err)
	vals := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, vals, 3)
	for i, key := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		t.Setenv(key, vals[i])
	}
	// And the sandbox's build caches (tools.DefaultCacheDir, under the
	// user's cache directory), as a user's second run finds them: with a
	// new HOME each test's first sandboxed go test compiled the standard
	// library again (minutes per test on two cores).
	if cache, err := os.UserCacheDir(); err == nil {
		t.Setenv("XDG_CACHE_HOME", cache)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", t.TempDir()) // the demo's project copies are removed with it
	t.Setenv(modelEnv, "")
	return home
}

var runIDRe = regexp.MustCompile(`run ([0-9a-f-]{36}):`)

func TestDemoWithoutArguments(t *testing.T) {
	home := isolate(t)
	code, out, errOut := runCLI(t, "")
	require.Equal(t, exitAchieved, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	for _, want := range []string{
		"OFFLINE DEMO",
		"The model is SCRIPTED",
		"--model openai:gpt-4o-mini",
		"OPENAI_API_KEY",
		"anthropic:",
		"openai-compatible:<model>@<base URL>",
		"goal go-test in ",
		"model demo:go-test (scripted), up to 50 iterations",
		"── iteration 1/50 ──",
		"  ✓ run_tests framework=go → 0 passed, 1 failed",
		"  goal ✗ not yet: go-test: 1 of 1 tests failed: example.com/calc.TestSumRange",
		"  iteration 1 done · 1940 tokens so far",
		"── iteration 2/50 ──",
		`  ✓ file_patch path=calc.go new_text="for i := a; i <= b; i++ {" old_text="for i := a; i < b; i++ {" → patched calc.go`,
		"  goal ✓ achieved: go-test: all 1 tests passed",
		"✓ GOAL ACHIEVED after 2 iteration(s): go-test: all 1 tests passed",
		"4950 tokens",
	} {
		require.Contains(t, out, want)
	}
	// The default database is in the home directory, and the demo says so.
	db := filepath.Join(home, ".retrai", "retrai.db")
	require.FileExists(t, db)
	require.Contains(t, out, "Its run is recorded, like every run, in "+db+" (see retrai runs")
	// The demo's project was fixed in a temporary directory, removed at
	// the end.
	m := regexp.MustCompile(`(?m)^  project (\S+)$`).FindStringSubmatch(out)
	require.NotNil(t, m)
	require.Equal(t, filepath.Clean(os.TempDir()), filepath.Dir(m[1]))
	require.Contains(t, out, "removed the demo's project copy "+m[1])
	require.NoDirExists(t, m[1])
	entries, err := os.ReadDir(os.TempDir())
	require.NoError(t, err)
	require.Empty(t, entries, "the demo leaves no temporary folder behind")
}

func TestDemoSamples(t *testing.T) {
	tests := []struct {
		sample string
		want   string
	}{
		{samples.Shell, "✓ GOAL ACHIEVED after 2 iteration(s): shell: grep -qx 'Hello, World!' greeting.txt exited 0"},
		{samples.Pytest, "✓ GOAL ACHIEVED after 2 iteration(s): pytest: all 4 tests passed"},
	}
	for _, tt := range tests {
		t.Run(tt.sample, func(t *testing.T) {
			if tt.sample == samples.Pytest {
				if err := exec.Command("python3", "-m", "pytest", "--version").Run(); err != nil {
					t.Skipf("skipping the pytest demo: `python3 -m pytest --version` failed (%v); install pytest (e.g. apt-get install python3-pytest) to run it", err)
				}
			}
			isolate(t)
			code, out, errOut := runCLI(t, "", "run", "--goal", tt.sample, "--db", filepath.Join(t.TempDir(), "r.db"))
			require.Equal(t, exitAchieved, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			require.Contains(t, out, "The model is SCRIPTED")
			require.Contains(t, out, "goal "+tt.sample+" in ")
			require.Contains(t, out, tt.want)
		})
	}
}

func TestHumanChecksThroughThePrompt(t *testing.T) {
	tests := []struct {
		name       string
		stdin      string
		wantCode   int
		wantOut    []string
		wantStatus runs.Status
	}{
		{
			name:       "approve",
			stdin:      "approve\n",
			wantCode:   exitAchieved,
			wantOut:    []string{"? Iteration 1 of 50 done: go-test: 1 of 1 tests failed", "[Approve/abort] > approve", "human: approved, going on", "✓ GOAL ACHIEVED after 2 iteration(s)"},
			wantStatus: runs.StatusAchieved,
		},
		{
			name:       "enter approves after an unclear answer",
			stdin:      "perhaps\n\n",
			wantCode:   exitAchieved,
			wantOut:    []string{`"perhaps" is neither approve nor abort`, "human: approved, going on", "✓ GOAL ACHIEVED"},
			wantStatus: runs.StatusAchieved,
		},
		{
			name:       "abort",
			stdin:      "abort\n",
			wantCode:   exitNotDone,
			wantOut:    []string{"[Approve/abort] > abort", "human: aborted", "■ ABORTED by a human after 1 iteration(s)"},
			wantStatus: runs.StatusAborted,
		},
		{
			name:       "no answer leaves the run waiting",
			stdin:      "",
			wantCode:   exitNotDone,
			wantOut:    []string{"(no answer: the input ended)", "… WAITING for a human check after 1 iteration(s)", "answer it with: retrai run --resume "},
			wantStatus: runs.StatusWaiting,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			db := filepath.Join(t.TempDir(), "r.db")
			code, out, errOut := runCLI(t, tt.stdin, "run", "--hitl", "--db", db)
			require.Equal(t, tt.wantCode, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			for _, want := range tt.wantOut {
				require.Contains(t, out, want)
			}
			id := runIDRe.FindStringSubmatch(out)[1]
			m, err := runs.Open(t.Context(), runs.Options{DB: db})
			require.NoError(t, err)
			defer m.Close()
			run, err := m.Get(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, tt.wantStatus, run.Status)
			require.True(t, run.HITL)
		})
	}
}

func TestResumeThroughTheCLI(t *testing.T) {
	isolate(t)
	db := filepath.Join(t.TempDir(), "r.db")
	code, out, _ := runCLI(t, "", "run", "--hitl", "--db", db)
	require.Equal(t, exitNotDone, code)
	id := runIDRe.FindStringSubmatch(out)[1]

	// Resuming the waiting run asks the human check again.
	code, out, errOut := runCLI(t, "yes\n", "run", "--resume", id, "--db", db)
	require.Equal(t, exitAchieved, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "The model is SCRIPTED")
	require.Contains(t, out, "resuming run "+id+" (waiting after 1 iteration(s))")
	require.Contains(t, out, "[Approve/abort] > yes")
	require.Contains(t, out, "── iteration 2/50 ──")
	require.Contains(t, out, "✓ GOAL ACHIEVED after 2 iteration(s)")

	// An ended run is only summarised.
	code, out, _ = runCLI(t, "", "run", "--resume", id, "--db", db)
	require.Equal(t, exitAchieved, code)
	require.Contains(t, out, "has already ended (achieved)")

	code, _, errOut = runCLI(t, "", "run", "--resume", "no-such-run", "--db", db)
	require.Equal(t, exitNotDone, code)
	require.Contains(t, errOut, "run not found")
}

func TestInterruptedRunResumesThroughTheCLI(t *testing.T) {
	isolate(t)
	db := filepath.Join(t.TempDir(), "r.db")
	// Cancel the command's context once the first tool has answered, as
	// Ctrl-C would.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out syncBuffer
	out.onWrite = func(s string) {
		if strings.Contains(s, "✓ file_list") {
			cancel()
		}
	}
	code := cli(ctx, []string{"run", "--db", db}, strings.NewReader(""), &out, &bytes.Buffer{})
	require.Equal(t, exitNotDone, code)
	text := out.String()
	require.Contains(t, text, "… INTERRUPTED after ")
	require.Contains(t, text, "resume with: retrai run --resume ")
	id := runIDRe.FindStringSubmatch(text)[1]

	code, resumed, errOut := runCLI(t, "", "run", "--resume", id, "--db", db)
	require.Equal(t, exitAchieved, code, "stdout:\n%s\nstderr:\n%s", resumed, errOut)
	require.Contains(t, resumed, "resuming run "+id+" (interrupted after ")
	require.Contains(t, resumed, "✓ GOAL ACHIEVED after 2 iteration(s)")
}

// syncBuffer is a buffer that calls onWrite with each write.
type syncBuffer struct {
	bytes.Buffer
	onWrite func(string)
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	n, err := b.Buffer.Write(p)
	if b.onWrite != nil {
		b.onWrite(string(p))
	}
	return n, err
}

func TestRunUsageErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown command", []string{"fly"}, `unknown command "fly"`},
		{"a project without a model", []string{"run", "--cwd", "."}, "no model configured for .: pass --model"},
		{"a demo sample that does not exist", []string{"run", "--goal", "cargo-test"}, `no "cargo-test" sample`},
		{"stray arguments", []string{"run", "now"}, "unexpected arguments"},
		{"bad flag", []string{"run", "--nope"}, "flag provided but not defined"},
		{"no iterations", []string{"run", "--max-iterations", "0"}, "--max-iterations must be positive, not 0"},
		{"negative iterations", []string{"run", "--max-iterations=-2"}, "--max-iterations must be positive, not -2"},
		{"a model on resume", []string{"run", "--resume", "some-id", "--model", "openai:gpt-4o"}, "--model cannot be used with --resume: a resumed run keeps the settings it was created with"},
		{"a project on resume", []string{"run", "--resume", "some-id", "--cwd", "."}, "--cwd cannot be used with --resume"},
		{"iterations on resume", []string{"run", "--resume", "some-id", "--max-iterations", "9"}, "--max-iterations cannot be used with --resume"},
		{"HITL on resume", []string{"tui", "--resume", "some-id", "--hitl"}, "--hitl cannot be used with --resume"},
		{"a bad lease time", []string{"runs", "--db", "DB"}, "$RETRAI_LEASE_TTL=\"soon\": want a positive Go duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := isolate(t)
			for i, a := range tt.args {
				if a == "DB" {
					tt.args[i] = filepath.Join(t.TempDir(), "r.db")
					t.Setenv(leaseTTLEnv, "soon")
				}
			}
			code, _, errOut := runCLI(t, "", tt.args...)
			require.Equal(t, exitUsage, code, errOut)
			require.Contains(t, errOut, tt.wantErr)
			require.NoDirExists(t, filepath.Join(home, ".retrai"), "no database was opened")
		})
	}
}

func TestRunWithABadModel(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	require.NoError(t, samples.Copy(samples.Shell, dir))
	code, _, errOut := runCLI(t, "", "run", "--cwd", dir, "--model", "nosuch:model", "--db", filepath.Join(t.TempDir(), "r.db"))
	require.Equal(t, exitNotDone, code)
	require.Contains(t, errOut, `unknown provider "nosuch"`)
}

func TestGoalsCommand(t *testing.T) {
	goDir, shellDir, empty := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, samples.Copy(samples.GoTest, goDir))
	require.NoError(t, samples.Copy(samples.Shell, shellDir))
	tests := []struct {
		dir  string
		want string
	}{
		{goDir, "Detected for " + goDir + ": go-test (go.mod found)"},
		{shellDir, "Detected for " + shellDir + ": shell (.retrai.yml sets a command)"},
		{empty, "No goal detected for " + empty + ": pass --goal."},
	}
	for _, tt := range tests {
		code, out, _ := runCLI(t, "", "goals", "--cwd", tt.dir)
		require.Equal(t, exitAchieved, code)
		require.Contains(t, out, tt.want)
		for _, name := range []string{"go-test", "pytest", "shell", "make-test", "ai-eval"} {
			require.Regexp(t, `(?m)^  `+regexp.QuoteMeta(name)+` +\S`, out)
		}
	}

	// A folder of plain pytest files is a pytest project.
	py := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(py, "test_words.py"), []byte("def test_words():\n    assert True\n"), 0o644))
	code, out, _ := runCLI(t, "", "goals", "--cwd", py)
	require.Equal(t, exitAchieved, code)
	require.Contains(t, out, "Detected for "+py+": pytest (test_words.py found (a pytest test file))")

	// A project that does not exist is an error.
	missing := filepath.Join(empty, "nonexistent")
	code, out, errOut := runCLI(t, "", "goals", "--cwd", missing)
	require.Equal(t, exitNotDone, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "retrai goals: --cwd: ")
	require.Contains(t, errOut, "no such file or directory")
}

func TestRunsCommand(t *testing.T) {
	isolate(t)
	db := filepath.Join(t.TempDir(), "r.db")
	code, out, _ := runCLI(t, "", "runs", "--db", db)
	require.Equal(t, exitAchieved, code)
	require.Contains(t, out, "No runs in "+db)

	code, out, _ = runCLI(t, "", "run", "--goal", samples.Shell, "--db", db)
	require.Equal(t, exitAchieved, code)
	achieved := runIDRe.FindStringSubmatch(out)[1]
	code, out, _ = runCLI(t, "", "run", "--hitl", "--goal", samples.Shell, "--db", db)
	require.Equal(t, exitNotDone, code)
	waiting := runIDRe.FindStringSubmatch(out)[1]

	code, out, _ = runCLI(t, "", "runs", "--db", db)
	require.Equal(t, exitAchieved, code)
	require.Regexp(t, `(?m)^ID +STATUS +GOAL +ITERATIONS +TOKENS +UPDATED +PROJECT$`, out)
	require.Regexp(t, `(?m)^`+waiting+` +waiting +shell +1/10 +\d+ +\S+ \S+ +\S+retrai-demo-shell-`, out)
	require.Regexp(t, `(?m)^`+achieved+` +achieved +shell +2/10 `, out)
	require.Less(t, strings.Index(out, waiting), strings.Index(out, achieved), "newest first")
	require.Contains(t, out, "2 run(s) in "+db+"; retrai runs RUN_ID shows one; retrai run --resume RUN_ID continues")

	code, out, _ = runCLI(t, "", "runs", "--db", db, waiting)
	require.Equal(t, exitAchieved, code)
	for _, want := range []string{
		"run " + waiting,
		"status        waiting (resume with: retrai run --resume " + waiting + " --db " + db + ")",
		"goal          shell",
		"model         demo:shell (scripted)",
		"iterations    1 of 10",
		"human checks  true",
		"question      Iteration 1 of 10 done",
	} {
		require.Contains(t, out, want)
	}

	// Flags may follow the run ID.
	code, after, _ := runCLI(t, "", "runs", waiting, "--db", db)
	require.Equal(t, exitAchieved, code)
	require.Equal(t, out, after)

	code, _, errOut := runCLI(t, "", "runs", "--db", db, "no-such-run")
	require.Equal(t, exitNotDone, code)
	require.Contains(t, errOut, "run not found")
	code, _, errOut = runCLI(t, "", "runs", "--db", db, "a", "b")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "one run ID at most")
	code, _, errOut = runCLI(t, "", "runs", "a", "--db", db, "b")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "one run ID at most")
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "-version", "version"} {
		code, out, _ := runCLI(t, "", arg)
		require.Equal(t, exitAchieved, code)
		require.Regexp(t, `^retrai \S+ \(.*go1\.\d+.*\)\n$`, out)
	}
	code, out, _ := runCLI(t, "", "help")
	require.Equal(t, exitAchieved, code)
	require.Contains(t, out, "retrai --version")
	require.Contains(t, out, "retrai runs [RUN_ID]")
}

func TestGraphCommand(t *testing.T) {
	code, out, _ := runCLI(t, "", "graph")
	require.Equal(t, exitAchieved, code)
	require.True(t, strings.HasPrefix(out, "flowchart TD\n"))
	require.Contains(t, out, "plan -. tool calls .-> act")
	require.Contains(t, out, "evaluate -. HITL .-> human_check")
}

func TestHelp(t *testing.T) {
	code, out, _ := runCLI(t, "", "help")
	require.Equal(t, exitAchieved, code)
	require.Contains(t, out, "retrai run [flags]")
	code, _, errOut := runCLI(t, "", "run", "-h")
	require.Equal(t, exitAchieved, code)
	require.Contains(t, errOut, "-max-iterations")
}
