package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/tmc/langchaingo/embeddings"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"
)

// An Embedder turns texts into vectors, one per text and in the same order,
// all of the same dimension. Implementations must be safe for concurrent
// use.
//
// The interface has the method set of codeindex.Embedder, so an Embedder
// of this package is a codeindex.Embedder and the other way round.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// DefaultEmbedBatchSize is the number of texts an [Embedder] made by
// [NewEmbedder] sends in one request when [WithEmbedBatchSize] is not
// given.
const DefaultEmbedBatchSize = 512

// An EmbedderOption configures [NewEmbedder].
type EmbedderOption func(*embedderSettings)

type embedderSettings struct {
	baseURL    string
	apiKey     string
	httpClient *http.Client
	batchSize  int
	dimensions int
}

// WithEmbedBaseURL sets the server URL for [NewEmbedder], overriding the
// spec's "@baseURL", environment variables and defaults. For openai and
// openai-compatible it is the URL that "/embeddings" is appended to (it
// normally ends in "/v1"); for ollama, the server's root URL ("/api/embed"
// is appended).
func WithEmbedBaseURL(u string) EmbedderOption {
	return func(s *embedderSettings) { s.baseURL = u }
}

// WithEmbedAPIKey sets the API key for [NewEmbedder], overriding
// environment variables. Ollama ignores it.
func WithEmbedAPIKey(key string) EmbedderOption {
	return func(s *embedderSettings) { s.apiKey = key }
}

// WithEmbedHTTPClient makes the embedder send its requests through a copy
// of c whose transport is wrapped with [WrapTransport]. By default it uses
// a client over [http.DefaultTransport] without an overall timeout; the
// context passed to Embed bounds each call.
func WithEmbedHTTPClient(c *http.Client) EmbedderOption {
	return func(s *embedderSettings) { s.httpClient = c }
}

// WithEmbedBatchSize sets how many texts go in one request (default
// [DefaultEmbedBatchSize]); Embed sends the batches one after another.
// n < 1 makes [NewEmbedder] fail. Ollama's client in langchaingo v0.1.14
// sends one request per text whatever the batch size.
func WithEmbedBatchSize(n int) EmbedderOption {
	return func(s *embedderSettings) { s.batchSize = n }
}

// WithEmbedDimensions asks an OpenAI-wire server for vectors of n
// dimensions (the "dimensions" field of the request, understood by
// OpenAI's text-embedding-3 models). Zero, the default, leaves the choice
// to the model; ollama ignores it.
func WithEmbedDimensions(n int) EmbedderOption {
	return func(s *embedderSettings) { s.dimensions = n }
}

// A SpecError reports an embedder spec that [NewEmbedder] cannot use: a
// malformed spec, an unknown provider, a missing API key or base URL, or an
// invalid option.
type SpecError struct {
	// Spec is the spec as given.
	Spec string
	// Reason says what is wrong and, when it can, how to fix it.
	Reason string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("llm: embedder spec %q: %s", e.Spec, e.Reason)
}

