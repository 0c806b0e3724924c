package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/agentgraph/agentgraph/llm"
)

func ExampleNewEmbedder() {
	// A stand-in for an OpenAI-compatible embeddings server (a local
	// vLLM or llama.cpp, say): every text gets [its length, 1].
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		data := []map[string]any{}
		for i, in := range req.Input {
			data = append(data, map[string]any{"index": i, "embedding": []float32{float32(len(in)), 1}})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data, "model": req.Model})
	}))
	defer srv.Close()

	e, err := llm.NewEmbedder("openai-compatible:bge-m3@"+srv.URL+"/v1", llm.WithEmbedBatchSize(64))
	if err != nil {
		fmt.Println(err)
		return
	}
	vecs, err := e.Embed(context.Background(), []string{"func main()", "package llm"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(vecs)

	_, err = llm.NewEmbedder("openai-compatible:bge-m3")
	fmt.Println(err)
	// Output:
	// [[11 1] [11 1]]
	// llm: embedder spec "openai-compatible:bge-m3": openai-compatible needs a base URL: "openai-compatible:<model>@<baseURL>" or llm.WithEmbedBaseURL
}
