package llm

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
)

func TestToLangchain(t *testing.T) {
	ai := state.AI("Looking.",
		llms.ToolCall{ID: "c1", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: ""}},
		state.ToolCall("c2", "g", `{"y":2}`))
	results := state.Message{MessageContent: llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
		llms.ToolCallResponse{ToolCallID: "c1", Content: "1"},
		llms.ToolCallResponse{ToolCallID: "c2", Content: "2"},
	}}}
	conv := []state.Message{
		state.System("A"),
		state.Human("hi"),
		state.System("B"),
		{MessageContent: llms.MessageContent{Role: llms.ChatMessageTypeAI}}, // no parts: dropped
		ai,
		results,
		state.Tool("c3", "h", "3"),
	}
	f := llms.ToolCall{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "{}"}}
	g := state.ToolCall("c2", "g", `{"y":2}`)
	r1 := llms.ToolCallResponse{ToolCallID: "c1", Name: "f", Content: "1"}
	r2 := llms.ToolCallResponse{ToolCallID: "c2", Name: "g", Content: "2"}
	r3 := llms.ToolCallResponse{ToolCallID: "c3", Name: "h", Content: "3"}
	msg := func(role llms.ChatMessageType, parts ...llms.ContentPart) llms.MessageContent {
		return llms.MessageContent{Role: role, Parts: parts}
	}
	sysA, sysB := msg(llms.ChatMessageTypeSystem, llms.TextPart("A")), msg(llms.ChatMessageTypeSystem, llms.TextPart("B"))
	human := msg(llms.ChatMessageTypeHuman, llms.TextPart("hi"))
	tests := []struct {
		provider Provider
		want     []llms.MessageContent
	}{
		{ProviderOpenAI, []llms.MessageContent{
			sysA, human, sysB,
			msg(llms.ChatMessageTypeAI, llms.TextPart("Looking."), f, g),
			msg(llms.ChatMessageTypeTool, r1), msg(llms.ChatMessageTypeTool, r2), msg(llms.ChatMessageTypeTool, r3),
		}},
		{ProviderAnthropic, []llms.MessageContent{
			msg(llms.ChatMessageTypeSystem, llms.TextPart("A\n\nB")), human,
			msg(llms.ChatMessageTypeAI, llms.TextPart("Looking.")), msg(llms.ChatMessageTypeAI, f), msg(llms.ChatMessageTypeAI, g),
			msg(llms.ChatMessageTypeTool, r1), msg(llms.ChatMessageTypeTool, r2), msg(llms.ChatMessageTypeTool, r3),
		}},
		{ProviderGoogleAI, []llms.MessageContent{
			sysA, human, sysB,
			msg(llms.ChatMessageTypeAI, llms.TextPart("Looking."), f, g),
			msg(llms.ChatMessageTypeTool, r1, r2, r3),
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.provider), func(t *testing.T) {
			before := append([]state.Message(nil), conv...)
			got, err := toLangchain(conv, tt.provider)
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tt.want, got))
			require.Empty(t, cmp.Diff(before, conv), "input not modified")
		})
	}

	_, err := toLangchain([]state.Message{state.AI("", llms.ToolCall{ID: "x"})}, ProviderOpenAI)
	require.ErrorContains(t, err, `tool call "x" has no function`)
}

func TestFromLangchainMergesChoicesAndAssignsIDs(t *testing.T) {
	info := map[string]any{"InputTokens": 5, "OutputTokens": 9, "CacheCreationInputTokens": 1, "CacheReadInputTokens": 0}
	resp := &llms.ContentResponse{Choices: []*llms.ContentChoice{
		{Content: "Check", StopReason: "tool_use", GenerationInfo: info},
		{ToolCalls: []llms.ToolCall{{ID: "t1", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: `{"x":1}`}}}, StopReason: "tool_use", GenerationInfo: info},
		{Content: "ing.", StopReason: "tool_use", GenerationInfo: info},
		{ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{Name: "g", Arguments: "null"}}}, StopReason: "tool_use", GenerationInfo: info},
	}}
	conv := []state.Message{state.Human("hi")}
	msg, usage, stop, _ := fromLangchain(resp, conv)
	require.Equal(t, "Checking.", msg.Text())
	calls := msg.ToolCalls()
	require.Len(t, calls, 2)
	require.Equal(t, state.ToolCall("t1", "f", `{"x":1}`), calls[0])
	require.Equal(t, "g", calls[1].FunctionCall.Name)
	require.Equal(t, "{}", calls[1].FunctionCall.Arguments)
	require.Equal(t, "function", calls[1].Type)
	require.Regexp(t, `^call_[0-9a-f]{24}$`, calls[1].ID)
	require.Equal(t, Usage{PromptTokens: 6, CompletionTokens: 9, TotalTokens: 15}, usage)
	require.Equal(t, StopToolCalls, stop)

	// Stable: same conversation → same ID; a later turn → another ID.
	again, _, _, _ := fromLangchain(resp, conv)
	require.Equal(t, calls[1].ID, again.ToolCalls()[1].ID)
	later, _, _, _ := fromLangchain(resp, append(conv, msg, state.Tool(calls[1].ID, "g", "ok")))
	require.NotEqual(t, calls[1].ID, later.ToolCalls()[1].ID)
}

