package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/tools"
	"github.com/agentgraph/agentgraph/tools/mcp"
)

func toolByName(t *testing.T, ts []tools.Tool, name string) tools.Tool {
	t.Helper()
	for _, tool := range ts {
		if tool.Name() == name {
			return tool
		}
	}
	require.Failf(t, "tool not found", "%s", name)
	return nil
}

func TestToolsListsEveryPageWithSchemas(t *testing.T) {
	transports(t, func(t *testing.T, s *mcp.Session) {
		ts, err := s.Tools(context.Background())
		require.NoError(t, err)
		var names []string
		for _, tool := range ts {
			names = append(names, tool.Name())
		}
		// The server's page size is 2: these come from several pages.
		require.Subset(t, names, []string{"add", "echo", "fail", "mixed", "structured_only", "block"})

		add := toolByName(t, ts, "add")
		require.Equal(t, "Add two integers.", add.Description())
		var schema map[string]any
		require.NoError(t, json.Unmarshal(add.Parameters(), &schema))
		want := map[string]any{
			"type": "object",
			"properties": map[string]any{
				"a": map[string]any{"type": "integer", "description": "the first addend"},
				"b": map[string]any{"type": "integer", "description": "the second addend"},
			},
			"required":             []any{"a", "b"},
			"additionalProperties": false,
		}
		if diff := cmp.Diff(want, schema); diff != "" {
			t.Errorf("schema mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestToolsAreNamedWithThePrefix(t *testing.T) {
	s := connectHTTP(t, newHooks(), mcp.WithToolPrefix("srv__"))
	ts, err := s.Tools(context.Background())
	require.NoError(t, err)
	add := toolByName(t, ts, "srv__add")
	out, err := add.Call(context.Background(), json.RawMessage(`{"a":1,"b":2}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"sum":3}`, out)
}

func TestParametersReturnsACopy(t *testing.T) {
	s := connectHTTP(t, newHooks())
	ts, err := s.Tools(context.Background())
	require.NoError(t, err)
	add := toolByName(t, ts, "add")
	p := add.Parameters()
	before := bytes.Clone(p)
	p[0] = 'X'
	require.Equal(t, before, []byte(add.Parameters()))
}

func TestCallReturnsTheResult(t *testing.T) {
	transports(t, func(t *testing.T, s *mcp.Session) {
		ts, err := s.Tools(context.Background())
		require.NoError(t, err)
		out, err := toolByName(t, ts, "add").Call(context.Background(), json.RawMessage(`{"a":40,"b":2}`))
		require.NoError(t, err)
		// The typed tool returns its output as JSON text and as structured
		// content; the model gets the text only.
		require.JSONEq(t, `{"sum":42}`, out)

		out, err = s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"hi there"}`))
		require.NoError(t, err)
		require.Equal(t, "hi there", out)
	})
}

func TestCallDescribesNonTextContent(t *testing.T) {
	transports(t, func(t *testing.T, s *mcp.Session) {
		out, err := s.CallTool(context.Background(), "mixed", nil)
		require.NoError(t, err)
		want := strings.Join([]string{
			"here you are",
			"[image: image/png, 3 bytes]",
			"[audio: audio/wav, 2 bytes]",
			"[resource link: file:///notes.txt (notes)]",
			"embedded text",
			"[blob: file:///b.bin, application/octet-stream, 4 bytes]",
		}, "\n")
		require.Equal(t, want, out)
	})
}

func TestCallReturnsStructuredContentAsJSON(t *testing.T) {
	s := connectHTTP(t, newHooks())
	out, err := s.CallTool(context.Background(), "structured_only", json.RawMessage(`null`))
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":true,"n":2}`, out)
}

func TestToolErrorIsAToolErrorWithTheServersMessage(t *testing.T) {
	transports(t, func(t *testing.T, s *mcp.Session) {
		ts, err := s.Tools(context.Background())
		require.NoError(t, err)
		_, err = toolByName(t, ts, "fail").Call(context.Background(), nil)
		var te *mcp.ToolError
		require.ErrorAs(t, err, &te)
		require.Equal(t, "disk is full", err.Error())
		require.Equal(t, "fail", te.Tool)
		require.Equal(t, "testsrv", te.Server)
		var rpc *mcp.RPCError
		require.False(t, errors.As(err, &rpc), "a tool error is not a protocol error")
	})
}

func TestUnknownToolIsAnRPCError(t *testing.T) {
	transports(t, func(t *testing.T, s *mcp.Session) {
		_, err := s.CallTool(context.Background(), "nope", nil)
		var rpc *mcp.RPCError
		require.ErrorAs(t, err, &rpc)
		require.Equal(t, int64(jsonrpc.CodeInvalidParams), rpc.Code)
		require.Contains(t, rpc.Message, `unknown tool "nope"`)
		require.Equal(t, "tools/call nope", rpc.Method)
		require.Equal(t, `mcp server testsrv: tools/call nope: unknown tool "nope" (code -32602)`, err.Error())
		var te *mcp.ToolError
		require.False(t, errors.As(err, &te), "a protocol error is not a tool error")
	})
}

func TestBadArgumentsAreArgumentErrors(t *testing.T) {
	s := connectHTTP(t, newHooks())
	ts, err := s.Tools(context.Background())
	require.NoError(t, err)
	add := toolByName(t, ts, "add")
	for _, tc := range []struct {
		name string
		args string
	}{
		{"invalid JSON", `{"a":1,`},
		{"an array", `[1,2]`},
		{"a string", `"a=1"`},
		{"a number", `42`},
		{"two values", `{"a":1} {"b":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := add.Call(context.Background(), json.RawMessage(tc.args))
			var ae *tools.ArgumentError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, "add", ae.Tool)
		})
	}
}

func TestArgumentsFailingTheServersSchemaAreToolErrors(t *testing.T) {
	// The go-sdk server validates arguments against the schema and reports
	// a mismatch as an error result, which the model can read and correct.
	s := connectHTTP(t, newHooks())
	_, err := s.CallTool(context.Background(), "add", json.RawMessage(`{"a":"one","b":2}`))
	var te *mcp.ToolError
	require.ErrorAs(t, err, &te)
	require.Contains(t, te.Message, "a")
}

func TestCancellationStopsTheCallOnBothSides(t *testing.T) {
	h := newHooks()
	s := connectHTTP(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, "block", nil)
		errc <- err
	}()
	<-h.started
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	<-h.cancelled // the server was told, and its handler's context ended

	// The session still works.
	out, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"still here"}`))
	require.NoError(t, err)
	require.Equal(t, "still here", out)
}

// lineWatcher is an io.Writer that reports when a line containing want is
// written.
type lineWatcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	once sync.Once
	seen chan struct{}
}

func newLineWatcher(want string) *lineWatcher {
	return &lineWatcher{want: want, seen: make(chan struct{})}
}

func (w *lineWatcher) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(b), nil
}

func TestCancellationOverStdio(t *testing.T) {
	w := newLineWatcher("block: started")
	s := connectStdio(t, mcp.WithStderr(w))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, "block", nil)
		errc <- err
	}()
	<-w.seen
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	out, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"still here"}`))
	require.NoError(t, err)
	require.Equal(t, "still here", out)
}

func TestCallWithDoneContextDoesNotCallTheServer(t *testing.T) {
	s := connectHTTP(t, newHooks())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.CallTool(ctx, "echo", json.RawMessage(`{"message":"x"}`))
	require.ErrorIs(t, err, context.Canceled)
}

func TestServerProcessDyingIsAnExitError(t *testing.T) {
	s := connectStdio(t)
	_, err := s.CallTool(context.Background(), "die", nil)
	require.ErrorIs(t, err, mcp.ErrConnectionClosed)
	var exit *mcp.ExitError
	require.ErrorAs(t, err, &exit)
	var status *exec.ExitError
	require.ErrorAs(t, exit.Err, &status)
	require.Equal(t, 3, status.ExitCode())
	require.Contains(t, exit.Stderr, "fatal: out of coffee")
	require.Contains(t, err.Error(), "out of coffee")

	// Later calls fail at once, and Close does not hang.
	_, err = s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"x"}`))
	require.ErrorIs(t, err, mcp.ErrConnectionClosed)
	require.NoError(t, s.Close())
}

