package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgraph/agentgraph/tools"
)

// maxListPages bounds the pages of one listing, against a server whose
// cursors never end.
const maxListPages = 1000

// ErrConnectionClosed is returned (wrapped) by the calls of a session whose
// connection is closed: closed with [Session.Close], or ended by the server.
// It is the go-sdk's error, so errors.Is sees it through both packages.
var ErrConnectionClosed = sdk.ErrConnectionClosed

// Session is a connection to one MCP server, made with [ConnectStdio],
// [ConnectHTTP], [Connect] or [ServerConfig.Connect]. Its methods are safe
// for concurrent use.
type Session struct {
	name   string
	prefix string
	cs     *sdk.ClientSession
	proc   *process // nil unless the server is a subprocess
	limit  int      // characters of a result returned; see WithOutputLimit

	callTimeout time.Duration // see WithCallTimeout

	// lost is closed once the go-sdk's connection has ended, for whatever
	// reason: Close, the server hanging up, or an unreadable message.
	lost chan struct{}

	// closed is done once Close was called; calls in progress end then.
	closed context.Context
	close  context.CancelFunc

	closeOnce sync.Once
	closeErr  error
}

// errSessionClosed is the error of calls ended by Close.
var errSessionClosed = fmt.Errorf("session closed: %w", ErrConnectionClosed)

// begin returns the context of a call of method made with ctx: it ends
// when ctx does, when the session is closed, or at the call time limit
// (see [WithCallTimeout]), with a [*TimeoutError] as its cause. end
// releases it.
func (s *Session) begin(ctx context.Context, method string) (callCtx context.Context, end func()) {
	callCtx, cancelTimeout := context.WithTimeoutCause(ctx, s.callTimeout, &TimeoutError{Server: s.name, Method: method, Limit: s.callTimeout})
	callCtx, cancel := context.WithCancel(callCtx)
	stop := context.AfterFunc(s.closed, cancel)
	return callCtx, func() { stop(); cancel(); cancelTimeout() }
}

// TimeoutError reports an MCP server that did not answer in time: the
// initialize handshake within the connect time limit ([WithConnectTimeout])
// or a request within the call time limit ([WithCallTimeout]). The request
// is cancelled (the server is told). errors.Is(err,
// context.DeadlineExceeded) holds.
type TimeoutError struct {
	// Server names the server: the session's name, or the command or URL
	// when connecting.
	Server string
	// Method is the request: "initialize", "tools/call NAME", "tools/list" …
	Method string
	// Limit is the time limit.
	Limit time.Duration
}

// Error implements error.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("mcp server %s: no answer to %s within %s", e.Server, e.Method, e.Limit)
}

// Unwrap returns context.DeadlineExceeded.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// timedOut returns callCtx's *TimeoutError when the call ended at its time
// limit (and not because ctx, the caller's, ended).
func timedOut(ctx, callCtx context.Context) (*TimeoutError, bool) {
	var te *TimeoutError
	if ctx.Err() == nil && errors.As(context.Cause(callCtx), &te) {
		return te, true
	}
	return nil, false
}

// ToolError is the error result of a tool call: the server ran the tool and
// the tool failed (isError in the result). Its text is the server's message,
// for the model to read.
type ToolError struct {
	// Server is the name of the session.
	Server string
	// Tool is the server's name of the tool.
	Tool string
	// Message is the text of the result's content.
	Message string
}

// Error returns the server's message.
func (e *ToolError) Error() string { return e.Message }

// RPCError is an error response of the server to a request: a protocol
// error such as an unknown tool, invalid parameters, a missing resource or
// an internal error of the server, as opposed to a [*ToolError].
type RPCError struct {
	// Server is the name of the session.
	Server string
	// Method is the MCP method, e.g. "tools/call".
	Method string
	// Code is the JSON-RPC error code.
	Code int64
	// Message is the server's message.
	Message string
	err     error
}

// Error implements error.
func (e *RPCError) Error() string {
	return fmt.Sprintf("mcp server %s: %s: %s (code %d)", e.Server, e.Method, e.Message, e.Code)
}

// Unwrap returns the go-sdk's error.
func (e *RPCError) Unwrap() error { return e.err }

// Connect starts a session over t, any transport of the go-sdk (for
// example an in-memory one, or a transport of another package), and
// initializes it. Use [ConnectStdio] and [ConnectHTTP] for the usual
// transports.
func Connect(ctx context.Context, t sdk.Transport, opts ...Option) (*Session, error) {
	return connect(ctx, t, nil, newConfig(opts), "mcp")
}