func TestUsageFromInfo(t *testing.T) {
	tests := []struct {
		name string
		info map[string]any
		want Usage
	}{
		{"openai", map[string]any{"PromptTokens": 11, "CompletionTokens": 7, "TotalTokens": 18, "ReasoningTokens": 3}, Usage{11, 7, 18}},
		{"anthropic with cache", map[string]any{"InputTokens": 5, "OutputTokens": 9, "CacheCreationInputTokens": 2, "CacheReadInputTokens": 3}, Usage{10, 9, 19}},
		{"googleai int32", map[string]any{"input_tokens": int32(4), "output_tokens": int32(6), "total_tokens": int32(10), "PromptTokens": int32(4), "CompletionTokens": int32(6), "TotalTokens": int32(10)}, Usage{4, 6, 10}},
		{"snake case int64 without total", map[string]any{"prompt_tokens": int64(2), "completion_tokens": int64(3)}, Usage{2, 3, 5}},
		{"float64 and json.Number", map[string]any{"PromptTokens": 2.0, "CompletionTokens": json.Number("3"), "TotalTokens": float32(5)}, Usage{2, 3, 5}},
		{"nothing", map[string]any{"safety": nil}, Usage{}},
		{"nil", nil, Usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, usageFromInfo(tt.info))
		})
	}
}

func TestNormalizeStop(t *testing.T) {
	tests := []struct {
		raw   string
		calls bool
		want  string
	}{
		{"stop", false, StopEnd}, {"stop", true, StopToolCalls}, {"", false, StopEnd}, {"", true, StopToolCalls},
		{"end_turn", false, StopEnd}, {"tool_use", true, StopToolCalls}, {"tool_calls", true, StopToolCalls},
		{"max_tokens", false, StopLength}, {"length", true, StopLength}, {"FinishReasonMaxTokens", false, StopLength},
		{"FinishReasonStop", true, StopToolCalls}, {"FinishReasonSafety", false, StopContentFilter},
		{"content_filter", false, StopContentFilter}, {"pause_turn", false, "pause_turn"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, normalizeStop(tt.raw, tt.calls), "%q calls=%v", tt.raw, tt.calls)
	}
}

func TestDetectProvider(t *testing.T) {
	require.Equal(t, ProviderOpenAI, detectProvider(newRawOpenAI(t, "http://127.0.0.1:1/v1")))
	require.Equal(t, ProviderAnthropic, detectProvider(newRawAnthropic(t, "http://127.0.0.1:1")))
	require.Equal(t, ProviderGeneric, detectProvider(stubModel{}))
	m := FromLangchain(stubModel{}, "stub", WithProvider(ProviderAnthropic))
	require.Equal(t, ProviderAnthropic, m.(*adapter).s.provider)
}

type stubModel struct{}

func (stubModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "stub", GenerationInfo: map[string]any{"TotalTokens": 4}}}}, nil
}

func (stubModel) Call(context.Context, string, ...llms.CallOption) (string, error) {
	return "stub", nil
}

// A meter attached both to the model and to the context counts a call once;
// a second context meter counts it too.
func TestMeter(t *testing.T) {
	var own, run Meter
	m := FromLangchain(stubModel{}, "stub", WithMeter(&own))
	ctx := ContextWithMeter(ContextWithMeter(context.Background(), &own), &run)
	ctx = ContextWithMeter(ctx, &run) // attaching twice changes nothing
	require.Len(t, MetersFromContext(ctx), 2)

	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			_, err := m.Generate(ctx, []state.Message{state.Human("hi")})
			require.NoError(t, err)
		})
	}
	wg.Wait()
	want := UsageTotals{Calls: 20, Usage: Usage{TotalTokens: 80}}
	require.Equal(t, want, own.Totals())
	require.Equal(t, want, run.Totals())
	require.Equal(t, map[string]UsageTotals{"stub": want}, run.ByModel())
	run.Reset()
	require.Equal(t, UsageTotals{}, run.Totals())
}

// Streams without tool calls go through the normalizer byte for byte.
func TestSSENormalizerPassThrough(t *testing.T) {
	in := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
		": keep-alive\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: [DONE]\n\n"
	out, err := io.ReadAll(newSSENormalizer(io.NopCloser(strings.NewReader(in))))
	require.NoError(t, err)
	require.Equal(t, in, string(out))
}

func TestIsToolDeltaChunk(t *testing.T) {
	require.True(t, isToolDeltaChunk([]byte(`[{"type":"","function":{"name":"","arguments":"{\"a\":"}}]`)))
	require.True(t, isToolDeltaChunk([]byte(`[{"id":"c","type":"function","function":{"name":"f","arguments":""}}]`)))
	require.False(t, isToolDeltaChunk([]byte(`[1, 2]`)))
	require.False(t, isToolDeltaChunk([]byte(`[{"a":1}]`)))
	require.False(t, isToolDeltaChunk([]byte(`[x]`)))
	require.False(t, isToolDeltaChunk([]byte(`hello`)))
}

func TestNormalizeTools(t *testing.T) {
	in := []llms.Tool{{Function: &llms.FunctionDefinition{Name: "now"}}}
	got, err := normalizeTools(in)
	require.NoError(t, err)
	require.Equal(t, "function", got[0].Type)
	require.Equal(t, map[string]any{"type": "object", "properties": map[string]any{}}, got[0].Function.Parameters)
	require.Nil(t, in[0].Function.Parameters, "caller's tool not modified")
	require.Empty(t, in[0].Type)

	_, err = normalizeTools([]llms.Tool{{Type: "function"}})
	require.ErrorContains(t, err, "no Function")

	// The native ollama provider would silently drop tools: refuse loudly.
	m := FromLangchain(stubModel{}, "ollama-native", WithProvider(ProviderOllama))
	_, err = m.Generate(context.Background(), []state.Message{state.Human("hi")}, WithTools(in))
	require.ErrorContains(t, err, "ignores tools")
}