func TestCallsAfterCloseFail(t *testing.T) {
	transports(t, func(t *testing.T, s *mcp.Session) {
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "Close is idempotent")
		_, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"x"}`))
		require.ErrorIs(t, err, mcp.ErrConnectionClosed)
	})
}

func TestReadResource(t *testing.T) {
	transports(t, func(t *testing.T, s *mcp.Session) {
		out, err := s.ReadResource(context.Background(), "file:///notes.txt")
		require.NoError(t, err)
		require.Equal(t, "buy milk", out)

		out, err = s.ReadResource(context.Background(), "file:///logo.png")
		require.NoError(t, err)
		require.Equal(t, "[blob: file:///logo.png, image/png, 5 bytes]", out)

		_, err = s.ReadResource(context.Background(), "file:///missing.txt")
		var rpc *mcp.RPCError
		require.ErrorAs(t, err, &rpc)
		require.Equal(t, int64(sdk.CodeResourceNotFound), rpc.Code)
	})
}

func TestListResources(t *testing.T) {
	s := connectHTTP(t, newHooks())
	rs, err := s.ListResources(context.Background())
	require.NoError(t, err)
	want := []mcp.ResourceInfo{
		{URI: "file:///logo.png", Name: "logo", MIMEType: "image/png"},
		{URI: "file:///notes.txt", Name: "notes", MIMEType: "text/plain"},
	}
	if diff := cmp.Diff(want, rs); diff != "" {
		t.Errorf("resources mismatch (-want +got):\n%s", diff)
	}
}

func TestSessionNameAndInstructionsComeFromTheServer(t *testing.T) {
	s := connectHTTP(t, newHooks())
	require.Equal(t, "testsrv", s.Name())
	require.Equal(t, "Use add for sums.", s.Instructions())
	named := connectHTTP(t, newHooks(), mcp.WithName("calc"))
	require.Equal(t, "calc", named.Name())
}

func TestRepeatingCursorIsAnError(t *testing.T) {
	srv := newTestServer(newHooks())
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if p, ok := req.GetParams().(*sdk.ListToolsParams); ok && p.Cursor == "again" {
				p.Cursor = "" // the server cannot decode the bogus cursor
			}
			res, err := next(ctx, method, req)
			if r, ok := res.(*sdk.ListToolsResult); ok && err == nil {
				r.NextCursor = "again"
			}
			return res, err
		}
	})
	s, err := mcp.ConnectHTTP(context.Background(), startHTTP(t, srv))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = s.Tools(context.Background())
	require.ErrorContains(t, err, `cursor "again" repeats`)
}

func TestStdioServerGetsOnlyTheBaseEnvironment(t *testing.T) {
	t.Setenv("AGENTGRAPH_TEST_SECRET", "s3cret")
	s := connectStdio(t, mcp.WithEnv("GIVEN=yes"))
	for _, tc := range []struct{ name, want string }{
		{"AGENTGRAPH_TEST_SECRET", "<unset>"},
		{"GIVEN", "yes"},
		{"PATH", os.Getenv("PATH")},
	} {
		out, err := s.CallTool(context.Background(), "env", json.RawMessage(`{"name":"`+tc.name+`"}`))
		require.NoError(t, err)
		require.Equal(t, tc.want, out, tc.name)
	}
}

func TestStdioServerInheritsTheEnvironmentWhenAsked(t *testing.T) {
	t.Setenv("AGENTGRAPH_TEST_SECRET", "s3cret")
	s := connectStdio(t, mcp.WithInheritEnv())
	out, err := s.CallTool(context.Background(), "env", json.RawMessage(`{"name":"AGENTGRAPH_TEST_SECRET"}`))
	require.NoError(t, err)
	require.Equal(t, "s3cret", out)
}

func TestStdioServerRunsInDir(t *testing.T) {
	dir := t.TempDir()
	s := connectStdio(t, mcp.WithDir(dir))
	out, err := s.CallTool(context.Background(), "cwd", nil)
	require.NoError(t, err)
	want, err := os.Stat(dir)
	require.NoError(t, err)
	got, err := os.Stat(out)
	require.NoError(t, err)
	require.True(t, os.SameFile(want, got), "cwd %s, want %s", out, dir)
}

func TestConnectStdioToAMissingCommandFails(t *testing.T) {
	_, err := mcp.ConnectStdio(context.Background(), "/nonexistent/mcp-server", nil)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestConnectStdioToAProgramThatExitsIsAnExitError(t *testing.T) {
	_, err := mcp.ConnectStdio(context.Background(), os.Args[0], []string{"-test.run=^$"},
		mcp.WithEnv(crashEnv+"=1", "GORACE=atexit_sleep_ms=0"))
	var exit *mcp.ExitError
	require.ErrorAs(t, err, &exit)
	var status *exec.ExitError
	require.ErrorAs(t, err, &status)
	require.Equal(t, 7, status.ExitCode())
	require.Equal(t, "boom\n", exit.Stderr)
}

func TestConnectStdioToANonMCPProgramFails(t *testing.T) {
	// The test binary without the server variable writes "PASS" on stdout,
	// and a warning on stderr, which the error reports.
	_, err := mcp.ConnectStdio(context.Background(), os.Args[0], []string{"-test.run=^$"},
		mcp.WithEnv("GORACE=atexit_sleep_ms=0"))
	require.ErrorContains(t, err, "invalid character 'P'")
	require.ErrorContains(t, err, "stderr: testing: warning: no tests to run")
}

func TestHTTPHeadersAreSent(t *testing.T) {
	srv := newTestServer(newHooks())
	var mu sync.Mutex
	var got []string
	handler := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		return srv
	}, nil)
	hs := httptest.NewServer(handler)
	t.Cleanup(hs.Close)
	rt := &countingTransport{base: http.DefaultTransport}
	s, err := mcp.ConnectHTTP(context.Background(), hs.URL,
		mcp.WithHTTPClient(&http.Client{Transport: rt}),
		mcp.WithHeader("Authorization", "Bearer t0ken"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"x"}`))
	require.NoError(t, err)
	require.Positive(t, rt.n.Load(), "the given client is used")
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, got)
	for _, h := range got {
		require.Equal(t, "Bearer t0ken", h)
	}
}

