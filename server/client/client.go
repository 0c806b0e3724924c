package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultMaxEventBytes is the largest server-sent event (its data lines
// together) and the longest line a stream accepts unless
// [WithMaxEventBytes] says otherwise.
const DefaultMaxEventBytes = 16 << 20

// DefaultMaxResponseBytes is the largest JSON answer the client reads
// unless [WithMaxResponseBytes] says otherwise.
const DefaultMaxResponseBytes = 64 << 20

// DefaultReconnects is how many times a resumable stream reconnects after
// its connection dropped, unless [WithReconnects] says otherwise.
const DefaultReconnects = 5

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// Client calls a LangGraph Server API: this module's package server, or
// LangGraph Platform, or LangGraph's own JS server. Its methods are
// grouped as the official SDKs group them: [Client.Assistants],
// [Client.Threads], [Client.Runs] and [Client.Store]. A Client is safe for
// concurrent use.
type Client struct {
	// Assistants reads the assistants (the graphs served).
	Assistants *Assistants
	// Threads creates, reads, updates and deletes threads and their state.
	Threads *Threads
	// Runs starts runs and streams, waits for and cancels them.
	Runs *Runs
	// Store reads and writes the server's long-term store.
	Store *Store

	base          string // without a trailing slash
	hc            *http.Client
	header        http.Header
	maxEventBytes int
	maxResponse   int64
	reconnects    int
	backoff       time.Duration
}

// Option configures a [Client].
type Option func(*Client)

// WithAPIKey sends key in the x-api-key header, as the official SDKs do
// (LangGraph Platform reads it there; package server too).
func WithAPIKey(key string) Option {
	return func(c *Client) { c.header.Set("X-Api-Key", key) }
}

// WithBearerToken sends "Authorization: Bearer token".
func WithBearerToken(token string) Option {
	return func(c *Client) { c.header.Set("Authorization", "Bearer "+token) }
}

// WithHeader sends the header key: value with every request.
func WithHeader(key, value string) Option {
	return func(c *Client) { c.header.Add(key, value) }
}

// WithHTTPClient sends the requests through (a copy of) hc instead of a
// client of http.DefaultTransport. Streams and waits last as long as their
// runs: give hc no Timeout and bound calls with their contexts instead.
// Unless hc has a CheckRedirect of its own, the client follows redirects
// on its server's host only, so that the API key never goes elsewhere
// (net/http forwards an x-api-key header to any host).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			cp := *hc
			if cp.CheckRedirect == nil {
				cp.CheckRedirect = sameHostOnly
			}
			c.hc = &cp
		}
	}
}

// sameHostOnly refuses a redirect to another scheme, host or port: the
// 3xx is then the answer, an [*APIError].
func sameHostOnly(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("client: stopped after 10 redirects")
	}
	if req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

// WithMaxEventBytes bounds a stream's lines and events to n bytes (default
// [DefaultMaxEventBytes]); a larger one ends the stream with
// [ErrEventTooLarge].
func WithMaxEventBytes(n int) Option {
	return func(c *Client) {
		if n > 0 {
			c.maxEventBytes = n
		}
	}
}

// WithMaxResponseBytes bounds the JSON answers the client reads (default
// [DefaultMaxResponseBytes]); a larger one is an error.
func WithMaxResponseBytes(n int64) Option {
	return func(c *Client) {
		if n > 0 {
			c.maxResponse = n
		}
	}
}

// WithReconnects sets how many times in a row a resumable stream
// reconnects after its connection dropped without a new event in between
// (default [DefaultReconnects]; 0 never), and the first wait between
// attempts (doubling after each one; a server's "retry:" field replaces
// it).
func WithReconnects(n int, backoff time.Duration) Option {
	return func(c *Client) {
		if n >= 0 {
			c.reconnects = n
		}
		if backoff > 0 {
			c.backoff = backoff
		}
	}
}

// New returns a client of the server at baseURL (such as
// "http://localhost:2024"; a path prefix is kept).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("client: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q is not an http(s) URL", baseURL)
	}
	c := &Client{
		base:          strings.TrimRight(u.String(), "/"),
		hc:            &http.Client{CheckRedirect: sameHostOnly},
		header:        http.Header{},
		maxEventBytes: DefaultMaxEventBytes,
		maxResponse:   DefaultMaxResponseBytes,
		reconnects:    DefaultReconnects,
		backoff:       200 * time.Millisecond,
	}
	for _, o := range opts {
		o(c)
	}
	c.Assistants = &Assistants{c: c}
	c.Threads = &Threads{c: c}
	c.Runs = &Runs{c: c}
	c.Store = &Store{c: c}
	return c, nil
}

// APIError is a non-2xx answer of the server.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Message is the server's message: the "detail" of a JSON error
	// body, or the body's text.
	Message string
	// Body is the answer's body (its first 64 KiB).
	Body []byte
}

func (e *APIError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("client: HTTP %d", e.Status)
	}
	return fmt.Sprintf("client: HTTP %d: %s", e.Status, e.Message)
}

// IsNotFound reports whether err is an [*APIError] with status 404.
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// apiError reads the error answer res.
func apiError(res *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	e := &APIError{Status: res.StatusCode, Body: body}
	var d struct {
		Detail  json.RawMessage `json:"detail"`
		Message string          `json:"message"`
	}
	switch {
	case json.Unmarshal(body, &d) == nil && len(d.Detail) > 0:
		var s string
		if json.Unmarshal(d.Detail, &s) == nil {
			e.Message = s
		} else {
			e.Message = string(d.Detail)
		}
	case d.Message != "":
		e.Message = d.Message
	default:
		e.Message = strings.TrimSpace(string(body))
	}
	return e
}

// request builds a request to path (with query q) carrying body as JSON.
func (c *Client) request(ctx context.Context, method, path string, q url.Values, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("client: encoding the %s %s body: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// do sends a request and decodes a 2xx answer's JSON body into out (when
// out is not nil and the body is not empty).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	req, err := c.request(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return apiError(res)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxErrorBody))
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, c.maxResponse+1))
	if err != nil {
		return fmt.Errorf("client: %s %s: reading the answer: %w", method, path, err)
	}
	if int64(len(b)) > c.maxResponse {
		return fmt.Errorf("client: %s %s: the answer is larger than %d bytes", method, path, c.maxResponse)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("client: %s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }
