package samples

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

//go:embed all:testdata
var files embed.FS

// Names of the bundled samples; each is also the name of the goal that
// its project is detected as.
const (
	GoTest = "go-test"
	Pytest = "pytest"
	Shell  = "shell"
)

// Names returns the names of the bundled samples, sorted.
func Names() []string {
	names := make([]string, 0, len(scripts))
	for name := range scripts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// UnknownSampleError is returned for a name that is not a bundled sample.
type UnknownSampleError struct {
	Name string
}

// Error implements error.
func (e *UnknownSampleError) Error() string {
	return fmt.Sprintf("samples: unknown sample %q (known: %s)", e.Name, strings.Join(Names(), ", "))
}

// Copy writes the sample project name into the directory dir, creating it
// if needed. Existing files of the same names are overwritten.
func Copy(name, dir string) error {
	if _, ok := scripts[name]; !ok {
		return &UnknownSampleError{Name: name}
	}
	root := path.Join("testdata", name)
	err := fs.WalkDir(files, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		target := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(rel, ".sample")))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		return fmt.Errorf("samples: copy %s: %w", name, err)
	}
	return nil
}

// Script returns the model answers that fix the sample name, one per
// iteration of the agent: the first explores and runs the check (which
// still fails), the second patches the bug with file_patch and runs the
// check again. Tool call IDs are set and unique. The token usage is made
// up, for display.
func Script(name string) ([]llm.Reply, error) {
	s, ok := scripts[name]
	if !ok {
		return nil, &UnknownSampleError{Name: name}
	}
	return s(), nil
}

var scripts = map[string]func() []llm.Reply{
	GoTest: func() []llm.Reply {
		return []llm.Reply{
			{
				Text: "I'll start by looking at the project, reading the code under test and running the tests to see what fails.",
				ToolCalls: []llms.ToolCall{
					state.ToolCall("call_1_1", "file_list", `{"path":"."}`),
					state.ToolCall("call_1_2", "file_read", `{"path":"calc.go"}`),
					state.ToolCall("call_1_3", "run_tests", `{"framework":"go"}`),
				},
				Usage: llm.Usage{PromptTokens: 1850, CompletionTokens: 90, TotalTokens: 1940},
			},
			{
				Text: "SumRange(1, 5) returns 10 instead of 15: the loop condition `i < b` stops before the upper bound, an off-by-one error. I'll make the bound inclusive and re-run the tests.",
				ToolCalls: []llms.ToolCall{
					state.ToolCall("call_2_1", "file_patch", `{"path":"calc.go","old_text":"for i := a; i < b; i++ {","new_text":"for i := a; i <= b; i++ {"}`),
					state.ToolCall("call_2_2", "run_tests", `{"framework":"go"}`),
				},
				Usage: llm.Usage{PromptTokens: 2900, CompletionTokens: 110, TotalTokens: 3010},
			},
		}
	},
	Pytest: func() []llm.Reply {
		return []llm.Reply{
			{
				Text: "I'll read the module under test and run pytest to see which tests fail.",
				ToolCalls: []llms.ToolCall{
					state.ToolCall("call_1_1", "file_read", `{"path":"wordcount.py"}`),
					state.ToolCall("call_1_2", "run_tests", `{"framework":"pytest"}`),
				},
				Usage: llm.Usage{PromptTokens: 1800, CompletionTokens: 70, TotalTokens: 1870},
			},
			{
				Text: "split(\" \") yields empty strings for repeated spaces and ignores newlines and tabs; split() with no argument splits on any run of whitespace. I'll patch it and re-run pytest.",
				ToolCalls: []llms.ToolCall{
					state.ToolCall("call_2_1", "file_patch", `{"path":"wordcount.py","old_text":"return len(text.split(\" \"))","new_text":"return len(text.split())"}`),
					state.ToolCall("call_2_2", "run_tests", `{"framework":"pytest"}`),
				},
				Usage: llm.Usage{PromptTokens: 2700, CompletionTokens: 95, TotalTokens: 2795},
			},
		}
	},
	Shell: func() []llm.Reply {
		return []llm.Reply{
			{
				Text: "The goal's command checks greeting.txt. I'll read the file and run the command myself.",
				ToolCalls: []llms.ToolCall{
					state.ToolCall("call_1_1", "file_read", `{"path":"greeting.txt"}`),
					state.ToolCall("call_1_2", "bash_exec", `{"command":"grep -qx 'Hello, World!' greeting.txt; echo exit=$?"}`),
				},
				Usage: llm.Usage{PromptTokens: 1700, CompletionTokens: 65, TotalTokens: 1765},
			},
			{
				Text: "The file says \"Wrold\" instead of \"World\". I'll fix the typo and run the command again.",
				ToolCalls: []llms.ToolCall{
					state.ToolCall("call_2_1", "file_patch", `{"path":"greeting.txt","old_text":"Wrold","new_text":"World"}`),
					state.ToolCall("call_2_2", "bash_exec", `{"command":"grep -qx 'Hello, World!' greeting.txt; echo exit=$?"}`),
				},
				Usage: llm.Usage{PromptTokens: 2400, CompletionTokens: 80, TotalTokens: 2480},
			},
		}
	},
}

// ErrScriptUsedUp is returned by a [Model] asked for more answers than its
// script has.
var ErrScriptUsedUp = errors.New("samples: the script has no more answers for this conversation")

// Model returns a scripted model that fixes the sample name. Unlike a bare
// llm.Scripted, which answers its i-th call with the i-th reply, it picks
// the reply from the conversation it is sent: the number of AI messages in
// it. So a run interrupted and resumed in a new process, with a new Model,
// carries on where it stopped. Each answer is produced by an llm.Scripted
// holding that one reply (token streaming and usage accounting behave the
// same).
func Model(name string) (llm.Model, error) {
	replies, err := Script(name)
	if err != nil {
		return nil, err
	}
	return &replayModel{replies: replies}, nil
}

type replayModel struct {
	replies []llm.Reply
}

// Generate implements llm.Model.
func (m *replayModel) Generate(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
	n := 0
	for _, msg := range msgs {
		if msg.Role == llms.ChatMessageTypeAI {
			n++
		}
	}
	if n >= len(m.replies) {
		return nil, fmt.Errorf("%w (%d answers, %d given already)", ErrScriptUsedUp, len(m.replies), n)
	}
	return llm.NewScripted(m.replies[n]).Generate(ctx, msgs, opts...)
}