func TestConnectHTTPToANonMCPServerFails(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(hs.Close)
	_, err := mcp.ConnectHTTP(context.Background(), hs.URL)
	require.Error(t, err)
}

func TestConcurrentCalls(t *testing.T) {
	transports(t, func(t *testing.T, s *mcp.Session) {
		var wg sync.WaitGroup
		errs := make([]error, 16)
		outs := make([]string, 16)
		for i := range 16 {
			wg.Go(func() {
				outs[i], errs[i] = s.CallTool(context.Background(), "add", json.RawMessage(fmt.Sprintf(`{"a":%d,"b":1}`, i)))
			})
		}
		wg.Wait()
		for i := range 16 {
			require.NoError(t, errs[i])
			require.JSONEq(t, fmt.Sprintf(`{"sum":%d}`, i+1), outs[i])
		}
	})
}

func TestCloseEndsCallsInProgress(t *testing.T) {
	// Over stdio; over HTTP the go-sdk's Close waits (up to 5 s) for the
	// server to end the session, which a go-sdk server does only once its
	// handlers return.
	w := newLineWatcher("block: started")
	s := connectStdio(t, mcp.WithStderr(w))
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(context.Background(), "block", nil)
		errc <- err
	}()
	<-w.seen
	require.NoError(t, s.Close())
	err := <-errc
	require.ErrorIs(t, err, mcp.ErrConnectionClosed)
	require.NotErrorIs(t, err, context.Canceled)
}

func TestBadToolListsAreErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(r *sdk.ListToolsResult)
		want   string
	}{
		{"duplicate name", func(r *sdk.ListToolsResult) { r.Tools = append(r.Tools, r.Tools[0]) }, `tool "add" listed twice`},
		{"empty name", func(r *sdk.ListToolsResult) {
			r.Tools = append(r.Tools, &sdk.Tool{Name: "", InputSchema: map[string]any{"type": "object"}})
		}, "a tool has no name"},
		{"names that become the same", func(r *sdk.ListToolsResult) {
			r.Tools = append(r.Tools,
				&sdk.Tool{Name: "a.b", InputSchema: map[string]any{"type": "object"}},
				&sdk.Tool{Name: "a/b", InputSchema: map[string]any{"type": "object"}})
		}, `tools "a.b" and "a/b" are both named "a_b"`},
		{"schema of another type", func(r *sdk.ListToolsResult) {
			r.Tools = append(r.Tools, &sdk.Tool{Name: "s", InputSchema: map[string]any{"type": "string"}})
		}, `tool "s": input schema has type "string", want "object"`},
		{"schema of several types", func(r *sdk.ListToolsResult) {
			r.Tools = append(r.Tools, &sdk.Tool{Name: "s", InputSchema: map[string]any{"type": []any{"object", "null"}}})
		}, `tool "s": input schema has type ["object","null"], want "object"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTestServer(newHooks())
			srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
				return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
					res, err := next(ctx, method, req)
					if r, ok := res.(*sdk.ListToolsResult); ok && err == nil && len(r.Tools) > 0 {
						tc.change(r)
					}
					return res, err
				}
			})
			s, err := mcp.ConnectHTTP(context.Background(), startHTTP(t, srv))
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			_, err = s.Tools(context.Background())
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestHTTPServerGoneIsAnError(t *testing.T) {
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return newTestServer(newHooks()) }, nil))
	s, err := mcp.ConnectHTTP(context.Background(), hs.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	hs.CloseClientConnections()
	hs.Close()
	_, err = s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"x"}`))
	// A transport failure, neither a tool error nor an error response.
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	var te *mcp.ToolError
	require.False(t, errors.As(err, &te))
	var rpc *mcp.RPCError
	require.False(t, errors.As(err, &rpc))
}

