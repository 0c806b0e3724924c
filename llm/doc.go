// Package llm connects agents to chat models: a small [Model] interface,
// an adapter over langchaingo providers that irons out their differences,
// a provider factory, retries, token accounting, token streaming, a
// scripted model for tests, and context trimming.
//
// # Models
//
// A [Model] takes the conversation as [state.Message]s and returns one AI
// message — text and/or tool calls, every call with an ID — with its
// [Usage] and a normalised stop reason:
//
//	m, err := llm.New(ctx, "openai:gpt-4o-mini") // OPENAI_API_KEY from the environment
//	if err != nil { … }
//	resp, err := m.Generate(ctx, []state.Message{
//		state.System("You are terse."),
//		state.Human("Weather in Paris?"),
//	}, llm.WithTools(tools), llm.WithTemperature(0))
//	for _, call := range resp.Message.ToolCalls() { … }
//
// [New] understands "openai:", "anthropic:", "googleai:", "ollama:" and
// "openai-compatible:<model>@<baseURL>" specs and caches clients. Any other
// langchaingo model can be wrapped with [FromLangchain]. Either way all
// calls go through langchaingo's llms.Model.GenerateContent, and the
// adapter normalises provider quirks of langchaingo v0.1.14 (merged
// anthropic choices, missing googleai tool-call IDs, one tool result per
// openai tool message, usage keys, stop reasons, streamed tool calls).
//
// # Retries and errors
//
// Rate limits (429), server errors (5xx), timeouts and network errors are
// retried with exponential backoff and jitter, honouring Retry-After
// ([WithMaxAttempts], [WithBackoff], [WithMaxRetryAfter], [WithOnRetry]). A
// cancelled context is never retried and always surfaces as
// context.Canceled or context.DeadlineExceeded for errors.Is; other
// failures are [*Error]s with the HTTP status when it is known.
//
// # Timeouts
//
// No model call hangs forever, even against a server that accepts the
// connection and never answers. Each attempt is bounded twice:
//
//   - [WithAttemptTimeout] (default [DefaultAttemptTimeout], 10 minutes)
//     bounds the whole attempt, request to last byte;
//   - [WithStallTimeout] (default [DefaultStallTimeout], 2 minutes) fails
//     it as soon as the server has sent nothing for that long while an
//     answer was awaited: the headers of a streaming call, or the next
//     bytes of a body.
//
// An attempt cut short fails with a [*TimeoutError] saying which limit was
// hit (errors.Is(err, [ErrTimeout]) holds) and is retried like a 5xx, with
// the same attempts and backoff — unless text had already reached the token
// sink. The caller's own context still wins: a cancelled call fails with
// context.Canceled, never with a timeout. A command-line tool that takes a
// model spec lets its user set both limits in it:
//
//	llm.New(ctx, "ollama:qwen3:32b?timeout=30m&stall=5m") // e.g. from a --model flag
//
// # Progress
//
// A [Progress] hook shows what a call is doing while the user waits.
// Attach it to a model ([WithProgress]) or to a run's context
// ([ContextWithProgress]); it receives typed [ProgressEvent]s:
//
//	ctx = llm.ContextWithProgress(ctx, func(ctx context.Context, ev llm.ProgressEvent) {
//		switch ev.Kind {
//		case llm.ProgressAttempt:
//			status("waiting for %s (attempt %d/%d)", ev.Model, ev.Attempt, ev.MaxAttempts)
//		case llm.ProgressFirstByte:
//			status("%s is answering", ev.Model)
//		case llm.ProgressRetryWait: // ev.Reason: rate_limited, timeout, server_error, network
//			status("%s: %s, retrying in %v", ev.Model, ev.Reason, ev.Delay)
//		case llm.ProgressGaveUp:
//			status("%s failed: %v", ev.Model, ev.Err)
//		}
//	})
//
// Events of one call arrive in order and never concurrently; the hook runs
// synchronously and must be quick. A successful call ends when Generate
// returns, with no event of its own.
//
// # Usage
//
// Each [Response] carries the call's [Usage]. A [Meter] totals usage across
// calls — attach it to a model with [WithMeter], or to a run's context with
// [ContextWithMeter] so that every model called with that context (the
// scripted one included) is counted.
//
// # Observing calls
//
// [CallHooks] attached to a context with [ContextWithCallHooks] see every
// Generate call made with it, by every model of this package: the
// provider, the model requested, the options and the outcome. Package
// telemetry traces model calls this way; a Model of another package
// reports its calls with [ObserveCall].
//
// # Streaming
//
// [WithTokenSink] streams the answer's text as it is generated; tool calls
// never leak into the sink. The graph's "messages" stream mode is fed this
// way.
//
// # Testing
//
// [Scripted] replays a fixed script of [Reply]s, checks what it is sent,
// records every call, streams its text word by word, and fails with a
// [*ScriptExhaustedError] when called once too often:
//
//	m := llm.NewScripted(
//		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("", "search", `{"q":"go"}`)}},
//		llm.Reply{Text: "Go is a language."},
//	)
//
// # Embeddings
//
// An [Embedder] turns texts into vectors, for vector search. [NewEmbedder]
// builds one over langchaingo's embeddings from an "openai:<model>",
// "ollama:<model>" or "openai-compatible:<model>@<baseURL>" spec, with the
// same key and base-URL conventions as [New]; texts are sent in batches
// ([WithEmbedBatchSize]). A bad spec is a [*SpecError], a failed call an
// [*Error]. [NewHashingEmbedder] is the offline embedder: hashed words
// and character trigrams, deterministic, with no model, network or key,
// for tests, examples and programs that must run offline. The interface
// has the method set of codeindex.Embedder and of store.Embedder, so
// these embedders serve codeindex and a store's semantic search
// (store.IndexConfig) as they are, and codeindex's own offline
// HashingEmbedder serves here.
//
// # Context trimming
//
// [Trim] keeps the system messages and the last N others without ever
// separating a tool call from its results.
package llm
