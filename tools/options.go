package tools

import (
	"net/http"
	"regexp"
	"time"
)

// Default settings of the coding tools.
const (
	// DefaultTimeout is the default run time limit of a bash_exec command
	// and of the git tools.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxTimeout bounds the timeout_seconds a model may request.
	DefaultMaxTimeout = 10 * time.Minute
	// DefaultTestTimeout is the default run time limit of run_tests.
	DefaultTestTimeout = 10 * time.Minute
	// DefaultOutputLimit is the default number of characters of command
	// output returned to the model.
	DefaultOutputLimit = 8000
	// DefaultHTTPTimeout is the default time limit of one web_search request.
	DefaultHTTPTimeout = 15 * time.Second
	// DefaultSearchURL is DuckDuckGo's HTML endpoint.
	DefaultSearchURL = "https://html.duckduckgo.com/html/"
	// DefaultLiteSearchURL is DuckDuckGo's lite endpoint, used as fallback.
	DefaultLiteSearchURL = "https://lite.duckduckgo.com/lite/"
)

// Option configures the coding tools. Each constructor uses the settings
// that apply to it and ignores the others, so the same options can be
// passed to Coding and to every individual constructor.
type Option func(*config)

type config struct {
	timeout       time.Duration
	maxTimeout    time.Duration
	testTimeout   time.Duration
	outputLimit   int
	httpClient    *http.Client
	httpTimeout   time.Duration
	searchURL     string
	liteSearchURL string

	// File tools.
	vcsWrites bool
	hardLinks bool

	// bash_exec.
	sandbox       SandboxMode
	network       bool
	envAllow      []string
	home          string
	readOnlyPaths []string
	writablePaths []string
	goCaches      bool
	cacheDir      string // "" for DefaultCacheDir
	limits        Limits
	limitsSet     bool // WithLimits was given
	commandAllow  []*regexp.Regexp
	commandDeny   []*regexp.Regexp
	sandboxInfo   func() SandboxInfo // SandboxStatus, replaced in tests
}

func newConfig(opts []Option) *config {
	c := &config{
		timeout:       DefaultTimeout,
		maxTimeout:    DefaultMaxTimeout,
		testTimeout:   DefaultTestTimeout,
		outputLimit:   DefaultOutputLimit,
		httpTimeout:   DefaultHTTPTimeout,
		searchURL:     DefaultSearchURL,
		liteSearchURL: DefaultLiteSearchURL,
	}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	if c.sandboxInfo == nil {
		c.sandboxInfo = SandboxStatus
	}
	if c.httpClient == nil {
		c.httpClient = &http.Client{Timeout: c.httpTimeout}
	}
	return c
}

// WithTimeout sets the default time limit of bash_exec commands (when the
// model gives no timeout_seconds), of RunCommand and of git commands. Non-positive values
// are ignored.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithMaxTimeout bounds the timeout_seconds a model may request from
// bash_exec. Non-positive values are ignored.
func WithMaxTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.maxTimeout = d
		}
	}
}

// WithTestTimeout sets the time limit of a run_tests run. Non-positive
// values are ignored.
func WithTestTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.testTimeout = d
		}
	}
}

// WithOutputLimit sets how many characters of command output bash_exec,
// run_tests and the git tools return; longer output keeps its head and
// tail around a marker. Non-positive values are ignored.
func WithOutputLimit(chars int) Option {
	return func(c *config) {
		if chars > 0 {
			c.outputLimit = chars
		}
	}
}

// WithHTTPClient sets the HTTP client of web_search. The WithHTTPTimeout
// limit still applies to every request.
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) { c.httpClient = client }
}

// WithHTTPTimeout sets the time limit of one web_search request.
// Non-positive values are ignored.
func WithHTTPTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.httpTimeout = d
		}
	}
}

// WithSearchURL sets the primary web_search endpoint, which must serve
// pages shaped like DuckDuckGo's HTML endpoint. The query is added as the
// q parameter.
func WithSearchURL(u string) Option {
	return func(c *config) { c.searchURL = u }
}

// WithLiteSearchURL sets the fallback web_search endpoint, which must serve
// pages shaped like DuckDuckGo's lite endpoint. An empty URL disables the
// fallback.
func WithLiteSearchURL(u string) Option {
	return func(c *config) { c.liteSearchURL = u }
}

// WithVCSWrites sets whether file_write and file_patch may change version
// control metadata: .git, .hg, .svn, .jj and .bzr directories (and .git
// files), at any depth and in any letter case. The default, false, refuses
// such writes with *ProtectedPathError, because a model that can write
// .git/config or .git/hooks can make the next git command run anything.
// It also sets whether the version-control metadata at the workspace's
// root is writable in the sandbox of bash_exec, run_tests and RunCommand
// (read-only by default: a coding CLI that commits needs it true).
func WithVCSWrites(allow bool) Option {
	return func(c *config) { c.vcsWrites = allow }
}

// WithHardLinks sets whether file_read, file_write, file_patch and grep
// may use a regular file that has more than one hard link. The default,
// false, refuses such files with *HardLinkError (grep skips them), because
// a hard link planted in the workspace can name a file outside it.
func WithHardLinks(allow bool) Option {
	return func(c *config) { c.hardLinks = allow }
}