func TestSessionOutlivesTheConnectContext(t *testing.T) {
	url := startHTTP(t, newTestServer(newHooks()))
	for _, tc := range []struct {
		name    string
		connect func(ctx context.Context) (*mcp.Session, error)
	}{
		{"stdio", func(ctx context.Context) (*mcp.Session, error) {
			return mcp.ConnectStdio(ctx, os.Args[0], []string{"-test.run=^$"}, mcp.WithEnv(serverEnv+"=1", "GORACE=atexit_sleep_ms=0"))
		}},
		{"http", func(ctx context.Context) (*mcp.Session, error) { return mcp.ConnectHTTP(ctx, url) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			s, err := tc.connect(ctx)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			cancel()
			out, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"alive"}`))
			require.NoError(t, err)
			require.Equal(t, "alive", out)
		})
	}
}

type countingTransport struct {
	base http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(req)
}

func TestConnectOverAnyTransport(t *testing.T) {
	ct, st := sdk.NewInMemoryTransports()
	srv := newTestServer(newHooks())
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })

	s, err := mcp.Connect(context.Background(), ct, mcp.WithClientInfo("codur", "v9"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	out, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"in memory"}`))
	require.NoError(t, err)
	require.Equal(t, "in memory", out)
	info := ss.InitializeParams().ClientInfo
	require.Equal(t, "codur", info.Name)
	require.Equal(t, "v9", info.Version)
}

func TestHeadersAreNotSentToAnotherOrigin(t *testing.T) {
	srv := newTestServer(newHooks())
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("Authorization"))
		mu.Unlock()
		return srv
	}, nil))
	t.Cleanup(other.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)

	s, err := mcp.ConnectHTTP(context.Background(), redirector.URL, mcp.WithHeader("Authorization", "Bearer t0ken"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, leaked, "the redirect was followed")
	for _, h := range leaked {
		require.Empty(t, h)
	}
}

