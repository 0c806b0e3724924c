package mcp

import (
	"io"
	"net/http"
	"time"

	"github.com/agentgraph/agentgraph/tools"
)

// DefaultTerminateTimeout is how long Close waits for a stdio server to exit
// after its standard input was closed, and then again after SIGTERM, before
// killing it.
const DefaultTerminateTimeout = 5 * time.Second

// DefaultConnectTimeout bounds the connection and initialize handshake of
// a session (see [WithConnectTimeout]).
const DefaultConnectTimeout = 30 * time.Second

// DefaultCallTimeout bounds each request of a session — a tool call, a
// listing, a resource read (see [WithCallTimeout]): long enough for a
// tool that builds or tests, short enough that a hung server does not
// stall a run.
const DefaultCallTimeout = 5 * time.Minute

// Option configures a [Session]. The connect functions use the settings that
// apply to their transport and ignore the others.
type Option func(*config)

type config struct {
	name       string
	prefix     string
	clientName string
	clientVer  string

	outputLimit    int
	connectTimeout time.Duration
	callTimeout    time.Duration

	// stdio.
	env          []string
	inheritEnv   bool
	dir          string
	stderr       io.Writer
	terminate    time.Duration
	stderrTailSz int

	// streamable HTTP.
	httpClient *http.Client
	header     http.Header
}

func newConfig(opts []Option) *config {
	c := &config{
		clientName:     "agentgraph",
		clientVer:      "v0",
		terminate:      DefaultTerminateTimeout,
		outputLimit:    tools.DefaultOutputLimit,
		connectTimeout: DefaultConnectTimeout,
		callTimeout:    DefaultCallTimeout,
		stderrTailSz:   4096,
		header:         http.Header{},
	}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// WithName names the session. The generic tools ([GenericTools]) select a
// session by this name. It defaults to the name the server gives itself in
// its initialize result, or "mcp" when it gives none.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithToolPrefix makes [Session.Tools] name each tool prefix+name, e.g.
// WithToolPrefix("github__") turns the server's "create_issue" into
// "github__create_issue", so that tools of several servers cannot clash.
// Calls still use the server's own name.
func WithToolPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithOutputLimit sets how many characters of a tool result (and of a
// resource's contents, a tool's error message, and a tool's title and
// description as listed) [Session.CallTool], [Session.ListTools],
// [Session.ReadResource] and the tools of [Session.Tools] and
// [GenericTools] return (default [tools.DefaultOutputLimit]): longer text
// keeps its first and last halves around a marker such as
// "[... 4991234 chars truncated ...]", so that one huge result cannot fill
// the model's context. Non-positive values are ignored.
func WithOutputLimit(chars int) Option {
	return func(c *config) {
		if chars > 0 {
			c.outputLimit = chars
		}
	}
}

// WithConnectTimeout bounds the connection and the initialize handshake
// (default [DefaultConnectTimeout]): a server that has not answered by
// then fails the connect with a [*TimeoutError] (a stdio server is
// killed). Non-positive values are ignored.
func WithConnectTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.connectTimeout = d
		}
	}
}

// WithCallTimeout bounds each request of the session (default
// [DefaultCallTimeout]): a tool call, a listing or a resource read that
// has no answer by then is cancelled — the server is told — and fails
// with a [*TimeoutError]; the session stays usable. Non-positive values
// are ignored.
func WithCallTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.callTimeout = d
		}
	}
}

// WithClientInfo sets the client name and version sent to the server when
// the session is initialized (default "agentgraph", "v0").
func WithClientInfo(name, version string) Option {
	return func(c *config) { c.clientName, c.clientVer = name, version }
}

// WithEnv adds "KEY=value" entries to the environment of a stdio server.
// Later entries override earlier ones and the inherited variables.
//
// By default a stdio server does not inherit this process's environment:
// it gets only HOME, LOGNAME, PATH, SHELL, TERM, TMPDIR, USER, LANG and
// the LC_* variables (those that are set; on Windows also SYSTEMROOT,
// USERPROFILE, APPDATA, TEMP and the like), plus the WithEnv entries, so
// that secrets such as API keys do not leak into third-party servers. Use
// [WithInheritEnv] to pass the whole environment.
func WithEnv(kv ...string) Option {
	return func(c *config) { c.env = append(c.env, kv...) }
}

// WithInheritEnv makes a stdio server inherit this process's whole
// environment (plus the [WithEnv] entries) instead of the default few
// variables.
func WithInheritEnv() Option { return func(c *config) { c.inheritEnv = true } }

// WithDir sets the working directory of a stdio server (default: this
// process's).
func WithDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithStderr copies the standard error of a stdio server to w as well. The
// last few kilobytes of it are always kept and reported in an [*ExitError]
// when the server dies. w must be safe to write to from another goroutine.
func WithStderr(w io.Writer) Option { return func(c *config) { c.stderr = w } }

// WithTerminateTimeout sets how long Close waits for a stdio server to
// exit, first after closing its standard input and then after SIGTERM,
// before it kills the server's process group (default
// [DefaultTerminateTimeout]). A server that failed to connect is killed at
// once.
func WithTerminateTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.terminate = d
		}
	}
}

// WithHTTPClient sets the HTTP client of a streamable HTTP session (default
// http.DefaultClient).
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) { c.httpClient = client }
}

// WithHeader adds a header sent with every HTTP request of a streamable HTTP
// session to the server's origin (scheme and host), e.g.
// WithHeader("Authorization", "Bearer "+token). It is not sent to another
// origin a redirect leads to.
func WithHeader(key, value string) Option {
	return func(c *config) { c.header.Add(key, value) }
}
