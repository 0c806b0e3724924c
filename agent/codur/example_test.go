package codur_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/tools"
)

// A fix task on a scripted model: the planner delegates to the agent, the
// agent reads the program and finds nothing, and the review's local
// repair fixes the off-by-one.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "codur-example-")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "main.py"), []byte("print(sum(range(1, 10)))\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "expected.txt"), []byte("55\n"), 0o644)

	model := llm.NewScripted(
		llm.Reply{Text: `{"task_type": "code_change", "confidence": 0.95, "action": "plan"}`},
		llm.Reply{Text: `{"action": "delegate", "agent": "llm:default", "reasoning": "a code fix"}`},
		llm.Reply{Text: `{"tool": "read_file", "args": {"path": "main.py"}}`},
		llm.Reply{Text: "It looks like an off-by-one, but I am not sure where."},
	)
	reg := codur.NewRegistry()
	reg.Register(codur.AgentInfo{Ref: "llm:default"}, &codur.ModelAgent{Model: model})
	ws, _ := tools.NewWorkspace(dir)
	v, _ := codur.DetectVerifier(dir)
	g, err := codur.New(model, reg, codur.DefaultTools(ws), codur.WithVerifier(v))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := g.Invoke(context.Background(), codur.Input("fix the sum in main.py", false))
	if err != nil {
		fmt.Println(err)
		return
	}
	fixed, _ := os.ReadFile(filepath.Join(dir, "main.py"))
	fmt.Println("decided by:", out.DecidedBy.Get())
	fmt.Println("verified:", out.Verified.Get(), "after", out.Iterations.Get(), "iteration")
	fmt.Println("repairs:", out.Repairs.Get())
	fmt.Print("program: ", string(fixed))
	// Output:
	// decided by: llm_plan
	// verified: true after 1 iteration
	// repairs: [off_by_one_range]
	// program: print(sum(range(1, 10 + 1)))
}

// Agents that cannot call tools natively write them in their text.
func ExampleDetector() {
	ws, _ := tools.NewWorkspace(os.TempDir())
	d := codur.NewDetector(codur.DefaultTools(ws))
	for _, text := range []string{
		`{"tool": "read_file", "args": {"file": "main.py"}}`,
		"```json\n{\"name\": \"move_file\", \"arguments\": {\"src\": \"a\", \"dst\": \"b\"}}\n```",
		`<tool_call>{"name": "file_delete", "arguments": {"path": "tmp.txt"}}</tool_call>`,
		`file_replace(path="main.py", old="Wrld", new="World")`,
	} {
		calls, format := d.Detect(text)
		fmt.Println(format, calls[0].Tool, calls[0].Args)
	}
	// Output:
	// json file_read {"path":"main.py"}
	// fenced file_move {"destination":"b","source":"a"}
	// tagged file_delete {"path":"tmp.txt"}
	// call file_replace {"new":"World","old":"Wrld","path":"main.py"}
}