func TestToolsAreMadeAcceptableToModelProviders(t *testing.T) {
	srv := newTestServer(newHooks())
	long := strings.Repeat("x", 80)
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/call" {
				// Answer for the odd names, which the server does not know.
				if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok && (p.Name == "files.read" || p.Name == long) {
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "called " + p.Name[:10]}}}, nil
				}
			}
			res, err := next(ctx, method, req)
			if r, ok := res.(*sdk.ListToolsResult); ok && err == nil {
				if p, _ := req.GetParams().(*sdk.ListToolsParams); p == nil || p.Cursor == "" {
					r.Tools = append(r.Tools,
						&sdk.Tool{Name: "files.read", InputSchema: map[string]any{"properties": map[string]any{}}},
						&sdk.Tool{Name: long, InputSchema: map[string]any{"type": "object"}})
				}
			}
			return res, err
		}
	})
	s, err := mcp.ConnectHTTP(context.Background(), startHTTP(t, srv))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ts, err := s.Tools(context.Background())
	require.NoError(t, err)

	_, err = tools.NewSet(ts...)
	require.NoError(t, err, "tools.Set accepts every name and schema")
	dotted := toolByName(t, ts, "files_read")
	require.JSONEq(t, `{"type":"object","properties":{}}`, string(dotted.Parameters()))
	out, err := dotted.Call(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, "called files.read", out)

	cut := toolByName(t, ts, strings.Repeat("x", 64))
	out, err = cut.Call(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, "called xxxxxxxxxx", out)
}

func TestServerWithoutResourcesListsNone(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "bare", Version: "v1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echo a message."},
		func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Message}}}, nil, nil
		})
	s, err := mcp.ConnectHTTP(context.Background(), startHTTP(t, srv))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	rs, err := s.ListResources(context.Background())
	require.NoError(t, err)
	require.Empty(t, rs)

	list := genericTools(t, s)[mcp.ListToolsName]
	out, err := list.Call(context.Background(), nil)
	require.NoError(t, err)
	require.NotContains(t, out, `"resources"`)
	require.NotContains(t, out, `"instructions"`)
	require.Contains(t, out, `"echo"`)
}

