package tools

import (
	"net/http"
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
	if c.httpClient == nil {
		c.httpClient = &http.Client{Timeout: c.httpTimeout}
	}
	return c
}

// WithTimeout sets the default time limit of bash_exec commands (when the
// model gives no timeout_seconds) and of git commands. Non-positive values
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
