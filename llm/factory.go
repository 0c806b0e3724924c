package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"
)

// Default endpoints used by [New].
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	// DefaultGoogleAIBaseURL is Gemini's OpenAI-compatible endpoint.
	DefaultGoogleAIBaseURL = "https://generativelanguage.googleapis.com/v1beta/openai"
	DefaultOllamaHost      = "http://127.0.0.1:11434"
)

// New returns the Model named by spec, "provider:model", optionally
// followed by "@baseURL", and then by "?parameters":
//
//	openai:gpt-4o-mini                  OPENAI_API_KEY, OPENAI_BASE_URL (default DefaultOpenAIBaseURL)
//	anthropic:claude-sonnet-4-5         ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL (default DefaultAnthropicBaseURL)
//	googleai:gemini-2.5-flash           GOOGLE_API_KEY or GEMINI_API_KEY (also "gemini:…")
//	ollama:llama3.1                     OLLAMA_HOST (default DefaultOllamaHost), no key
//	openai-compatible:qwen3@http://localhost:8000/v1
//	ollama:qwen3:32b?timeout=20m&stall=5m
//
// Precedence: [WithAPIKey] / [WithBaseURL], then the "@baseURL" of the spec,
// then the environment, then the default. A provider that needs a key and
// has none gives an error naming the environment variable to set.
//
// The parameters, "key=value" pairs joined by "&", let whoever writes the
// spec (the user of a command-line tool, say) set the timeouts of each
// attempt; values are Go durations, 0 disables the limit:
//
//	timeout   the attempt timeout, see [WithAttemptTimeout] (default DefaultAttemptTimeout)
//	stall     the stall timeout, see [WithStallTimeout] (default DefaultStallTimeout)
//
// The options win over the parameters. Other keys are errors. The model's
// name (its String, [Error.Model], [Meter.ByModel]) is the spec without its
// parameters.
//
// Every provider runs through langchaingo and [FromLangchain] (all its
// normalisation and retry behaviour applies):
//
//   - openai and anthropic use langchaingo's own providers. ANTHROPIC_BASE_URL
//     follows the Anthropic SDKs' convention (no "/v1"; it is appended).
//   - ollama uses langchaingo's openai provider against Ollama's
//     OpenAI-compatible "/v1" endpoint, because langchaingo's native ollama
//     provider ignores tools. OLLAMA_HOST is read as Ollama reads it
//     ("host", "host:port" or a URL).
//   - googleai uses langchaingo's openai provider against Gemini's
//     OpenAI-compatible endpoint: langchaingo's googleai provider pulls in
//     the genai/gRPC stack, which this module does not depend on. To use it
//     anyway, build it yourself and wrap it with [FromLangchain].
//   - openai-compatible talks to any server speaking the chat-completions
//     protocol; the base URL (usually ending in "/v1") is required. Its key
//     comes only from [WithAPIKey] (OPENAI_API_KEY is deliberately not sent
//     to third-party servers); without one a placeholder is sent.
//
// OpenAI-wire providers other than openai send "max_tokens" rather than
// "max_completion_tokens", which local servers do not all understand.
//
// Clients are cached: calls with the same provider, model, base URL, key and
// HTTP client share one langchaingo client (and its connections), and when
// the retry and timeout settings and meter are the same too (and no
// [WithOnRetry] or [WithProgress] hook is given) the same Model is
// returned. New is safe for concurrent use. ctx is not retained; building a
// client does no I/O.
func New(ctx context.Context, spec string, opts ...Option) (Model, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := newSettings(opts)
	p, err := resolveSpec(spec, s)
	if err != nil {
		return nil, err
	}
	s.provider = p.wire
	if p.timeout != nil && !s.attemptTimeoutSet {
		s.attemptTimeout = *p.timeout
	}
	if p.stall != nil && !s.stallTimeoutSet {
		s.stallTimeout = *p.stall
	}
	if p.legacyMaxTokens {
		s.extra = append(s.extra, openai.WithLegacyMaxTokensField())
	}

	ck := clientKey{kind: p.kind, model: p.model, baseURL: p.baseURL, keyHash: hashKey(p.apiKey), hc: s.httpClient}
	mk := modelKey{clientKey: ck, name: p.name, maxAttempts: s.maxAttempts, initialBackoff: s.initialBackoff,
		maxBackoff: s.maxBackoff, maxRetryAfter: s.maxRetryAfter, attemptTimeout: s.attemptTimeout,
		stallTimeout: s.stallTimeout, meter: s.meter}
	cacheable := s.onRetry == nil && s.progress == nil && !s.customSleep

	cache.mu.Lock()
	defer cache.mu.Unlock()
	if cacheable {
		if m, ok := cache.models[mk]; ok {
			return m, nil
		}
	}
	lc, ok := cache.clients[ck]
	if !ok {
		lc, err = p.build(s.httpClient)
		if err != nil {
			return nil, fmt.Errorf("llm: %s: %w", p.name, err)
		}
		cache.clients[ck] = lc
	}
	m := &adapter{lc: lc, name: p.name, s: s, kind: p.kind, model: p.model}
	if cacheable {
		cache.models[mk] = m
	}
	return m, nil
}

