package coder_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/store"
)

// The agent on a scripted model: a preference, a question, and the same
// question again, answered from the query cache.
func Example() {
	dir, err := os.MkdirTemp("", "coder-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	src := "package calc\n\n// Sum returns a + b.\nfunc Sum(a, b int) int { return a + b }\n"
	if err := os.WriteFile(filepath.Join(dir, "calc.go"), []byte(src), 0o644); err != nil {
		panic(err)
	}

	model := llm.NewScripted(llm.Reply{Text: "Sum adds its two arguments (calc.go, line 4)."})
	a, err := coder.New(model, dir, coder.WithStore(store.NewMemory()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, req := range []string{
		"remember that I prefer short answers",
		"what does Sum do?",
		"what does Sum do?",
	} {
		res, err := a.Ask(ctx, "demo", req)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s, by %s: %s (cached: %v)\n", res.Route.Intent, res.Route.Why(), res.Answer, res.Cached)
	}
	// Output:
	// profile, by pattern remember-preference (0.95): Noted. I will remember: I prefer short answers (cached: false)
	// read, by pattern what-does (0.90): Sum adds its two arguments (calc.go, line 4). (cached: false)
	// read, by pattern what-does (0.90): Sum adds its two arguments (calc.go, line 4). (cached: true)
}

// Adding an intent: one node (Run), one pattern entry and one route entry
// (the IntentDef itself).
func ExampleWithIntent() {
	dir, err := os.MkdirTemp("", "coder-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	countFiles := coder.IntentDef{
		Intent:      "count_files",
		Description: "count the files of the project",
		Patterns:    []coder.Pattern{coder.NewPattern("how-many-files", "count_files", `^how many files\b`, 0.95)},
		Run: func(ctx context.Context, s coder.State) (string, error) {
			entries, err := os.ReadDir(dir)
			return fmt.Sprintf("%d files", len(entries)), err
		},
	}
	a, err := coder.New(llm.NewScripted(), dir, coder.WithIntent(countFiles))
	if err != nil {
		panic(err)
	}
	res, err := a.Ask(context.Background(), "demo", "How many files are there?")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s, by %s: %s\n", res.Route.Intent, res.Route.Why(), res.Answer)
	// Output:
	// count_files, by pattern how-many-files (0.95): 0 files
}
