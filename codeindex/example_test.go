package codeindex_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentgraph/agentgraph/codeindex"
)

func Example() {
	ctx := context.Background()
	root, err := os.MkdirTemp("", "codeindex-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	src := `package auth

// CheckPassword compares a password with its stored hash.
func CheckPassword(hash, password string) bool { return hash == password }

// Session is a logged-in user.
type Session struct{ User string }
`
	if err := os.WriteFile(filepath.Join(root, "auth.go"), []byte(src), 0o644); err != nil {
		log.Fatal(err)
	}

	// The index lives in root/.coderag; vectors come from the offline
	// hashing embedder unless WithEmbedder says otherwise.
	ix, err := codeindex.Open(ctx, root)
	if err != nil {
		log.Fatal(err)
	}
	defer ix.Close()
	st, err := ix.Update(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("indexed %d file, %d chunks\n", st.Files, st.Chunks)

	hits, err := ix.Search(ctx, "check password", codeindex.WithMode(codeindex.BM25), codeindex.WithLimit(1))
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range hits {
		fmt.Printf("%s:%d-%d %s\n", h.Path, h.StartLine, h.EndLine, h.Symbol)
	}
	// Output:
	// indexed 1 file, 3 chunks
	// auth.go:3-4 auth.CheckPassword
}