// NewEmbedder returns the Embedder named by spec, "provider:model",
// optionally followed by "@baseURL":
//
//	openai:text-embedding-3-small       OPENAI_API_KEY, OPENAI_BASE_URL (default DefaultOpenAIBaseURL)
//	ollama:nomic-embed-text             OLLAMA_HOST (default DefaultOllamaHost), no key
//	openai-compatible:bge-m3@http://localhost:8000/v1
//
// Precedence, as for [New]: [WithEmbedAPIKey] / [WithEmbedBaseURL], then the
// "@baseURL" of the spec, then the environment, then the default. An
// openai-compatible server gets its key only from [WithEmbedAPIKey]
// (OPENAI_API_KEY is not sent to third-party servers).
//
// openai and openai-compatible use langchaingo's openai provider (POST
// <baseURL>/embeddings); ollama uses langchaingo's ollama provider (POST
// <host>/api/embed, one request per text). Both run under langchaingo's
// embeddings.EmbedderImpl, which splits the texts into batches
// ([WithEmbedBatchSize]); texts are sent as given, newlines included.
//
// A spec NewEmbedder cannot use gives a [*SpecError]. Building an embedder
// does no I/O. Embed makes no retries: a failed call returns an [*Error]
// whose StatusCode and Retryable let the caller decide whether to try
// again; a cancelled context surfaces as context.Canceled or
// context.DeadlineExceeded for errors.Is.
func NewEmbedder(spec string, opts ...EmbedderOption) (Embedder, error) {
	s := embedderSettings{batchSize: DefaultEmbedBatchSize}
	for _, o := range opts {
		o(&s)
	}
	bad := func(format string, args ...any) (Embedder, error) {
		return nil, &SpecError{Spec: spec, Reason: fmt.Sprintf(format, args...)}
	}
	if s.batchSize < 1 {
		return bad("batch size %d: want at least 1", s.batchSize)
	}
	if s.dimensions < 0 {
		return bad("dimensions %d: want 0 (the model's default) or more", s.dimensions)
	}

	name := strings.TrimSpace(spec)
	kind, rest, ok := strings.Cut(name, ":")
	kind = strings.ToLower(strings.TrimSpace(kind))
	if !ok || kind == "" {
		return bad(`want "provider:model" (providers: openai, ollama, openai-compatible)`)
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
		return bad("empty model name")
	}
	pick := func(vals ...string) string {
		for _, v := range vals {
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		}
		return ""
	}

	var (
		client  embeddings.EmbedderClient
		baseURL string
		hc      = httpClientFor(s.httpClient)
	)
	switch kind {
	case "openai", "openai-compatible":
		key := pick(s.apiKey)
		if kind == "openai" {
			key = pick(s.apiKey, os.Getenv("OPENAI_API_KEY"))
			if key == "" {
				return bad("no API key: set OPENAI_API_KEY (or pass llm.WithEmbedAPIKey)")
			}
			baseURL = pick(s.baseURL, specURL, os.Getenv("OPENAI_BASE_URL"), DefaultOpenAIBaseURL)
		} else {
			key = pick(key, "not-needed")
			baseURL = pick(s.baseURL, specURL)
			if baseURL == "" {
				return bad(`openai-compatible needs a base URL: "openai-compatible:<model>@<baseURL>" or llm.WithEmbedBaseURL`)
			}
		}
		baseURL = strings.TrimRight(baseURL, "/")
		if !validURL(baseURL) {
			return bad("invalid base URL %q", baseURL)
		}
		oo := []openai.Option{
			openai.WithToken(key),
			openai.WithModel(model),
			openai.WithEmbeddingModel(model),
			openai.WithBaseURL(baseURL),
			openai.WithHTTPClient(hc),
		}
		if s.dimensions > 0 {
			oo = append(oo, openai.WithEmbeddingDimensions(s.dimensions))
		}
		if kind != "openai" {
			// Do not send OPENAI_ORGANIZATION to other servers.
			oo = append(oo, openai.WithOrganization(""))
		}
		c, err := openai.New(oo...)
		if err != nil {
			return nil, fmt.Errorf("llm: embedder %s: %w", name, err)
		}
		client = c
	case "ollama":
		baseURL = strings.TrimRight(pick(s.baseURL, specURL, ollamaHost(os.Getenv("OLLAMA_HOST"))), "/")
		// langchaingo's ollama.WithServerURL exits the program on a URL it
		// cannot parse; check it first.
		if !validURL(baseURL) {
			return bad("invalid base URL %q", baseURL)
		}
		c, err := ollama.New(ollama.WithModel(model), ollama.WithServerURL(baseURL), ollama.WithHTTPClient(hc))
		if err != nil {
			return nil, fmt.Errorf("llm: embedder %s: %w", name, err)
		}
		client = c
	default:
		return bad("unknown provider %q (providers: openai, ollama, openai-compatible)", kind)
	}

	impl, err := embeddings.NewEmbedder(client,
		embeddings.WithBatchSize(s.batchSize),
		embeddings.WithStripNewLines(false),
	)
	if err != nil {
		return nil, fmt.Errorf("llm: embedder %s: %w", name, err)
	}
	return &langchainEmbedder{name: name, impl: impl}, nil
}

func validURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && u.Host != ""
}

// langchainEmbedder adapts langchaingo's embeddings.Embedder.
type langchainEmbedder struct {
	name string
	impl embeddings.Embedder
}

// String returns the spec the embedder was made from.
func (e *langchainEmbedder) String() string { return e.name }

// Embed returns one vector per text, in order. No texts, no request.
func (e *langchainEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return [][]float32{}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, e.name, nil)
	}
	octx, obs := withObservation(ctx)
	vecs, err := e.impl.EmbedDocuments(octx, texts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(ctx, e.name, err)
		}
		f := classify(err, obs)
		return nil, &Error{Model: e.name, Attempts: 1, StatusCode: f.status, RetryAfter: f.retryAfter, Retryable: f.retryable, Err: err}
	}
	if len(vecs) != len(texts) {
		return nil, &Error{Model: e.name, Attempts: 1,
			Err: fmt.Errorf("%w: %d vectors for %d texts", ErrEmbeddingCount, len(vecs), len(texts))}
	}
	return vecs, nil
}

// ErrEmbeddingCount is returned (wrapped in [*Error]) when a server answers
// an embedding request with a different number of vectors than texts.
var ErrEmbeddingCount = errors.New("llm: wrong number of embeddings")
