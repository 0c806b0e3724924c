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
// ([WithMaxAttempts], [WithBackoff], [WithMaxRetryAfter],
// [WithAttemptTimeout], [WithOnRetry]). A cancelled context is never
// retried and always surfaces as context.Canceled or
// context.DeadlineExceeded for errors.Is; other failures are [*Error]s with
// the HTTP status when it is known.
//
// # Usage
//
// Each [Response] carries the call's [Usage]. A [Meter] totals usage across
// calls — attach it to a model with [WithMeter], or to a run's context with
// [ContextWithMeter] so that every model called with that context (the
// scripted one included) is counted.
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
// # Context trimming
//
// [Trim] keeps the system messages and the last N others without ever
// separating a tool call from its results.
package llm
