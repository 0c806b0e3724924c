package codur_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

func TestPrePlanNeverActsOnAPlannedCodeChange(t *testing.T) {
	writeMain := `{"task_type": "file_operation", "confidence": 0.97, "action": "tool", "tool_calls": [{"tool": "file_write", "args": {"path": "main.py", "content": "print(16)\n"}}]}`
	cases := []struct {
		name, task, answer string
		files              map[string]string
	}{
		{"expected behaviour wording", "main.py should print 15, not 10", writeMain, nil},
		{"word stem fixes", "fixes needed in main.py so it prints 15", writeMain, nil},
		{"word stem implementing", "implementing the total in main.py properly", writeMain, nil},
		{"type in another case", "tidy main.py", `{"task_type": "Code_Change", "confidence": 1, "action": "respond", "response": "done"}`, nil},
		{"write to a source file", "tidy main.py", writeMain, nil},
		{"any write beside an expected output", "tidy the notes", `{"task_type": "file_operation", "confidence": 1, "action": "tool", "tool_calls": [{"tool": "file_write", "args": {"path": "notes.txt", "content": "x"}}]}`, map[string]string{"expected.txt": "10\n"}},
		{"a command", "tidy the notes", `{"task_type": "file_operation", "confidence": 1, "action": "tool", "tool_calls": [{"tool": "bash_exec", "args": {"command": "true"}}]}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"main.py": "print(10)\n", "notes.txt": "n"}
			for k, v := range c.files {
				files[k] = v
			}
			dir, _ := workspace(t, files)
			model := llm.NewScripted(text(c.answer), text(`{"action": "respond", "response": "planned"}`))
			var opts []codur.Option
			if v, err := codur.DetectVerifier(dir); err == nil {
				opts = append(opts, codur.WithVerifier(v))
			}
			r := run(t, build(t, model, dir, opts...), codur.Input(c.task, false))
			require.NoError(t, r.err)
			require.Equal(t, codur.PhasePlan, r.out.DecidedBy.Get(), "full planning decided")
			require.Equal(t, "print(10)\n", readFile(t, dir, "main.py"))
			require.Equal(t, "n", readFile(t, dir, "notes.txt"))
		})
	}
}

func TestRunThroughAnAgentIsVerifiedWhateverTheWording(t *testing.T) {
	dir, _ := workspace(t, map[string]string{"main.py": "print(10)\n", "expected.txt": "15\n"})
	model := llm.NewScripted(
		text(`{"task_type": "question", "confidence": 0.5, "action": "plan"}`),
		planDelegate,
		text(`{"tool": "write_file", "args": {"path": "main.py", "content": "print(16)\n"}}`),
		text("Done."),
		text(`{"action": "respond", "response": "gave up"}`),
	)
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	r := run(t, build(t, model, dir, codur.WithVerifier(v), codur.WithRepairBudget(0), codur.WithMaxIterations(1)), codur.Input("main.py totals", false))
	require.NoError(t, r.err)
	require.False(t, r.out.Verified.Get())
	require.Contains(t, r.out.FinalResponse.Get(), "Gave up after 1 iterations")
}

func TestDetectorIgnoresCodeShownInOtherLanguages(t *testing.T) {
	_, ws := workspace(t, nil)
	d := codur.NewDetector(codur.DefaultTools(ws))
	for name, text := range map[string]string{
		"python fence call":       "Here is the fix:\n```python\nimport os\ndelete_file(\"notes.txt\")\n```\n",
		"python fence keyword":    "```python\nbash_exec(command=\"rm -rf .\")\n```",
		"python fence json":       "```python\ncall = {\"tool\": \"file_delete\", \"args\": {\"path\": \"notes.txt\"}}\n```",
		"unclosed python fence":   "```python\nfile_delete(path=\"notes.txt\")\n",
		"indented call line":      "def clean():\n    file_delete(path=\"notes.txt\")\n",
		"indented in a bare text": "  \tbash_exec(command=\"rm -rf .\")",
	} {
		t.Run(name, func(t *testing.T) {
			got, format := d.Detect(text)
			require.Empty(t, got)
			require.Empty(t, format)
		})
	}
}

func TestAgentSnippetDoesNotDeleteFiles(t *testing.T) {
	dir, _ := workspace(t, map[string]string{"notes.txt": "keep", "main.py": "print(1)\n"})
	model := llm.NewScripted(
		preCode,
		planDelegate,
		text("You could clean up like this:\n```python\ndelete_file(\"notes.txt\")\n```\n"),
	)
	r := run(t, build(t, model, dir), codur.Input("fix main.py", false))
	require.NoError(t, r.err)
	require.Equal(t, "keep", readFile(t, dir, "notes.txt"))
}

func TestManyIterationsRaiseTheDefaultRecursionLimit(t *testing.T) {
	// 51 iterations need 6 × 51 + 1 = 307 supersteps, above the default 300.
	const iterations = 51
	dir, _ := workspace(t, map[string]string{"main.py": "print('no')\n", "expected.txt": "yes\n"})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	replies := []llm.Reply{preCode}
	for range iterations {
		replies = append(replies, planDelegate, text("tried"))
	}
	g := build(t, llm.NewScripted(replies...), dir, codur.WithVerifier(v), codur.WithRepairBudget(0), codur.WithMaxIterations(iterations))
	r := run(t, g, codur.Input("fix main.py", false))
	require.NoError(t, r.err)
	require.Equal(t, iterations, r.out.Iterations.Get())
	require.Contains(t, r.out.FinalResponse.Get(), "Gave up after 51 iterations")
}

func TestNewRejectsAnUnregisteredDefaultAgent(t *testing.T) {
	_, ws := workspace(t, nil)
	model := llm.NewScripted()
	reg := codur.NewRegistry()
	require.NoError(t, reg.Register(codur.AgentInfo{Ref: "llm:coder"}, &codur.ModelAgent{Model: model}))
	for _, c := range []struct {
		name string
		opts []codur.Option
		ref  string
	}{
		{"implicit default", nil, codur.DefaultAgent},
		{"named default", []codur.Option{codur.WithDefaultAgent("llm:missing")}, "llm:missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := codur.New(model, reg, codur.DefaultTools(ws), c.opts...)
			var de *codur.DefaultAgentError
			require.ErrorAs(t, err, &de)
			require.Equal(t, c.ref, de.Ref)
			require.Contains(t, err.Error(), c.ref)
		})
	}
	_, err := codur.New(model, reg, codur.DefaultTools(ws), codur.WithDefaultAgent("llm:coder"))
	require.NoError(t, err)
}

func TestRepairInALargeWorkspaceRunsInACopyOfTheProgramDirectory(t *testing.T) {
	// More files than a scratch copy takes: the candidates run in a copy
	// of the program's own directory, never on the user's files (the
	// program logs each run beside itself).
	src := "with open('runs.log', 'a') as f:\n    f.write('run\\n')\nprint(sum(range(1, 10)))\n"
	files := map[string]string{"main.py": src, "expected.txt": "55\n"}
	for i := range 2100 {
		files[fmt.Sprintf("data/f%04d.txt", i)] = "x"
	}
	dir, _ := workspace(t, files)
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	model := llm.NewScripted(preCode, planDelegate, text("no idea"))
	r := run(t, build(t, model, dir, codur.WithVerifier(v)), codur.Input("fix main.py", false))
	require.NoError(t, r.err)
	require.Equal(t, []string{"off_by_one_range"}, r.out.Repairs.Get())
	require.Len(t, r.repairs, 1)
	require.True(t, r.repairs[0].Partial)
	require.NoFileExists(t, filepath.Join(dir, "runs.log"), "no candidate ran on the user's files")
	require.Contains(t, readFile(t, dir, "main.py"), "range(1, 10 + 1)")
}

func TestVerificationTooLargeToCopyFailsClearly(t *testing.T) {
	files := map[string]string{"main.py": "print(1)\n", "expected.txt": "1\n"}
	for i := range 2001 {
		files[fmt.Sprintf("f%04d.txt", i)] = "x"
	}
	dir, _ := workspace(t, files)
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	_, err = v.Run(t.Context())
	require.ErrorIs(t, err, codur.ErrWorkspaceTooLarge)
}

func TestVerifiedProgramCannotReadTheExpectedOutput(t *testing.T) {
	for _, src := range []string{
		"print(open('expected.txt').read(), end='')\n",
		"import os\nprint(open(os.path.join(os.getcwd(), 'expected.txt')).read(), end='')\n",
	} {
		dir, _ := workspace(t, map[string]string{"main.py": src, "expected.txt": "15\n"})
		v, err := codur.DetectVerifier(dir)
		require.NoError(t, err)
		res, err := v.Run(t.Context())
		require.NoError(t, err)
		require.False(t, res.Passed)
		require.Contains(t, res.Stderr, "expected.txt")
		require.Equal(t, "15\n", readFile(t, dir, "expected.txt"))
	}
}

func TestCheatingAgentIsNotVerified(t *testing.T) {
	dir, _ := workspace(t, map[string]string{"main.py": "print(sum(range(1, 5)))\n", "expected.txt": "15\n"})
	model := llm.NewScripted(
		preCode,
		planDelegate,
		text(`{"tool": "write_file", "args": {"path": "main.py", "content": "print(open('expected.txt').read(), end='')\n"}}`),
		text("Fixed."),
	)
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	r := run(t, build(t, model, dir, codur.WithVerifier(v), codur.WithMaxIterations(1), codur.WithRepairBudget(0)), codur.Input("fix the bug in main.py", false))
	require.NoError(t, r.err)
	require.False(t, r.out.Verified.Get())
	require.Equal(t, "print(open('expected.txt').read(), end='')\n", readFile(t, dir, "main.py"), "the agent's program is the one verified")
}

func TestVerificationRunsLeaveTheWorkspaceAsItWas(t *testing.T) {
	dir, _ := workspace(t, map[string]string{
		"main.py":      "import os\nos.remove('data.txt')\nopen('out.txt', 'w').write('x')\nprint(2)\n",
		"data.txt":     "keep",
		"expected.txt": "1\n",
	})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	res, err := v.Run(t.Context())
	require.NoError(t, err)
	require.False(t, res.Passed)
	require.Equal(t, "keep", readFile(t, dir, "data.txt"))
	require.NoFileExists(t, filepath.Join(dir, "out.txt"))
}

func TestCLIAgentGetsAMinimalEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	t.Setenv("CODUR_PASSED", "passed-on")
	dir, _ := workspace(t, nil)
	a := &codur.CLIAgent{Command: "sh", Args: []string{"-c", `echo "key=${OPENAI_API_KEY:-none} set=$SET passed=$CODUR_PASSED path=${PATH:+yes}"`, "x"},
		Env: []string{"SET=1", "CODUR_PASSED"}}
	reply, err := a.Run(t.Context(), codur.Request{Messages: []state.Message{state.Human("task")}, Dir: dir})
	require.NoError(t, err)
	require.Equal(t, "key=none set=1 passed=passed-on path=yes", reply.Message.Text())
}

