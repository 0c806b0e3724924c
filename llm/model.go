package llm

import (
	"context"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
)

// Model is a chat model as an agent sees it: a conversation in, one AI
// message (text and/or tool calls) out.
//
// Implementations must be safe for concurrent use. When ctx is cancelled or
// its deadline passes, Generate returns an error for which
// errors.Is(err, context.Canceled) or errors.Is(err, context.DeadlineExceeded)
// holds.
type Model interface {
	Generate(ctx context.Context, msgs []state.Message, opts ...CallOption) (*Response, error)
}

// Response is the result of one [Model.Generate] call.
type Response struct {
	// Message is the model's turn: role AI, its text (if any) followed by
	// its tool calls. Every tool call has a non-empty ID, Type "function"
	// and non-nil FunctionCall whose Arguments are a JSON object.
	// Message.ID is the ID passed with [WithMessageID], else empty (the
	// state.Messages reducer assigns one when the message is appended).
	Message state.Message
	// Usage is the token usage of this call (the successful attempt only).
	Usage Usage
	// StopReason says why the model stopped; see the Stop* constants.
	// Provider values that have no equivalent pass through unchanged.
	StopReason string
	// Reasoning is the model's separate reasoning text when the provider
	// returns one (OpenAI-compatible "reasoning_content"), else empty. It
	// is not part of Message.
	Reasoning string
	// Attempts is the number of provider calls made, 1 when the first
	// succeeded.
	Attempts int
}

// Normalized stop reasons reported in [Response.StopReason].
const (
	StopEnd           = "stop"           // the model finished its turn (or hit a stop sequence)
	StopToolCalls     = "tool_calls"     // the model wants tools to be run
	StopLength        = "length"         // the output hit the token limit
	StopContentFilter = "content_filter" // the provider withheld or cut the output
)

// CallOption configures one [Model.Generate] call.
type CallOption func(*CallOptions)

// CallOptions is the resolved form of a list of [CallOption]s. Model
// implementations other than this package's read it with
// [NewCallOptions]. The zero value means "provider defaults".
type CallOptions struct {
	// Tools the model may call.
	Tools []llms.Tool
	// ToolChoice is "auto", "none", "required" or an [llms.ToolChoice];
	// nil leaves the provider's default. Only OpenAI-wire providers honour
	// it (langchaingo v0.1.14 drops it for anthropic and googleai).
	ToolChoice any
	// Temperature, when non-nil, is the sampling temperature.
	Temperature *float64
	// MaxTokens, when positive, caps the output tokens.
	MaxTokens int
	// StopWords are stop sequences.
	StopWords []string
	// TokenSink, when non-nil, receives the text of the answer as it is
	// generated; see [WithTokenSink].
	TokenSink func(ctx context.Context, token string)
	// MessageID, when non-empty, becomes [Response.Message].ID.
	MessageID string
	// Extra are langchaingo options appended after the ones derived above
	// (an escape hatch for provider-specific settings).
	Extra []llms.CallOption
}

// NewCallOptions applies opts, in order, to a zero CallOptions.
func NewCallOptions(opts ...CallOption) CallOptions {
	var o CallOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithTools offers tools to the model. A tool's Type may be left empty
// ("function" is assumed); its Function must be set.
func WithTools(tools []llms.Tool) CallOption {
	return func(o *CallOptions) { o.Tools = tools }
}

// WithToolChoice sets the tool choice: "auto", "none", "required" or an
// [llms.ToolChoice] naming one function. Only OpenAI-wire providers (openai,
// ollama, openai-compatible, googleai through its OpenAI endpoint) forward
// it.
func WithToolChoice(choice any) CallOption {
	return func(o *CallOptions) { o.ToolChoice = choice }
}

// WithTemperature sets the sampling temperature.
func WithTemperature(t float64) CallOption {
	return func(o *CallOptions) { o.Temperature = &t }
}

// WithMaxTokens caps the number of output tokens.
func WithMaxTokens(n int) CallOption {
	return func(o *CallOptions) { o.MaxTokens = n }
}

// WithStopWords sets stop sequences.
func WithStopWords(words ...string) CallOption {
	return func(o *CallOptions) { o.StopWords = words }
}

// WithTokenSink streams the answer's text to sink while it is generated:
// sink is called once per text chunk, in order, from the goroutine that
// called Generate, and the concatenation of the chunks is the final
// message's text. Tool-call fragments are never passed to sink; tool calls
// arrive complete in the [Response].
//
// Setting a sink switches the provider call to streaming mode. A failed
// call is not retried once any chunk has reached the sink (the chunks
// cannot be taken back).
func WithTokenSink(sink func(ctx context.Context, token string)) CallOption {
	return func(o *CallOptions) { o.TokenSink = sink }
}

// WithMessageID sets the ID of the returned AI message, so that streamed
// tokens and the final message can be correlated by the caller.
func WithMessageID(id string) CallOption {
	return func(o *CallOptions) { o.MessageID = id }
}

// WithLangchainOptions passes raw langchaingo call options to the provider,
// after the ones this package derives. Models that do not call langchaingo
// (such as [Scripted]) ignore them.
func WithLangchainOptions(opts ...llms.CallOption) CallOption {
	return func(o *CallOptions) { o.Extra = append(o.Extra, opts...) }
}