// WithSandbox sets whether bash_exec and RunCommand run commands in the bubblewrap
// sandbox. The default is SandboxAuto; see SandboxMode and SandboxStatus.
func WithSandbox(mode SandboxMode) Option {
	return func(c *config) { c.sandbox = mode }
}

// WithNetwork sets whether sandboxed bash_exec and RunCommand commands may use the
// network. The default, false, gives them a network namespace of their
// own with only a loopback interface. Unsandboxed commands always have the
// network.
func WithNetwork(allow bool) Option {
	return func(c *config) { c.network = allow }
}

// WithEnv passes more variables of this process's environment to
// bash_exec, run_tests and RunCommand commands, by name or by path.Match
// pattern ("GO*", "LC_*"), and leaves their values unredacted in what the
// commands print (see NewRedactor). Variables that look like secrets (a
// name containing API_KEY, SECRET, PASSWORD, TOKEN, CREDENTIAL, ..., see
// SecretEnvName; a URL with a password, see SecretEnvVar) pass only when
// named exactly, never through a pattern. The defaults are PATH, LANG,
// LANGUAGE, LC_*, TERM, TZ, USER, LOGNAME and the toolchains' variables
// (see BashExec), and TMPDIR without the sandbox; HOME is always set by
// bash_exec (see WithHome).
func WithEnv(names ...string) Option {
	return func(c *config) { c.envAllow = append(c.envAllow, names...) }
}

// WithHome sets the HOME directory of bash_exec and RunCommand commands; in the sandbox
// it is writable. By default each command gets a new empty HOME, removed
// when it ends; the build caches of go, pip and npm persist anyway, in the
// cache directory (see WithCacheDir).
func WithHome(dir string) Option {
	return func(c *config) { c.home = dir }
}

// WithReadOnlyPaths makes more paths visible, read-only, to sandboxed
// bash_exec and RunCommand commands. By default they see only the system directories
// (/usr, /bin, /sbin, /lib*, /etc, /opt), the workspace, a private /tmp
// and HOME. Missing paths are skipped.
func WithReadOnlyPaths(paths ...string) Option {
	return func(c *config) { c.readOnlyPaths = append(c.readOnlyPaths, paths...) }
}

// WithWritablePaths makes more paths visible and writable to sandboxed
// bash_exec and RunCommand commands, such as a shared build cache. Missing paths are
// skipped.
func WithWritablePaths(paths ...string) Option {
	return func(c *config) { c.writablePaths = append(c.writablePaths, paths...) }
}

// WithGoCaches points the go command of bash_exec and RunCommand at this
// machine's Go toolchain (GOROOT) and module cache (as `go env` reports
// them), so that go build, go test and go run use the modules already
// downloaded here. In the sandbox both are read-only, go fetches no
// module (GOPROXY=off) and does not change go.mod (GOFLAGS gains
// -mod=readonly unless the workspace vendors its modules); the build cache
// is the writable, persistent one of the cache directory (see
// WithCacheDir), never this machine's, which a command could otherwise
// poison for every later build here. Without the sandbox the three are
// this user's, writable as ever. GOTOOLCHAIN=local is set either way.
// Where go is missing the option does nothing. run_tests sets it for go.
func WithGoCaches() Option {
	return func(c *config) { c.goCaches = true }
}

// WithCommandAllow restricts bash_exec to commands matching at least one
// of the regular expressions (matched against the whole command text).
// Like WithCommandDeny it is a convenience to steer a model, not a
// security boundary: a shell command can be written in endless ways. The
// sandbox is the boundary.
func WithCommandAllow(patterns ...*regexp.Regexp) Option {
	return func(c *config) { c.commandAllow = append(c.commandAllow, patterns...) }
}

// WithCommandDeny makes bash_exec refuse commands matching any of the
// regular expressions (matched against the whole command text), with
// *CommandRefusedError. It is a convenience, not a security boundary; see
// WithCommandAllow.
func WithCommandDeny(patterns ...*regexp.Regexp) Option {
	return func(c *config) { c.commandDeny = append(c.commandDeny, patterns...) }
}

// WithCacheDir sets the directory of the persistent build caches of
// bash_exec, run_tests and RunCommand commands: Go's build cache
// (GOCACHE), pip's (PIP_CACHE_DIR), npm's (npm_config_cache), other
// tools' (XDG_CACHE_HOME) and, without WithGoCaches, GOPATH with its
// module cache, each in a subdirectory created as needed. In the sandbox
// they are writable, so that a build or test run twice reuses what the
// first compiled or downloaded. The default, DefaultCacheDir, is one
// directory of the user's cache directory shared by all workspaces; an
// agent with a state directory of its own may put it there, one per
// project to keep projects from affecting one another. The caches are as
// trusted as the commands that share them: any of them can write them.
// The directory may not hold the workspace or this machine's own Go
// build cache (see *CacheDirError), which sandboxed commands never
// write.
func WithCacheDir(dir string) Option {
	return func(c *config) { c.cacheDir = dir }
}