// ConnectHTTP connects to the MCP server at url over the streamable HTTP
// transport and initializes the session. [WithHTTPClient] and [WithHeader]
// configure the HTTP requests.
func ConnectHTTP(ctx context.Context, url string, opts ...Option) (*Session, error) {
	cfg := newConfig(opts)
	client := cfg.httpClient
	if client == nil {
		client = http.DefaultClient
	}
	c := *client
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if len(cfg.header) > 0 {
		u, err := neturl.Parse(url)
		if err != nil {
			return nil, fmt.Errorf("mcp: connect to %s: %w", url, err)
		}
		base = &headerTransport{base: base, header: cfg.header.Clone(), scheme: u.Scheme, host: u.Host}
	}
	c.Transport = &replyLimitTransport{base: base, max: MaxJSONReply}
	client = &c
	// MaxEventSize is set explicitly: the go-sdk's streamable client reads
	// its zero value as no limit at all, not as DefaultMaxEventSize.
	t := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: client, MaxEventSize: sdk.DefaultMaxEventSize}
	s, err := connect(ctx, t, nil, cfg, url)
	if err != nil {
		return nil, fmt.Errorf("mcp: connect to %s: %w", url, err)
	}
	return s, nil
}

// connect initializes a session over t within the connect time limit;
// server names the server in a *TimeoutError.
func connect(ctx context.Context, t sdk.Transport, proc *process, cfg *config, server string) (*Session, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: cfg.clientName, Version: cfg.clientVer}, nil)
	if cfg.name != "" {
		server = cfg.name
	}
	parent := ctx
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.connectTimeout, &TimeoutError{Server: server, Method: "initialize", Limit: cfg.connectTimeout})
	defer cancel()
	cs, err := connectClient(ctx, client, t)
	if err != nil {
		if ctxErr := parent.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	s := &Session{name: cfg.name, prefix: cfg.prefix, cs: cs, proc: proc, limit: cfg.outputLimit, callTimeout: cfg.callTimeout, lost: make(chan struct{})}
	s.closed, s.close = context.WithCancel(context.Background())
	go func() {
		_ = cs.Wait()
		close(s.lost)
	}()
	if s.name == "" {
		if res := cs.InitializeResult(); res != nil && res.ServerInfo != nil {
			s.name = res.ServerInfo.Name
		}
	}
	if s.name == "" {
		s.name = "mcp"
	}
	return s, nil
}

// connectClient connects client over t, returning as soon as ctx ends. The
// go-sdk's Connect does not: once ctx ends it tells the server that the
// initialize request is cancelled and, on failing, waits for that notice to
// be delivered — up to 5 s over HTTP to a server that does not answer. That
// wait then finishes in the background, and a session that connects anyway
// is closed.
func connectClient(ctx context.Context, client *sdk.Client, t sdk.Transport) (*sdk.ClientSession, error) {
	type result struct {
		cs  *sdk.ClientSession
		err error
	}
	done := make(chan result, 1)
	go func() {
		cs, err := client.Connect(ctx, t, nil)
		done <- result{cs, err}
	}()
	select {
	case r := <-done:
		return r.cs, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.cs != nil {
				_ = r.cs.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// Name returns the session's name: the one given with [WithName], or else
// the server's own.
func (s *Session) Name() string { return s.name }

// Instructions returns the instructions the server gave when the session
// was initialized, often hints for the model ("" if none).
func (s *Session) Instructions() string {
	if res := s.cs.InitializeResult(); res != nil {
		return res.Instructions
	}
	return ""
}

// Close ends the session. For a stdio server it closes the server's
// standard input, waits for it to exit, and terminates its process group if
// it does not (see [WithTerminateTimeout]); for an HTTP server it ends the
// session on the server. Calls in progress fail. Close is idempotent and
// returns the same result every time; a stdio server that exits with a
// non-zero status after its input is closed is not an error.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		// End the calls in progress first: the go-sdk's Close waits for
		// them, and a tool may never return.
		s.close()
		err := s.cs.Close()
		if s.proc != nil {
			// The server's exit status is no error once the session is
			// closed on purpose; a server that cannot be stopped is.
			err = s.proc.closeErr()
		}
		if err != nil {
			s.closeErr = fmt.Errorf("mcp server %s: close: %w", s.name, err)
		}
	})
	return s.closeErr
}

