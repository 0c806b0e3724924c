package mapreduce_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// Page is the input of one map task. It is the node's own type, not the
// graph's state, and it is saved in checkpoints as JSON.
type Page struct {
	URL   string `json:"url"`
	Index int    `json:"index"`
}

// Digest is the graph's state. The map tasks' writes meet in Summaries
// and Words, whose types say how parallel writes merge: Append
// concatenates in Send order, Sum adds.
type Digest struct {
	URLs      state.Value[[]string]
	Summaries state.Append[string]
	Words     state.Sum[int]
	Report    state.Value[string]
}

// build compiles plan → one summarize task per URL → report.
func build(fetch func(ctx context.Context, url string) (string, error), opts ...graph.CompileOption) (*graph.Graph[Digest], error) {
	b := graph.New[Digest]()
	b.AddNode("plan", func(ctx context.Context, d Digest) (Digest, error) {
		return Digest{}, nil
	})
	b.AddBranch("plan", func(ctx context.Context, d Digest) (graph.Route[Digest], error) {
		var r graph.Route[Digest]
		for i, url := range d.URLs.Get() {
			r.Sends = append(r.Sends, graph.SendInput[Digest]("summarize", Page{URL: url, Index: i}))
		}
		return r, nil
	}, graph.WithDestinations("summarize"))
	graph.AddNodeWithInput(b, "summarize", func(ctx context.Context, p Page) (Digest, error) {
		text, err := fetch(ctx, p.URL)
		if err != nil {
			return Digest{}, err
		}
		n := len(strings.Fields(text))
		return Digest{
			Summaries: state.Items(fmt.Sprintf("%d. %s: %d words", p.Index+1, p.URL, n)),
			Words:     state.Delta(n),
		}, nil
	})
	b.AddNode("report", func(ctx context.Context, d Digest) (Digest, error) {
		d.Report.Set(fmt.Sprintf("%d pages, %d words", d.Summaries.Len(), d.Words.Get()))
		return d, nil
	})
	b.AddEdge(graph.Start, "plan")
	b.AddEdge("summarize", "report")
	return b.Compile(opts...)
}

// pages stands in for the web.
var pages = map[string]string{
	"go.dev":         "Build simple, secure, scalable systems with Go",
	"pkg.go.dev":     "Search packages or symbols",
	"go.dev/blog":    "The Go Blog",
	"go.dev/doc/faq": "Frequently Asked Questions (FAQ)",
}

func fetch(ctx context.Context, url string) (string, error) {
	text, ok := pages[url]
	if !ok {
		return "", fmt.Errorf("fetch %s: not found", url)
	}
	return text, nil
}

// One summarize task per URL, at most two at a time; the summaries merge
// in the order they were sent, whichever task finished first.
func Example() {
	g, err := build(fetch)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := g.Invoke(context.Background(),
		Digest{URLs: state.Set([]string{"go.dev", "pkg.go.dev", "go.dev/blog", "go.dev/doc/faq"})},
		graph.WithMaxConcurrency(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range out.Summaries.Get() {
		fmt.Println(s)
	}
	fmt.Println(out.Report.Get())
	// Output:
	// 1. go.dev: 7 words
	// 2. pkg.go.dev: 4 words
	// 3. go.dev/blog: 3 words
	// 4. go.dev/doc/faq: 4 words
	// 4 pages, 18 words
}

// When one map task fails, the step fails; with a checkpointer the tasks
// that finished are saved, and Resume runs only the one that failed.
func Example_resumeAfterFailure() {
	var mu sync.Mutex
	calls := map[string]int{}
	flaky := func(ctx context.Context, url string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[url]++
		if url == "go.dev/blog" && calls[url] == 1 {
			return "", errors.New("503 Service Unavailable")
		}
		return fetch(ctx, url)
	}
	g, err := build(flaky, graph.WithCheckpointer(checkpoint.NewMemory()))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	thread := graph.WithThread("digest-1")
	_, err = g.Invoke(ctx, Digest{URLs: state.Set([]string{"go.dev", "pkg.go.dev", "go.dev/blog"})}, thread)
	fmt.Println("first run:", err)

	out, err := g.Resume(ctx, graph.Command[Digest]{}, thread)
	fmt.Println("resumed:", out.Report.Get(), err)
	fmt.Println("fetches:", calls)
	// Output:
	// first run: graph: node summarize: 503 Service Unavailable
	// resumed: 3 pages, 14 words <nil>
	// fetches: map[go.dev:1 go.dev/blog:2 pkg.go.dev:1]
}

// Review is the state of the fan-out example.
type Review struct {
	Draft state.Value[string]
	Notes state.Append[string]
}

// A fan-out to named nodes rather than to one node many times: the router
// picks the reviewers a draft needs, they run in one step, and "publish"
// runs once after them (an edge from each; a join, AddJoin, would also
// wait for reviewers that finish in different steps).
func Example_fanOut() {
	b := graph.New[Review]()
	b.AddNode("write", func(ctx context.Context, r Review) (Review, error) {
		return Review{}, nil
	})
	b.AddMultiConditionalEdges("write", func(ctx context.Context, r Review) ([]string, error) {
		reviewers := []string{"style"}
		if strings.Contains(r.Draft.Get(), "contract") {
			reviewers = append(reviewers, "legal")
		}
		return reviewers, nil
	}, graph.WithDestinations("style", "legal"))
	for _, name := range []string{"style", "legal"} {
		b.AddNode(name, func(ctx context.Context, r Review) (Review, error) {
			return Review{Notes: state.Items(name + " ok")}, nil
		})
		b.AddEdge(name, "publish")
	}
	b.AddNode("publish", func(ctx context.Context, r Review) (Review, error) {
		return Review{Notes: state.Items("published")}, nil
	})
	b.AddEdge(graph.Start, "write")
	g, err := b.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, draft := range []string{"a blog post", "a contract"} {
		out, err := g.Invoke(context.Background(), Review{Draft: state.Set(draft)})
		fmt.Println(draft+":", out.Notes.Get(), err)
	}
	// Output:
	// a blog post: [style ok published] <nil>
	// a contract: [legal ok style ok published] <nil>
}
