package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/agentgraph/agentgraph/tools/mcp"
)

// BenchmarkCallTool measures one tools/call round trip to the test server.
func BenchmarkCallTool(b *testing.B) {
	args := json.RawMessage(`{"a":1,"b":2}`)
	run := func(b *testing.B, s *mcp.Session) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.CallTool(context.Background(), "add", args); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("stdio", func(b *testing.B) {
		s, err := mcp.ConnectStdio(context.Background(), os.Args[0], []string{"-test.run=^$"}, mcp.WithEnv(serverEnv+"=1", "GORACE=atexit_sleep_ms=0"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		run(b, s)
	})
	b.Run("http", func(b *testing.B) {
		s, err := mcp.ConnectHTTP(context.Background(), startHTTPB(b))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		run(b, s)
	})
}

// BenchmarkConnectStdio measures starting the stdio server, initializing
// the session and closing it.
func BenchmarkConnectStdio(b *testing.B) {
	for b.Loop() {
		s, err := mcp.ConnectStdio(context.Background(), os.Args[0], []string{"-test.run=^$"}, mcp.WithEnv(serverEnv+"=1", "GORACE=atexit_sleep_ms=0"))
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