func TestFirstCallAfterAnOversizedReplyIsConnectionClosed(t *testing.T) {
	for name, opts := range map[string][]mcp.Option{
		"server exits on EOF": nil,
		// Its shutdown outlasts the wait for the connection to end: the
		// call must not depend on the server being gone.
		"server ignores EOF and SIGTERM": {mcp.WithEnv(stubbornEnv + "=1"), mcp.WithTerminateTimeout(1500 * time.Millisecond)},
	} {
		t.Run(name, func(t *testing.T) {
			// Sixteen MiB under -race on a loaded machine can take minutes:
			// this test is about the size, not the call time limit.
			s := connectStdio(t, append(opts, mcp.WithCallTimeout(time.Hour))...)
			// One byte over the go-sdk's 16 MiB line limit of the stdio transport.
			_, err := s.CallTool(context.Background(), "huge", json.RawMessage(`{"n":16777217}`))
			require.ErrorIs(t, err, mcp.ErrConnectionClosed)
			require.ErrorContains(t, err, "maximum line length")
			_, err = s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"x"}`))
			require.ErrorIs(t, err, mcp.ErrConnectionClosed)
		})
	}
}

func TestToolResultsAreCutToTheOutputLimit(t *testing.T) {
	transports(t, func(t *testing.T, s *mcp.Session) {
		ts, err := s.Tools(context.Background())
		require.NoError(t, err)
		out, err := toolByName(t, ts, "huge").Call(context.Background(), json.RawMessage(`{"n":1000000}`))
		require.NoError(t, err)
		marker := "\n[... 992000 chars truncated ...]\n"
		require.Equal(t, "a"+strings.Repeat("x", tools.DefaultOutputLimit/2-1)+marker+strings.Repeat("x", tools.DefaultOutputLimit/2-1)+"z", out)
	})
}

func TestWithOutputLimitSetsTheLimit(t *testing.T) {
	s := connectHTTP(t, newHooks(), mcp.WithOutputLimit(10))
	out, err := s.CallTool(context.Background(), "huge", json.RawMessage(`{"n":100}`))
	require.NoError(t, err)
	require.Equal(t, "axxxx\n[... 90 chars truncated ...]\nxxxxz", out)
	out, err = s.CallTool(context.Background(), "huge", json.RawMessage(`{"n":10}`))
	require.NoError(t, err)
	require.Equal(t, "axxxxxxxxz", out, "a result at the limit is whole")
	out, err = s.ReadResource(context.Background(), "file:///notes.txt")
	require.NoError(t, err)
	require.Equal(t, "buy milk", out)
	generic := genericTools(t, s)
	out, err = generic[mcp.CallToolName].Call(context.Background(), json.RawMessage(`{"tool":"huge","arguments":{"n":100}}`))
	require.NoError(t, err)
	require.Equal(t, "axxxx\n[... 90 chars truncated ...]\nxxxxz", out)
}

func TestOversizedJSONReplyOverHTTPIsConnectionClosed(t *testing.T) {
	srv := newTestServer(newHooks())
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{JSONResponse: true}))
	t.Cleanup(hs.Close)
	s, err := mcp.ConnectHTTP(context.Background(), hs.URL, mcp.WithCallTimeout(time.Hour)) // about the size, not the time limit
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	out, err := s.CallTool(context.Background(), "huge", json.RawMessage(`{"n":10}`))
	require.NoError(t, err)
	require.Equal(t, "axxxxxxxxz", out)
	_, err = s.CallTool(context.Background(), "huge", json.RawMessage(fmt.Sprintf(`{"n":%d}`, mcp.MaxJSONReply)))
	require.ErrorIs(t, err, mcp.ErrConnectionClosed)
	require.ErrorContains(t, err, fmt.Sprintf("reply larger than %d bytes", mcp.MaxJSONReply))
}

func TestOversizedEventOverHTTPIsConnectionClosed(t *testing.T) {
	// The go-sdk's server answers with server-sent events by default; a
	// reply event larger than sdk.DefaultMaxEventSize must not be read.
	s := connectHTTP(t, newHooks(), mcp.WithCallTimeout(time.Hour)) // about the size, not the time limit
	out, err := s.CallTool(context.Background(), "huge", json.RawMessage(`{"n":10}`))
	require.NoError(t, err)
	require.Equal(t, "axxxxxxxxz", out)
	_, err = s.CallTool(context.Background(), "huge", json.RawMessage(fmt.Sprintf(`{"n":%d}`, sdk.DefaultMaxEventSize)))
	require.ErrorIs(t, err, mcp.ErrConnectionClosed)
}

// stallingTransport holds every request until release is closed or the
// request's context ends, and counts the cancellation notices that gave up.
type stallingTransport struct {
	arrived      chan struct{} // closed at the first request
	release      chan struct{}
	once         sync.Once
	noticeGaveUp atomic.Int32
}

func (st *stallingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	st.once.Do(func() { close(st.arrived) })
	select {
	case <-st.release:
		return nil, errors.New("released")
	case <-req.Context().Done():
		if bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
			st.noticeGaveUp.Add(1)
		}
		return nil, req.Context().Err()
	}
}

func TestConnectHTTPReturnsWhenTheContextEnds(t *testing.T) {
	// A server that never answers: once ctx ends, the go-sdk sends it a
	// cancellation notice, which stalls too; ConnectHTTP must return
	// without waiting for that notice to be delivered or given up.
	st := &stallingTransport{arrived: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(st.release) })
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := mcp.ConnectHTTP(ctx, "http://mcp.invalid/mcp", mcp.WithHTTPClient(&http.Client{Transport: st}))
		errc <- err
	}()
	<-st.arrived
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.Zero(t, st.noticeGaveUp.Load(), "ConnectHTTP waited for the cancellation notice")
}

func TestToolDescriptionsAreCutToTheOutputLimit(t *testing.T) {
	// A server's description goes to the model with every call: a huge one
	// must not fill its context.
	srv := newTestServer(newHooks())
	srv.AddTool(&sdk.Tool{Name: "verbose", Title: strings.Repeat("t", 50), Description: "d" + strings.Repeat("x", 100) + "z",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	s, err := mcp.ConnectHTTP(context.Background(), startHTTP(t, srv), mcp.WithOutputLimit(10))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ts, err := s.Tools(context.Background())
	require.NoError(t, err)
	require.Equal(t, "dxxxx\n[... 92 chars truncated ...]\nxxxxz", toolByName(t, ts, "verbose").Description())
	infos, err := s.ListTools(context.Background())
	require.NoError(t, err)
	titles := map[string]string{}
	for _, info := range infos {
		titles[info.Name] = info.Title
	}
	require.Equal(t, "ttttt\n[... 40 chars truncated ...]\nttttt", titles["verbose"])
	out, err := genericTools(t, s)[mcp.ListToolsName].Call(context.Background(), nil)
	require.NoError(t, err)
	require.NotContains(t, out, strings.Repeat("x", 11))
}