func TestCLIAgentGetsALargePromptOnStandardInput(t *testing.T) {
	dir, _ := workspace(t, nil)
	big := strings.Repeat("x", 200<<10) // over the system's 128 KB limit of one argument
	count := `printf '%s args, stdin %s bytes' "$#" "$(wc -c | tr -d ' ')"`
	cases := []struct {
		name   string
		agent  codur.CLIAgent
		prompt string
		want   string
	}{
		{"auto, large", codur.CLIAgent{Command: standIn(t, count), Args: []string{"-p", "{prompt}"}}, big, fmt.Sprintf("1 args, stdin %d bytes", len(big))},
		{"auto, small", codur.CLIAgent{Command: standIn(t, count), Args: []string{"-p", "{prompt}"}}, "hi", "2 args, stdin 0 bytes"},
		{"auto, limit set", codur.CLIAgent{Command: standIn(t, count), MaxArgPrompt: 1}, "hi", "0 args, stdin 2 bytes"},
		{"stdin", codur.CLIAgent{Command: standIn(t, count), Args: []string{"--text={prompt}"}, Prompt: codur.PromptStdin}, "hi", "1 args, stdin 2 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reply, err := c.agent.Run(t.Context(), codur.Request{Messages: []state.Message{state.Human(c.prompt)}, Dir: dir})
			require.NoError(t, err)
			require.Equal(t, c.want, reply.Message.Text())
		})
	}
	_, err := (&codur.CLIAgent{Command: "true", Prompt: "pipe"}).Run(t.Context(), codur.Request{Dir: dir})
	require.ErrorContains(t, err, `unknown prompt input "pipe"`)
}