type clientKey struct {
	kind, model, baseURL, keyHash string
	hc                            *http.Client
}

type modelKey struct {
	clientKey
	name                                                                    string
	maxAttempts                                                             int
	initialBackoff, maxBackoff, maxRetryAfter, attemptTimeout, stallTimeout time.Duration
	meter                                                                   *Meter
}

var cache = struct {
	mu      sync.Mutex
	clients map[clientKey]llms.Model
	models  map[modelKey]*adapter
}{clients: make(map[clientKey]llms.Model), models: make(map[modelKey]*adapter)}

func hashKey(k string) string {
	sum := sha256.Sum256([]byte(k))
	return hex.EncodeToString(sum[:])
}

var defaultHTTPClient = &http.Client{Transport: WrapTransport(http.DefaultTransport)}

func httpClientFor(c *http.Client) *http.Client {
	if c == nil {
		return defaultHTTPClient
	}
	cp := *c
	cp.Transport = WrapTransport(c.Transport)
	return &cp
}

// resolved is a parsed spec with its key and URL settled.
type resolved struct {
	name            string   // the spec, trimmed, without its parameters
	kind            string   // provider as written in the spec (gemini → googleai)
	wire            Provider // which langchaingo provider carries it
	model           string
	baseURL         string
	apiKey          string
	legacyMaxTokens bool
	timeout, stall  *time.Duration // the spec's parameters, when given
}

// specParams reads the parameters of a spec, the "key=value&…" after its
// "?".
func (r *resolved) specParams(spec, query string) error {
	if strings.TrimSpace(query) == "" {
		return nil
	}
	vals, err := url.ParseQuery(query)
	if err != nil {
		return fmt.Errorf("llm: model spec %q: parameters: %w", spec, err)
	}
	for _, key := range slices.Sorted(maps.Keys(vals)) {
		vs := vals[key]
		var dst **time.Duration
		switch key {
		case "timeout":
			dst = &r.timeout
		case "stall":
			dst = &r.stall
		default:
			return fmt.Errorf("llm: model spec %q: unknown parameter %q (parameters: timeout, stall)", spec, key)
		}
		v := strings.TrimSpace(vs[len(vs)-1])
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("llm: model spec %q: parameter %s=%q: want a duration such as 90s or 5m (0 disables)", spec, key, v)
		}
		*dst = &d
	}
	return nil
}

