package store_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
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

// A store beside a checkpointer: each thread has its own checkpointed
// conversation, and what the agent learns about a user outlives the thread
// it was learned in. Nodes reach the store by closure.
func Example_acrossThreads() {
	type State struct {
		User  state.Value[string]
		Input state.Value[string]
		Reply state.Value[string]
	}
	memories := store.NewMemory()
	b := graph.New[State]()
	b.AddNode("chat", func(ctx context.Context, s State) (State, error) {
		ns := []string{"users", s.User.Get(), "preferences"}
		if food, ok := strings.CutPrefix(s.Input.Get(), "I like "); ok {
			if err := memories.Put(ctx, ns, "food", map[string]any{"likes": food}); err != nil {
				return s, err
			}
			s.Reply.Set("noted")
			return s, nil
		}
		item, err := memories.Get(ctx, ns, "food")
		switch {
		case err != nil:
			return s, err
		case item == nil:
			s.Reply.Set("I do not know you yet")
		default:
			s.Reply.Set(fmt.Sprintf("how about some %v?", item.Value["likes"]))
		}
		return s, nil
	})
	b.AddEdge(graph.Start, "chat")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for _, turn := range []struct{ thread, user, input string }{
		{"monday", "u-42", "what should I eat?"},
		{"monday", "u-42", "I like ramen"},
		{"friday", "u-42", "what should I eat?"}, // a new thread: no checkpointed history
		{"friday", "u-7", "what should I eat?"},
	} {
		out, err := g.Invoke(ctx, State{User: state.Set(turn.user), Input: state.Set(turn.input)}, graph.WithThread(turn.thread))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s %s: %s\n", turn.thread, turn.user, out.Reply.Get())
	}
	// Output:
	// monday u-42: I do not know you yet
	// monday u-42: noted
	// friday u-42: how about some ramen?
	// friday u-7: I do not know you yet
}

// Items put with a TTL expire; reads extend the TTL unless told not to,
// and Sweep reclaims the space of expired items. The clock is set by hand
// here so that the example need not sleep.
func ExampleWithTTL() {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	s := store.NewMemory(store.WithClock(func() time.Time { return now }))
	ns := []string{"sessions", "u-42"}
	_ = s.Put(ctx, ns, "cart", map[string]any{"items": 3}, store.WithTTL(time.Hour))

	now = now.Add(50 * time.Minute)
	item, _ := s.Get(ctx, ns, "cart") // refreshes: expires an hour from now
	fmt.Println("after 50 minutes, expires at", item.ExpiresAt.Format("15:04"))

	now = now.Add(50 * time.Minute)
	item, _ = s.Get(ctx, ns, "cart", store.RefreshTTL(false))
	fmt.Println("after 100 minutes, found:", item != nil)

	now = now.Add(time.Hour)
	item, _ = s.Get(ctx, ns, "cart")
	n, _ := s.Sweep(ctx)
	fmt.Println("after 160 minutes, found:", item != nil, "- swept", n)
	// Output:
	// after 50 minutes, expires at 10:50
	// after 100 minutes, found: true
	// after 160 minutes, found: false - swept 1
}

// topics embeds a text as how often it mentions each of three topics: a
// stand-in for a model's embedder (llm.NewEmbedder) or the offline
// llm.NewHashingEmbedder.
type topics struct{}

func (topics) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{
			float32(strings.Count(t, "food") + strings.Count(t, "ramen") + strings.Count(t, "pizza")),
			float32(strings.Count(t, "music") + strings.Count(t, "jazz")),
			float32(strings.Count(t, "pet") + strings.Count(t, "cat")),
		}
	}
	return out, nil
}

// A store with an index ranks items by similarity to a query; each item
// found has its score.
func ExampleQuery() {
	ctx := context.Background()
	s := store.NewMemory(store.WithIndex(store.IndexConfig{Embedder: topics{}, Dims: 3, Fields: []string{"text"}}))
	ns := []string{"users", "u-42", "memories"}
	_ = s.Put(ctx, ns, "food", map[string]any{"text": "likes ramen, and pizza on fridays", "stars": 5})
	_ = s.Put(ctx, ns, "music", map[string]any{"text": "plays jazz piano", "stars": 4})
	_ = s.Put(ctx, ns, "pet", map[string]any{"text": "has a cat; the cat likes jazz", "stars": 5})
	_ = s.Put(ctx, ns, "secret", map[string]any{"text": "jazz jazz jazz"}, store.NoIndex())

	items, _ := s.Search(ctx, []string{"users", "u-42"}, store.Query("what music do they like? jazz?"), store.Limit(2))
	for _, it := range items {
		fmt.Printf("%s %.2f\n", it.Key, *it.Score)
	}
	items, _ = s.Search(ctx, ns, store.Query("jazz"), store.Filter(map[string]any{"stars": 5}))
	fmt.Println(items[0].Key)

	_, err := store.NewMemory().Search(ctx, ns, store.Query("jazz"))
	fmt.Println(err)
	// Output:
	// music 1.00
	// pet 0.45
	// pet
	// store: search: store: query search needs a store opened with an index
}
