package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/tools/mcp"
)

// serverEnv makes the test binary run as the stdio MCP test server.
const serverEnv = "AGENTGRAPH_MCP_TEST_SERVER"

// Variables that change how the stdio test server behaves.
const (
	// stubbornEnv: ignore SIGTERM, and keep running after stdin is closed.
	stubbornEnv = "AGENTGRAPH_MCP_TEST_STUBBORN"
	// childEnv: start a child process that runs until killed, and print
	// "pids: <server> <child>" on stderr.
	childEnv = "AGENTGRAPH_MCP_TEST_CHILD"
	// sleeperEnv: run until killed (the child of childEnv).
	sleeperEnv = "AGENTGRAPH_MCP_TEST_SLEEPER"
	// crashEnv: print "boom" on stderr and exit with status 7 at once.
	crashEnv = "AGENTGRAPH_MCP_TEST_CRASH"
	// muteEnv: read standard input and never answer, not even the
	// initialize request.
	muteEnv = "AGENTGRAPH_MCP_TEST_MUTE"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(crashEnv) == "1":
		fmt.Fprintln(os.Stderr, "boom")
		os.Exit(7)
	case os.Getenv(muteEnv) == "1":
		_, _ = io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour)
		os.Exit(0)
	case os.Getenv(sleeperEnv) == "1":
		time.Sleep(time.Hour)
		os.Exit(0)
	case os.Getenv(serverEnv) == "1":
		os.Exit(runStdioServer())
	}
	os.Exit(m.Run())
}

func runStdioServer() int {
	stubborn := os.Getenv(stubbornEnv) == "1"
	if stubborn {
		signal.Ignore(syscall.SIGTERM)
	}
	if os.Getenv(childEnv) == "1" {
		child := exec.Command(os.Args[0], "-test.run=^$")
		child.Env = append(os.Environ(), serverEnv+"=0", sleeperEnv+"=1")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "pids: %d %d\n", os.Getpid(), child.Process.Pid)
	}
	s := newTestServer(&serverHooks{stdio: true})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		return 1
	}
	if stubborn {
		time.Sleep(time.Hour)
	}
	return 0
}

// fileText is the file the read_file tool returns: 5,998 characters over
// 95 lines with quotes and tabs, which JSON escapes.
var fileText = func() string {
	var b strings.Builder
	for i := 1; b.Len() < 5998-70; i++ {
		fmt.Fprintf(&b, "line %02d:\t\"quoted\" text of a source file, padded to length %s\n", i, strings.Repeat("-", 8))
	}
	return b.String() + strings.Repeat("x", 5998-b.Len())
}()

// serverHooks let in-process tests see what the server does.
type serverHooks struct {
	stdio bool // running as a subprocess: "die" exits, "block" reports on stderr

	once      sync.Once
	started   chan struct{} // closed when "block" starts (in-process only)
	cancelled chan struct{} // closed when "block" sees its context done (in-process only)
}

func newHooks() *serverHooks {
	return &serverHooks{started: make(chan struct{}), cancelled: make(chan struct{})}
}

type addIn struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

type addOut struct {
	Sum int `json:"sum"`
}

type hugeIn struct {
	N int `json:"n" jsonschema:"how many characters to return"`
}

type echoIn struct {
	Message string `json:"message" jsonschema:"the text to echo"`
}

// newTestServer is the MCP server the tests talk to. Its page size is 2, so
// that listing its tools takes several pages.
func newTestServer(h *serverHooks) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "testsrv", Version: "v1.0.0"},
		&sdk.ServerOptions{PageSize: 2, Instructions: "Use add for sums."})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two integers."},
		func(ctx context.Context, req *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo a message."},
		func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Message}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "huge", Description: "Returns n characters: a, then x, then z."},
		func(ctx context.Context, req *sdk.CallToolRequest, in hugeIn) (*sdk.CallToolResult, any, error) {
			text := "a" + strings.Repeat("x", max(in.N-2, 0)) + "z"
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("disk is full")
		})
	s.AddTool(&sdk.Tool{Name: "mixed", Description: "Returns every kind of content.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{
				Content: []sdk.Content{
					&sdk.TextContent{Text: "here you are"},
					&sdk.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
					&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte{1, 2}},
					&sdk.ResourceLink{URI: "file:///notes.txt", Name: "notes"},
					&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.txt", Text: "embedded text"}},
					&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b.bin", MIMEType: "application/octet-stream", Blob: []byte{9, 9, 9, 9}}},
				},
				StructuredContent: map[string]any{"count": 6},
			}, nil
		})
	s.AddTool(&sdk.Tool{Name: "structured_only", Description: "Returns structured content only.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"ok": true, "n": 2}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "read_file", Description: "Returns a file as text and as structured content, as server-filesystem does.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fileText}}, StructuredContent: map[string]any{"content": fileText}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "block", Description: "Blocks until cancelled.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if h.stdio {
				fmt.Fprintln(os.Stderr, "block: started")
			} else {
				close(h.started)
			}
			<-ctx.Done()
			if !h.stdio {
				close(h.cancelled)
			}
			return nil, ctx.Err()
		})
	if h.stdio {
		s.AddTool(&sdk.Tool{Name: "die", Description: "Exits the server process.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				fmt.Fprintln(os.Stderr, "fatal: out of coffee")
				os.Exit(3)
				return nil, nil
			})
		s.AddTool(&sdk.Tool{Name: "env", Description: "Returns an environment variable.", InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				var in struct{ Name string }
				if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
					return nil, err
				}
				v, ok := os.LookupEnv(in.Name)
				if !ok {
					v = "<unset>"
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: v}}}, nil
			})
		s.AddTool(&sdk.Tool{Name: "cwd", Description: "Returns the working directory.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				dir, err := os.Getwd()
				if err != nil {
					return nil, err
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: dir}}}, nil
			})
	}
	s.AddResource(&sdk.Resource{URI: "file:///notes.txt", Name: "notes", MIMEType: "text/plain"},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "buy milk"}}}, nil
		})
	s.AddResource(&sdk.Resource{URI: "file:///logo.png", Name: "logo", MIMEType: "image/png"},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "image/png", Blob: []byte{1, 2, 3, 4, 5}}}}, nil
		})
	return s
}

// startHTTP serves s over streamable HTTP and returns its URL.
func startHTTP(t testing.TB, s *sdk.Server) string {
	t.Helper()
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// startHTTPB serves a fresh test server over streamable HTTP.
func startHTTPB(b *testing.B) string { return startHTTP(b, newTestServer(newHooks())) }

// connectStdio starts the test binary as the stdio server.
func connectStdio(t *testing.T, opts ...mcp.Option) *mcp.Session {
	t.Helper()
	// A test binary built with -race sleeps 1 s on exit unless told not to.
	opts = append([]mcp.Option{mcp.WithEnv(serverEnv+"=1", "GORACE=atexit_sleep_ms=0")}, opts...)
	s, err := mcp.ConnectStdio(context.Background(), os.Args[0], []string{"-test.run=^$"}, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// connectHTTP serves a fresh test server with hooks h over HTTP and
// connects to it.
func connectHTTP(t *testing.T, h *serverHooks, opts ...mcp.Option) *mcp.Session {
	t.Helper()
	url := startHTTP(t, newTestServer(h))
	s, err := mcp.ConnectHTTP(context.Background(), url, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// transports runs f as a subtest over each transport.
func transports(t *testing.T, f func(t *testing.T, s *mcp.Session)) {
	t.Run("stdio", func(t *testing.T) { f(t, connectStdio(t)) })
	t.Run("http", func(t *testing.T) { f(t, connectHTTP(t, newHooks())) })
}