// ToolInfo describes a tool of a server.
type ToolInfo struct {
	// Name is the server's name of the tool.
	Name string `json:"name"`
	// Title is the tool's display name ("" if none).
	Title string `json:"title,omitempty"`
	// Description says what the tool does.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON schema of the tool's arguments.
	InputSchema json.RawMessage `json:"input_schema"`
}

// ListTools lists the server's tools, following every page of the listing.
// Titles and descriptions are cut to the [WithOutputLimit] limit, since
// they are sent to the model with every call. Input schemas are whole.
func (s *Session) ListTools(ctx context.Context) ([]ToolInfo, error) {
	var infos []ToolInfo
	params := &sdk.ListToolsParams{}
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page == maxListPages {
			return nil, fmt.Errorf("mcp server %s: tools/list: more than %d pages", s.name, maxListPages)
		}
		callCtx, end := s.begin(ctx, "tools/list")
		res, err := s.cs.ListTools(callCtx, params)
		end()
		if err != nil {
			return nil, s.wrap(ctx, callCtx, "tools/list", err)
		}
		for _, t := range res.Tools {
			infos = append(infos, ToolInfo{
				Name:        t.Name,
				Title:       tools.Truncate(t.Title, s.limit),
				Description: tools.Truncate(t.Description, s.limit),
				InputSchema: schemaJSON(t.InputSchema),
			})
		}
		if res.NextCursor == "" {
			return infos, nil
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("mcp server %s: tools/list: cursor %q repeats", s.name, res.NextCursor)
		}
		seen[res.NextCursor] = true
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
}

// Tools lists the server's tools (every page) and returns them as
// [tools.Tool]s, named with the [WithToolPrefix] prefix. Their Parameters
// are the servers' input schemas ("type": "object" added when the server
// leaves it out); their Call calls the tool on the server through this
// session, under the server's own name (see [Session.CallTool] for how
// results and errors map).
//
// So that model providers accept the names, characters other than ASCII
// letters, digits, '_' and '-' become '_' ("files.read" is offered as
// "files_read") and names are cut to 64 bytes. A tool without a name, and
// two tools that end up with the same name, are an error; so is an input
// schema whose type is not "object" (the MCP specification requires it,
// and agents refuse such a tool, see [tools.Set.Add]).
func (s *Session) Tools(ctx context.Context) ([]tools.Tool, error) {
	infos, err := s.ListTools(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]tools.Tool, 0, len(infos))
	seen := map[string]string{} // tool name -> server's name
	for _, info := range infos {
		if info.Name == "" {
			return nil, fmt.Errorf("mcp server %s: a tool has no name", s.name)
		}
		name := toolName(s.prefix + info.Name)
		if other, dup := seen[name]; dup {
			if other == info.Name {
				return nil, fmt.Errorf("mcp server %s: tool %q listed twice", s.name, info.Name)
			}
			return nil, fmt.Errorf("mcp server %s: tools %q and %q are both named %q", s.name, other, info.Name, name)
		}
		if err := tools.CheckSchema(info.InputSchema); err != nil {
			return nil, fmt.Errorf("mcp server %s: tool %q: input %w", s.name, info.Name, err)
		}
		seen[name] = info.Name
		out = append(out, &remoteTool{s: s, info: info, name: name})
	}
	return out, nil
}

// maxToolName is the longest tool name model providers accept.
const maxToolName = 64

// toolName makes name acceptable to model providers (and to tools.Set):
// characters other than ASCII letters, digits, '_' and '-' become '_', and
// the name is cut to 64 bytes.
func toolName(name string) string {
	b := []byte(name)
	out := make([]byte, 0, len(b))
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			out = append(out, c)
		default:
			out = append(out, '_')
		}
	}
	if len(out) > maxToolName {
		out = out[:maxToolName]
	}
	return string(out)
}

// CallTool calls the server's tool name with args, a JSON object (empty or
// null means no arguments), and returns the result as text for a model, cut
// to the [WithOutputLimit] limit:
//
//   - text content is returned as is, several contents joined by newlines;
//   - other content is described, e.g. "[image: image/png, 1024 bytes]",
//     and an embedded text resource is given with its text;
//   - structured content is the result, as JSON, only when there is no
//     content: the model gets one representation, not the same data twice
//     (the specification has a tool that returns structured content also
//     give it as text).
//
// Arguments that are not a JSON object are a [*tools.ArgumentError]; a
// result marked as an error is a [*ToolError] with the server's message; an
// error response (an unknown tool, say) is an [*RPCError]; a stdio server
// that died is an [*ExitError] (with [ErrConnectionClosed]); a call that
// fails because the connection broke, e.g. on a reply over the stdio
// transport's 16 MiB limit, wraps [ErrConnectionClosed]; a done ctx
// returns ctx.Err() (and the server is told the call is cancelled); a
// call with no answer within the call time limit ([WithCallTimeout]) is a
// [*TimeoutError].
func (s *Session) CallTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	return s.callTool(ctx, name, name, args)
}

func (s *Session) callTool(ctx context.Context, shownName, name string, args json.RawMessage) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	obj, err := argumentObject(args)
	if err != nil {
		return "", &tools.ArgumentError{Tool: shownName, Err: err}
	}
	method := "tools/call " + name
	callCtx, end := s.begin(ctx, method)
	defer end()
	res, err := s.cs.CallTool(callCtx, &sdk.CallToolParams{Name: name, Arguments: obj})
	if err != nil {
		return "", s.wrap(ctx, callCtx, method, err)
	}
	text := tools.Truncate(resultText(res.Content, res.StructuredContent), s.limit)
	if res.IsError {
		if text == "" {
			text = fmt.Sprintf("tool %s failed without a message", name)
		}
		return "", &ToolError{Server: s.name, Tool: name, Message: text}
	}
	return text, nil
}

// ReadResource reads the resource at uri and returns its contents as text:
// text contents as they are, binary ones described ("[blob: uri, mime, N
// bytes]"), several joined by newlines, cut to the [WithOutputLimit] limit.
// A missing resource is an [*RPCError].
func (s *Session) ReadResource(ctx context.Context, uri string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	callCtx, end := s.begin(ctx, "resources/read "+uri)
	defer end()
	res, err := s.cs.ReadResource(callCtx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		return "", s.wrap(ctx, callCtx, "resources/read "+uri, err)
	}
	parts := make([]string, 0, len(res.Contents))
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		parts = append(parts, resourceText(c))
	}
	return tools.Truncate(strings.Join(parts, "\n"), s.limit), nil
}

// ResourceInfo describes a resource of a server.
type ResourceInfo struct {
	// URI identifies the resource.
	URI string `json:"uri"`
	// Name is the resource's name.
	Name string `json:"name,omitempty"`
	// Description says what the resource holds.
	Description string `json:"description,omitempty"`
	// MIMEType is the resource's media type ("" if unknown).
	MIMEType string `json:"mime_type,omitempty"`
}

// ListResources lists the server's resources, following every page of the
// listing. A server without resources returns none.
func (s *Session) ListResources(ctx context.Context) ([]ResourceInfo, error) {
	if res := s.cs.InitializeResult(); res != nil && res.Capabilities != nil && res.Capabilities.Resources == nil {
		return nil, nil
	}
	var infos []ResourceInfo
	params := &sdk.ListResourcesParams{}
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page == maxListPages {
			return nil, fmt.Errorf("mcp server %s: resources/list: more than %d pages", s.name, maxListPages)
		}
		callCtx, end := s.begin(ctx, "resources/list")
		res, err := s.cs.ListResources(callCtx, params)
		end()
		if err != nil {
			return nil, s.wrap(ctx, callCtx, "resources/list", err)
		}
		for _, r := range res.Resources {
			if r == nil {
				continue
			}
			infos = append(infos, ResourceInfo{URI: r.URI, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType})
		}
		if res.NextCursor == "" {
			return infos, nil
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("mcp server %s: resources/list: cursor %q repeats", s.name, res.NextCursor)
		}
		seen[res.NextCursor] = true
		params = &sdk.ListResourcesParams{Cursor: res.NextCursor}
	}
}

