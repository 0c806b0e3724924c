package goals_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentgraph/agentgraph/goals"
)

// A project configured by .retrai.yml: detect its goal, build it from the
// file's settings and check it.
func Example() {
	dir, _ := os.MkdirTemp("", "goals-example")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, ".retrai.yml"), []byte("command: test -f done.txt\ntimeout: 30s\n"), 0o644)

	name, why, err := goals.Detect(dir)
	if err != nil {
		panic(err)
	}
	fmt.Println(name, "-", why)

	cfg, _, err := goals.LoadConfig(dir)
	if err != nil {
		panic(err)
	}
	g, err := goals.New(name, *cfg)
	if err != nil {
		panic(err)
	}
	st := goals.State{RunID: "example", Iteration: 1, MaxIterations: 5}
	res, err := g.Check(context.Background(), st, dir)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Achieved, res.Reason)

	_ = os.WriteFile(filepath.Join(dir, "done.txt"), nil, 0o644)
	res, _ = g.Check(context.Background(), st, dir)
	fmt.Println(res.Achieved, res.Reason)
	// Output:
	// shell - .retrai.yml sets a command
	// false shell: test -f done.txt exited with status 1
	// true shell: test -f done.txt exited 0
}
