package codur_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/tools"
)

func TestDetectorFindsEveryTextFormat(t *testing.T) {
	_, ws := workspace(t, nil)
	d := codur.NewDetector(codur.DefaultTools(ws))
	read := []codur.ToolCall{{Tool: "file_read", Args: `{"path":"main.py"}`}}
	cases := []struct {
		name, text string
		want       []codur.ToolCall
		format     string
	}{
		{"json object", `Let me look. {"tool": "file_read", "args": {"path": "main.py"}} then fix it.`, read, codur.FormatJSON},
		{"json name/arguments", `{"name": "read_file", "arguments": {"path": "main.py"}}`, read, codur.FormatJSON},
		{"openai function with string arguments", `{"type": "function", "function": {"name": "file_read", "arguments": "{\"path\": \"main.py\"}"}}`, read, codur.FormatJSON},
		{"json list", `[{"tool": "file_read", "args": {"path": "main.py"}}, {"tool": "file_delete", "args": {"path": "x"}}]`,
			append(read, codur.ToolCall{Tool: "file_delete", Args: `{"path":"x"}`}), codur.FormatJSON},
		{"tool_calls wrapper", `{"tool_calls": [{"tool": "file_read", "args": {"path": "main.py"}}]}`, read, codur.FormatJSON},
		{"fenced json", "I will read it:\n```json\n{\"tool\": \"read_file\", \"args\": {\"filename\": \"main.py\"}}\n```\n", read, codur.FormatFenced},
		{"fenced call line", "```tool\nfile_read(path=\"main.py\")\n```", read, codur.FormatFenced},
		{"tagged", `<tool_call>{"name": "file_read", "arguments": {"path": "main.py"}}</tool_call>`, read, codur.FormatTagged},
		{"call line keyword", `file_read(path="main.py")`, read, codur.FormatCall},
		{"call line single quotes and colon", `- read_file(path: 'main.py')`, read, codur.FormatCall},
		{"call line positional", "`file_read(\"main.py\")`", read, codur.FormatCall},
		{"call line json argument", `file_read({"path": "main.py"})`, read, codur.FormatCall},
		{"call line two positionals", `move_file("a.txt", "b.txt")`, []codur.ToolCall{{Tool: "file_move", Args: `{"destination":"b.txt","source":"a.txt"}`}}, codur.FormatCall},
		{"call line escapes", `write_file(path="a.txt", content="x\ny")`, []codur.ToolCall{{Tool: "file_write", Args: `{"content":"x\ny","path":"a.txt"}`}}, codur.FormatCall},
		{"argument aliases", `{"tool": "copy_file", "args": {"src": "a", "dst": "b"}}`, []codur.ToolCall{{Tool: "file_copy", Args: `{"destination":"b","source":"a"}`}}, codur.FormatJSON},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, format := d.Detect(c.text)
			require.Empty(t, cmp.Diff(c.want, got))
			require.Equal(t, c.format, format)
		})
	}
}

func TestDetectorIgnoresWhatIsNotACallOfAKnownTool(t *testing.T) {
	_, ws := workspace(t, nil)
	d := codur.NewDetector(codur.DefaultTools(ws))
	for _, text := range []string{
		"",
		"I fixed the loop.",
		`print("hello")`,
		"```python\nfor i in range(3):\n    print(i)\n```",
		`{"tool": "rm_rf", "args": {"path": "/"}}`,
		`{"tool": "file_read", "args": "not an object"}`,
		`{"tool": "file_read", "args": {"path": "main.py"`,
		`file_read(path="main.py", )extra`,
		`file_read(1, 2, 3, 4, 5)`,
		`{"result": {"answer": 42}}`,
	} {
		got, format := d.Detect(text)
		require.Empty(t, got, "%q", text)
		require.Empty(t, format)
	}
}

func TestDetectorResolvesAliases(t *testing.T) {
	_, ws := workspace(t, nil)
	d := codur.NewDetector(codur.DefaultTools(ws))
	for alias, canon := range codur.ToolAliases {
		got, ok := d.Resolve(alias)
		require.True(t, ok, alias)
		require.Equal(t, canon, got)
	}
	_, ok := d.Resolve("no_such_tool")
	require.False(t, ok)
}

func FuzzDetect(f *testing.F) {
	f.Add(`{"tool": "file_read", "args": {"path": "main.py"}}`)
	f.Add("```json\n{\"tool\": \"read_file\"}\n```")
	f.Add(`file_read(path="a", content='b\'c')`)
	f.Add(`<tool_call>{"name":`)
	ws, err := tools.NewWorkspace(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	d := codur.NewDetector(codur.DefaultTools(ws))
	f.Fuzz(func(t *testing.T, text string) {
		calls, format := d.Detect(text)
		if (len(calls) == 0) != (format == "") {
			t.Fatalf("calls %v with format %q", calls, format)
		}
	})
}

func TestDetectorStaysCheapOnHostileText(t *testing.T) {
	_, ws := workspace(t, nil)
	d := codur.NewDetector(codur.DefaultTools(ws))
	// A megabyte of unclosed brackets would take quadratic time to try
	// as JSON from every position; the detection reads a bounded prefix
	// and tries a bounded number of starts, and still finds a call early.
	hostile := `{"tool": "file_read", "args": {"path": "a"}}` + strings.Repeat("[", 1<<20)
	calls, format := d.Detect(hostile)
	require.Equal(t, codur.FormatJSON, format)
	require.Len(t, calls, 1)
	calls, _ = d.Detect(strings.Repeat("[{", 1<<19) + `{"tool": "file_read", "args": {"path": "a"}}`)
	require.Empty(t, calls, "a call past the bounded prefix is not looked for")
}
