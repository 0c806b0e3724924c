package planexec_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentgraph/agentgraph/agent/planexec"
	"github.com/agentgraph/agentgraph/internal/openaitest"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/telemetry"
	"github.com/agentgraph/agentgraph/tools"
	"github.com/tmc/langchaingo/llms"
)

// researchServer is an OpenAI-compatible chat-completions server playing
// the four roles of the agent, told apart by the system prompts of
// serverPrompts (and the tools, for the executor): it plans one step,
// looks the topic up with the "lookup" tool, then reports the tool's
// result, finishes and answers with the findings it was given.
type researchServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

var serverPrompts = planexec.Prompts{
	Planner:    "ROLE=planner Q={input}",
	Refine:     "ROLE=refinery F={findings}",
	Synthesize: "ROLE=synthesizer F={findings}",
}

func newResearchServer(t *testing.T) *researchServer {
	t.Helper()
	s := &researchServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *researchServer) serve(w http.ResponseWriter, r *http.Request) {
	body, ok := openaitest.ReadRequest(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()

	msgs := body["messages"].([]any)
	system, _ := msgs[0].(map[string]any)["content"].(string)
	var result string
	for _, m := range msgs {
		if mm := m.(map[string]any); mm["role"] == "tool" && mm["tool_call_id"] == "call_abc" {
			result, _ = mm["content"].(string)
		}
	}
	var reply llm.Reply
	switch {
	case body["tools"] != nil && result == "":
		reply = llm.Reply{ToolCalls: []llms.ToolCall{{ID: "call_abc", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "lookup", Arguments: `{"topic":"caches"}`}}}}
	case body["tools"] != nil:
		reply = llm.Reply{Text: "The lookup says: " + result}
	case strings.HasPrefix(system, "ROLE=planner"):
		reply = llm.Reply{Text: "Plan:\n```json\n[\"Look up caches\"]\n```"}
	case strings.HasPrefix(system, "ROLE=refinery"):
		reply = llm.Reply{Text: `{"decision": "FINISH", "reason": "the lookup answers it"}`}
	case strings.HasPrefix(system, "ROLE=synthesizer"):
		_, findings, _ := strings.Cut(system, "F=")
		reply = llm.Reply{Text: "# Answer\n" + findings}
	default:
		http.Error(w, "unknown role", http.StatusBadRequest)
		return
	}
	openaitest.WriteReply(w, body, "c", reply)
}

func (s *researchServer) requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

func TestOpenAICompatibleServerRunsThePlanWithToolCalls(t *testing.T) {
	srv := newResearchServer(t)
	model, err := llm.New(t.Context(), "openai-compatible:test-model@"+srv.URL+"/v1", llm.WithMaxAttempts(1))
	require.NoError(t, err)
	var lib library
	g, err := planexec.New(model, []tools.Tool{lib.tool()}, planexec.WithPrompts(serverPrompts))
	require.NoError(t, err)

	out, err := g.Invoke(t.Context(), planexec.Input("How do caches work?"))
	require.NoError(t, err)

	finding := "fact about caches\n---\nThe lookup says: fact about caches"
	require.Equal(t, map[string]string{"step_1: Look up caches": finding}, out.Findings.Get())
	require.Equal(t, "# Answer\n### step_1: Look up caches\n"+finding, out.Response.Get())
	require.Equal(t, []string{"caches"}, lib.got())

	// planner, executor (tool call), executor (answer), refinery,
	// synthesizer; the executor's second request carries the call and
	// its result.
	var roles [][]string
	for _, body := range srv.requests() {
		var rs []string
		for _, m := range body["messages"].([]any) {
			rs = append(rs, m.(map[string]any)["role"].(string))
		}
		roles = append(roles, rs)
	}
	require.Empty(t, cmp.Diff([][]string{
		{"system", "user"},
		{"system", "user"},
		{"system", "user", "assistant", "tool"},
		{"system", "user"},
		{"system", "user"},
	}, roles))
}

func TestTelemetryInstrumentComposes(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })
	var lib library
	model := llm.NewScripted(plan("Look up caches"), lookup("c1", "caches"), text("found"),
		decide(planexec.Finish, "ok"), text("answer"))
	g, err := planexec.New(model, []tools.Tool{lib.tool()},
		planexec.WithCompileOptions(telemetry.Instrument(tp)))
	require.NoError(t, err)

	out, _, err := run(t, g, "q")
	require.NoError(t, err)
	require.Equal(t, "answer", out.Response.Get())

	count := map[string]int{}
	for _, s := range exp.GetSpans() {
		count[s.Name]++
	}
	require.Equal(t, map[string]int{
		"invoke_agent planexec":     1,
		"graph.node planner":        1,
		"graph.node setup_executor": 1,
		"graph.node executor":       2,
		"graph.node tools":          1,
		"graph.node aggregate":      1,
		"graph.node refinery":       1,
		"graph.node synthesizer":    1,
		"chat scripted":             5,
		"execute_tool lookup":       1,
	}, count)
}