func resolveSpec(spec string, s settings) (resolved, error) {
	spec = strings.TrimSpace(spec)
	full := spec
	spec, query, _ := strings.Cut(spec, "?")
	spec = strings.TrimSpace(spec)
	kind, rest, ok := strings.Cut(spec, ":")
	kind = strings.ToLower(strings.TrimSpace(kind))
	if !ok || kind == "" || rest == "" {
		return resolved{}, fmt.Errorf("llm: model spec %q: want \"provider:model\" (providers: openai, anthropic, googleai, ollama, openai-compatible)", spec)
	}
	model, specURL := rest, ""
	for _, scheme := range []string{"@http://", "@https://"} {
		if i := strings.Index(rest, scheme); i >= 0 {
			model, specURL = rest[:i], rest[i+1:]
			break
		}
	}
	model = strings.TrimSpace(model)
	if model == "" {
		return resolved{}, fmt.Errorf("llm: model spec %q: empty model name", spec)
	}
	r := resolved{name: spec, kind: kind, model: model, wire: ProviderOpenAI}
	if err := r.specParams(full, query); err != nil {
		return r, err
	}
	pick := func(vals ...string) string {
		for _, v := range vals {
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		}
		return ""
	}
	needKey := func(envs ...string) error {
		vals := []string{s.apiKey}
		for _, e := range envs {
			vals = append(vals, os.Getenv(e))
		}
		r.apiKey = pick(vals...)
		if r.apiKey == "" {
			return fmt.Errorf("llm: %s: no API key: set %s (or pass llm.WithAPIKey)", spec, strings.Join(envs, " or "))
		}
		return nil
	}

	switch kind {
	case "openai":
		if err := needKey("OPENAI_API_KEY"); err != nil {
			return r, err
		}
		r.baseURL = pick(s.baseURL, specURL, os.Getenv("OPENAI_BASE_URL"), DefaultOpenAIBaseURL)
	case "anthropic":
		if err := needKey("ANTHROPIC_API_KEY"); err != nil {
			return r, err
		}
		r.wire = ProviderAnthropic
		base := strings.TrimRight(pick(s.baseURL, specURL, os.Getenv("ANTHROPIC_BASE_URL"), DefaultAnthropicBaseURL), "/")
		if !strings.HasSuffix(base, "/v1") {
			base += "/v1"
		}
		r.baseURL = base
	case "googleai", "gemini":
		r.kind = "googleai"
		if err := needKey("GOOGLE_API_KEY", "GEMINI_API_KEY"); err != nil {
			return r, err
		}
		r.baseURL = pick(s.baseURL, specURL, DefaultGoogleAIBaseURL)
		r.legacyMaxTokens = true
	case "ollama":
		r.apiKey = pick(s.apiKey, "ollama")
		base := pick(s.baseURL, specURL)
		if base == "" {
			base = ollamaHost(os.Getenv("OLLAMA_HOST")) + "/v1"
		}
		r.baseURL = base
		r.legacyMaxTokens = true
	case "openai-compatible":
		r.apiKey = pick(s.apiKey, "not-needed")
		r.baseURL = pick(s.baseURL, specURL)
		if r.baseURL == "" {
			return r, fmt.Errorf("llm: %s: openai-compatible needs a base URL: \"openai-compatible:<model>@<baseURL>\" or llm.WithBaseURL", spec)
		}
		r.legacyMaxTokens = true
	default:
		return r, fmt.Errorf("llm: model spec %q: unknown provider %q (providers: openai, anthropic, googleai, ollama, openai-compatible)", spec, kind)
	}
	r.baseURL = strings.TrimRight(r.baseURL, "/")
	if u, err := url.Parse(r.baseURL); err != nil || u.Scheme == "" || u.Host == "" {
		return r, fmt.Errorf("llm: %s: invalid base URL %q", spec, r.baseURL)
	}
	return r, nil
}

func (r resolved) build(hc *http.Client) (llms.Model, error) {
	client := httpClientFor(hc)
	if r.wire == ProviderAnthropic {
		return anthropic.New(
			anthropic.WithToken(r.apiKey),
			anthropic.WithModel(r.model),
			anthropic.WithBaseURL(r.baseURL),
			anthropic.WithHTTPClient(client),
		)
	}
	opts := []openai.Option{
		openai.WithToken(r.apiKey),
		openai.WithModel(r.model),
		openai.WithBaseURL(r.baseURL),
		openai.WithHTTPClient(client),
	}
	if r.kind != "openai" {
		// Do not send OPENAI_ORGANIZATION to other servers.
		opts = append(opts, openai.WithOrganization(""))
	}
	return openai.New(opts...)
}

// ollamaHost interprets OLLAMA_HOST the way Ollama does: an optional scheme
// (default http), host (default 127.0.0.1) and port (default 11434, or 80 /
// 443 when the scheme is given), and an optional path.
func ollamaHost(env string) string {
	s := strings.TrimSpace(env)
	if s == "" {
		return DefaultOllamaHost
	}
	defaultPort := "11434"
	scheme, hostport, ok := strings.Cut(s, "://")
	switch {
	case !ok:
		scheme, hostport = "http", s
	case scheme == "http":
		defaultPort = "80"
	case scheme == "https":
		defaultPort = "443"
	}
	hostport, path, _ := strings.Cut(hostport, "/")
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = "127.0.0.1", defaultPort
		if ip := net.ParseIP(strings.Trim(hostport, "[]")); ip != nil {
			host = ip.String()
		} else if hostport != "" {
			host = hostport
		}
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port)}
	if path != "" {
		u.Path = "/" + strings.TrimRight(path, "/")
	}
	return u.String()
}
