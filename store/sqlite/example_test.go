package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	cpsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/sqlite"
)

// Items outlive the process that put them: a second Open of the file (a
// later run of the program, or another process at the same time) finds
// them. The checkpoint saver may keep its tables in the same file.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "store-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agent.db")

	s, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Println(err)
		return
	}
	ns := []string{"users", "u-42", "memories"}
	_ = s.Put(ctx, ns, "food", map[string]any{"likes": "ramen", "stars": 5})
	_ = s.Put(ctx, ns, "music", map[string]any{"likes": "jazz", "stars": 3})
	_ = s.Close()

	// Later, or elsewhere: the same file, with the checkpoints beside.
	s, err = sqlite.Open(ctx, path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	saver, err := cpsqlite.Open(ctx, path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer saver.Close() // graph.WithCheckpointer(saver) for the graph's threads

	items, err := s.Search(ctx, []string{"users", "u-42"}, store.Filter(map[string]any{"stars": map[string]any{"$gte": 4}}))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, it := range items {
		fmt.Println(it.Key, it.Value["likes"])
	}
	// Output:
	// food ramen
}