func TestConfigSetsHowACLIAgentGetsItsPrompt(t *testing.T) {
	cfg, err := codur.ParseConfig([]byte("agents:\n  big: {command: claude, prompt_input: stdin, max_arg_prompt: 10}\n"))
	require.NoError(t, err)
	reg, err := cfg.Registry(t.Context(), nil)
	require.NoError(t, err)
	a, ok := reg.Get("agent:big")
	require.True(t, ok)
	cli, ok := a.(*codur.CLIAgent)
	require.True(t, ok)
	require.Equal(t, codur.PromptStdin, cli.Prompt)
	require.Equal(t, 10, cli.MaxArgPrompt)
	_, err = codur.ParseConfig([]byte("agents:\n  big: {command: claude, prompt_input: pipe}\n"))
	require.ErrorContains(t, err, `prompt_input "pipe"`)
}

func TestVerificationCopiesAroundUnreadableFiles(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads everything")
	}
	dir, _ := workspace(t, map[string]string{"main.py": "print(open('data.txt').read())\n", "data.txt": "1", "expected.txt": "1\n", "secret/key": "k", "locked.txt": "l"})
	require.NoError(t, os.Chmod(filepath.Join(dir, "secret"), 0))
	require.NoError(t, os.Chmod(filepath.Join(dir, "locked.txt"), 0))
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "secret"), 0o755) })
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	res, err := v.Run(t.Context())
	require.NoError(t, err)
	require.True(t, res.Passed, "%+v", res)
}