// wrap turns an error of the go-sdk, of a call made with callCtx under
// the caller's ctx, into this package's: a *TimeoutError when the call
// ended at its time limit, ctx's error when ctx is done, an *RPCError for
// an error response, and for a dead stdio server the connection error
// joined with an *ExitError.
func (s *Session) wrap(ctx, callCtx context.Context, method string, err error) error {
	if te, ok := timedOut(ctx, callCtx); ok {
		return te
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if s.closed.Err() != nil && !errors.Is(err, ErrConnectionClosed) {
		// Ended by Close: the go-sdk reports the call's own context error.
		return fmt.Errorf("mcp server %s: %s: %w", s.name, method, errSessionClosed)
	}
	var wire *jsonrpc.Error
	if errors.As(err, &wire) && !isTransportRejection(wire) {
		return &RPCError{Server: s.name, Method: method, Code: wire.Code, Message: tools.Truncate(wire.Message, s.limit), err: err}
	}
	if wire == nil && !errors.Is(err, ErrConnectionClosed) && s.connectionLost(ctx) {
		// The call failed because the connection broke (an unreadable or
		// oversized message, say): the go-sdk reports the reason to the
		// calls in flight and ErrConnectionClosed only to later ones.
		err = fmt.Errorf("%w: %w", ErrConnectionClosed, err)
	}
	if s.proc != nil {
		if exitErr := s.proc.exited(ctx, s.name); exitErr != nil {
			if !errors.Is(err, ErrConnectionClosed) {
				err = fmt.Errorf("%w: %w", ErrConnectionClosed, err)
			}
			return fmt.Errorf("%s: %w (%w)", method, exitErr, err)
		}
	}
	return fmt.Errorf("mcp server %s: %s: %w", s.name, method, err)
}

// connectionLost reports whether the session's connection has ended, by now
// or within exitWait (it ends just after the calls in flight are failed),
// or before ctx does. A stdio connection counts as ended once the server's
// shutdown has begun, which may take a while.
func (s *Session) connectionLost(ctx context.Context) bool {
	var stopped <-chan struct{}
	if s.proc != nil {
		stopped = s.proc.stopped
	}
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-s.lost:
		return true
	case <-stopped:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// isTransportRejection reports whether e is the go-sdk's marker of a request
// its transport could not deliver (an HTTP failure, say), rather than an
// error response of the server.
func isTransportRejection(e *jsonrpc.Error) bool {
	return e.Code == codeRejected && e.Message == "rejected by transport"
}

// codeRejected is the code of the go-sdk's jsonrpc2.ErrRejected.
const codeRejected = -32005

// argumentObject checks that raw is a JSON object ({} when empty or null).
func argumentObject(raw json.RawMessage) (json.RawMessage, error) {
	data := bytes.TrimSpace(raw)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if data[0] != '{' {
		return nil, errors.New("arguments must be a JSON object")
	}
	return json.RawMessage(data), nil
}

// emptySchema is the schema of a tool without one.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// schemaJSON encodes a tool's input schema as the client received it, with
// "type": "object" added when it is missing.
func schemaJSON(schema any) json.RawMessage {
	if schema == nil {
		return bytes.Clone(emptySchema)
	}
	b, err := json.Marshal(schema)
	if err != nil || len(b) == 0 || b[0] != '{' {
		return bytes.Clone(emptySchema)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return bytes.Clone(emptySchema)
	}
	if _, ok := m["type"]; !ok {
		m["type"] = json.RawMessage(`"object"`)
		if fixed, err := json.Marshal(m); err == nil {
			return fixed
		}
	}
	return b
}

// MaxJSONReply is the largest HTTP reply of type application/json a
// streamable HTTP session reads (the go-sdk would read it whole, whatever
// its size): 16 MiB, the go-sdk's limit of a message over stdio and of a
// server-sent event. A larger reply ends the connection.
const MaxJSONReply = 16 << 20

// errReplyTooLarge ends a JSON reply over MaxJSONReply bytes; the go-sdk
// passes on its text only.
var errReplyTooLarge = fmt.Errorf("mcp: reply larger than %d bytes", MaxJSONReply)

// replyLimitTransport cuts off the JSON replies larger than max bytes.
type replyLimitTransport struct {
	base http.RoundTripper
	max  int64
}

func (t *replyLimitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp == nil || resp.Body == nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.max}
	}
	return resp, nil
}

// limitedBody fails with errReplyTooLarge once more than left bytes are
// read.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		n, b.left = int(b.left), -1
		return n, errReplyTooLarge
	}
	b.left -= int64(n)
	return n, err
}

// headerTransport adds the WithHeader headers to the requests to the
// server's origin; not to other origins a redirect leads to, so that a
// server cannot redirect credentials elsewhere.
type headerTransport struct {
	base         http.RoundTripper
	header       http.Header
	scheme, host string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.EqualFold(req.URL.Scheme, t.scheme) || !strings.EqualFold(req.URL.Host, t.host) {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, vs := range t.header {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return t.base.RoundTrip(req)
}
