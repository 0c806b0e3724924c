package store_test

import (
	"context"
	"fmt"

	"github.com/agentgraph/agentgraph/store"
)

func Example() {
	ctx := context.Background()
	s := store.NewMemory()

	ns := []string{"users", "u-42", "memories"}
	_ = s.Put(ctx, ns, "food", map[string]any{"likes": "pizza", "stars": 4})
	_ = s.Put(ctx, ns, "music", map[string]any{"likes": "jazz", "stars": 5})
	_ = s.Put(ctx, []string{"users", "u-7", "memories"}, "food", map[string]any{"likes": "sushi", "stars": 3})

	item, _ := s.Get(ctx, ns, "food")
	fmt.Println(item.Value["likes"])

	items, _ := s.Search(ctx, []string{"users"}, store.Filter(map[string]any{"stars": map[string]any{"$gte": 4}}), store.Limit(10))
	fmt.Println(len(items), "memories with at least 4 stars")

	nss, _ := s.ListNamespaces(ctx, store.Suffix("memories"), store.MaxDepth(2))
	fmt.Println(nss)

	missing, err := s.Get(ctx, ns, "nothing")
	fmt.Println(missing, err)

	err = s.Put(ctx, []string{"agentgraph", "x"}, "k", nil)
	fmt.Println(err)
	// Output:
	// pizza
	// 2 memories with at least 4 stars
	// [[users u-42] [users u-7]]
	// <nil> <nil>
	// store: put: Root label for namespace cannot be "agentgraph". Got: ("agentgraph", "x")
}
