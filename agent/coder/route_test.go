package coder_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/llm"
)

func TestPatternsRouteRequestsWithoutTheModel(t *testing.T) {
	cases := []struct {
		request string
		intent  coder.Intent
	}{
		// compound and chatty requests (found by review)
		{"why does the build fail? fix it", coder.IntentEdit},
		{"where is Total used? rename it to Sum", coder.IntentEdit},
		{"Is there a test for Total? If not, add one.", coder.IntentEdit},
		{"run the tests and fix any failures", coder.IntentEdit},
		{"start by reading cart.go", coder.IntentRead},
		{"run through cart.go and explain it", coder.IntentRead},
		{"I like to understand how Total works", coder.IntentRead},
		{"how do I add a test for Total?", coder.IntentRead},
		// run_command
		{"run go test ./...", coder.IntentRunCommand},
		{"Run the tests", coder.IntentRunCommand},
		{"please run make build", coder.IntentRunCommand},
		{"execute ls -la", coder.IntentRunCommand},
		{"$ git status", coder.IntentRunCommand},
		{"run `npm test`", coder.IntentRunCommand},
		{"`go vet ./...`", coder.IntentRunCommand},
		{"go build ./...", coder.IntentRunCommand},
		{"git log --oneline -5", coder.IntentRunCommand},
		{"ls", coder.IntentRunCommand},
		{"pytest -x tests/test_api.py", coder.IntentRunCommand},
		{"can you run the linter", coder.IntentRunCommand},
		{"build the project", coder.IntentRunCommand},
		{"make test", coder.IntentRunCommand},
		{"cat calc.go", coder.IntentRunCommand},
		{"find . -name '*.go'", coder.IntentRunCommand},
		// profile
		{"remember that I prefer table-driven tests", coder.IntentProfile},
		{"Please remember I like short answers", coder.IntentProfile},
		{"remember: we use tabs for indentation", coder.IntentProfile},
		{"note that I always want docstrings", coder.IntentProfile},
		{"I prefer early returns over nested ifs", coder.IntentProfile},
		{"we always use testify for assertions", coder.IntentProfile},
		{"my preference is snake_case for Python", coder.IntentProfile},
		{"from now on, write commit messages in English", coder.IntentProfile},
		{"always add doc comments to exported functions", coder.IntentProfile},
		{"never use panics for errors", coder.IntentProfile},
		{"keep in mind that we deploy on Linux only", coder.IntentProfile},
		// edit
		{"fix the bug in calc.go", coder.IntentEdit},
		{"Fix the failing test", coder.IntentEdit},
		{"please fix TestSum", coder.IntentEdit},
		{"can you fix the off-by-one error in Sum?", coder.IntentEdit},
		{"add a Multiply function to calc.go", coder.IntentEdit},
		{"implement the Divide function", coder.IntentEdit},
		{"refactor parseConfig to return an error", coder.IntentEdit},
		{"rename Foo to Bar everywhere", coder.IntentEdit},
		{"change the default port to 8080", coder.IntentEdit},
		{"remove the unused imports from main.go", coder.IntentEdit},
		{"create a README.md for the project", coder.IntentEdit},
		{"write a test for Sum", coder.IntentEdit},
		{"make the Sum function faster", coder.IntentEdit},
		{"update the version in go.mod", coder.IntentEdit},
		{"could you optimize the loop in search.go", coder.IntentEdit},
		{"the handler crashes on empty input, please fix it", coder.IntentEdit},
		// read
		{"what does Sum do?", coder.IntentRead},
		{"What does the function parseConfig do", coder.IntentRead},
		{"how does the cache work?", coder.IntentRead},
		{"why is TestSum failing?", coder.IntentRead},
		{"where is the HTTP server started?", coder.IntentRead},
		{"which files handle authentication", coder.IntentRead},
		{"explain calc.go", coder.IntentRead},
		{"Describe the architecture of this project", coder.IntentRead},
		{"show me the main function", coder.IntentRead},
		{"summarize README.md", coder.IntentRead},
		{"find where Config is defined", coder.IntentRead},
		{"list the exported functions of calc.go", coder.IntentRead},
		{"does Sum handle negative numbers?", coder.IntentRead},
		{"is there a test for Divide?", coder.IntentRead},
		{"tell me about the retry logic", coder.IntentRead},
		{"how do I fix the failing build?", coder.IntentRead},
		{"walk me through the request flow", coder.IntentRead},
		{"and what does it return?", coder.IntentRead},
		{"so why is that slow", coder.IntentRead},
	}
	require.GreaterOrEqual(t, len(cases), 40)
	patterns := coder.DefaultPatterns()
	for _, c := range cases {
		t.Run(c.request, func(t *testing.T) {
			d, ok := coder.MatchPatterns(c.request, patterns)
			require.True(t, ok, "no pattern matched")
			require.Equal(t, c.intent, d.Intent, "pattern %s", d.Pattern)
			require.GreaterOrEqual(t, d.Confidence, coder.DefaultMinConfidence, "pattern %s", d.Pattern)
			require.Equal(t, coder.SourcePattern, d.Source)
		})
	}
}

func TestUnclearRequestsMatchNoConfidentPattern(t *testing.T) {
	for _, req := range []string{
		"the tests",
		"hmm, not sure about this",
		"calc.go",
		"something is off with the refactor",
		"go through the code with me",
	} {
		d, ok := coder.MatchPatterns(req, coder.DefaultPatterns())
		if ok {
			require.Less(t, d.Confidence, coder.DefaultMinConfidence, "%q matched %s", req, d.Pattern)
		}
	}
}

func chooseIntent(intent string) llm.Reply {
	return llm.Reply{ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{
		Name: "choose_intent", Arguments: `{"intent":"` + intent + `"}`}}}}
}

func TestModelClassifiesWhenNoPatternIsConfident(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(chooseIntent("run_command"), text(`{"command": "ls"}`))
	a := newAgent(t, model, dir)
	res, err := a.Ask(t.Context(), "t1", "the tests")
	require.NoError(t, err)
	require.Equal(t, coder.Decision{Intent: coder.IntentRunCommand, Confidence: 1, Source: coder.SourceModel,
		Reason: "the model classified the request as run_command"}, res.Route)
	require.Equal(t, coder.OutcomeCommand, res.Outcome)
	// The classifier was offered the intents as an enum.
	call := model.Calls()[0]
	require.Len(t, call.Options.Tools, 1)
	require.Contains(t, string(call.Options.Tools[0].Function.Parameters.(json.RawMessage)), `"enum":["read","edit","run_command","profile"]`)
}

func TestModelAnswerAsJSONOrBareWordIsAccepted(t *testing.T) {
	for _, answer := range []string{"```json\n{\"intent\": \"profile\"}\n```", "profile", "Profile."} {
		t.Run(answer, func(t *testing.T) {
			model := llm.NewScripted(text(answer))
			a := newAgent(t, model, goSample(t))
			res, err := a.Ask(t.Context(), "t1", "hmm, tabs please")
			require.NoError(t, err)
			require.Equal(t, coder.IntentProfile, res.Route.Intent)
			require.Equal(t, coder.SourceModel, res.Route.Source)
			require.Equal(t, coder.OutcomeRemembered, res.Outcome)
		})
	}
}

func TestModelAnswerThatIsNotAnIntentFallsBackToRead(t *testing.T) {
	dir := goSample(t)
	// The classifier answers nonsense; then the read path picks files
	// (the model is asked, as the request names none) and answers.
	model := llm.NewScripted(chooseIntent("dance"), text(`["calc.go"]`), text("It is a calculator."))
	a := newAgent(t, model, dir)
	res, err := a.Ask(t.Context(), "t1", "hmm, not sure about this")
	require.NoError(t, err)
	require.Equal(t, coder.Decision{Intent: coder.IntentRead, Source: coder.SourceFallback,
		Reason: `the model answered "dance", which is not an intent; used the default intent read`}, res.Route)
	require.Equal(t, "It is a calculator.", res.Answer)
	require.Equal(t, []string{"calc.go"}, res.Files)
	require.Contains(t, feedback(res), "route route: "+res.Route.Reason)
}

func TestModelProseAnswerFallsBackToTheLowConfidencePattern(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(text("I think the user wants something, hard to say."), text("Edited nothing."), text("x"), text("y"))
	a := newAgent(t, model, dir, coder.WithAutoFix(false), coder.WithMaxAttempts(1))
	res, err := a.Ask(t.Context(), "t1", "something is off with the refactor")
	require.NoError(t, err)
	require.Equal(t, coder.IntentEdit, res.Route.Intent)
	require.Equal(t, coder.SourceFallback, res.Route.Source)
	require.Equal(t, "fix-anywhere", res.Route.Pattern)
	require.Contains(t, res.Route.Reason, "not an intent")
}

func TestModelFailureFallsBackWithTheReason(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(llm.Reply{Err: errBoom}, text(`[]`), text("No files; here is my answer."))
	a := newAgent(t, model, dir)
	res, err := a.Ask(t.Context(), "t1", "hmm, not sure about this")
	require.NoError(t, err)
	require.Equal(t, coder.SourceFallback, res.Route.Source)
	require.Equal(t, coder.IntentRead, res.Route.Intent)
	require.Contains(t, res.Route.Reason, "boom")
	require.Equal(t, "No files; here is my answer.", res.Answer)
}

func TestCustomIntentIsOneNodeOnePatternOneRoute(t *testing.T) {
	dir := goSample(t)
	def := coder.IntentDef{
		Intent:      "greet",
		Description: "the user says hello",
		Patterns:    []coder.Pattern{coder.NewPattern("hello", "", `^(hello|hi)\b`, 0.95)},
		Run: func(_ context.Context, s coder.State) (string, error) {
			return "Hello! You said: " + s.Request.Get(), nil
		},
	}
	model := llm.NewScripted(chooseIntent("greet"))
	a := newAgent(t, model, dir, coder.WithIntent(def))

	res, err := a.Ask(t.Context(), "t1", "hi there")
	require.NoError(t, err)
	require.Equal(t, coder.Intent("greet"), res.Route.Intent)
	require.Equal(t, "hello", res.Route.Pattern)
	require.Equal(t, "Hello! You said: hi there", res.Answer)
	require.Equal(t, 1, model.Remaining(), "the pattern path calls no model")

	// The model classifier knows it too.
	res, err = a.Ask(t.Context(), "t1", "greetings, agent")
	require.NoError(t, err)
	require.Equal(t, coder.Intent("greet"), res.Route.Intent)
	require.Equal(t, coder.SourceModel, res.Route.Source)
	require.Contains(t, a.Graph().Mermaid(), "greet")
}

func TestInvalidIntentDefinitionsFailNew(t *testing.T) {
	run := func(context.Context, coder.State) (string, error) { return "", nil }
	for name, def := range map[string]coder.IntentDef{
		"reserved":  {Intent: "edit", Run: run},
		"node name": {Intent: "plan_read", Run: run},
		"empty":     {Intent: "", Run: run},
		"no run":    {Intent: "x"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := coder.New(llm.NewScripted(), t.TempDir(), coder.WithIntent(def))
			require.Error(t, err)
		})
	}
}

func TestAFailingCustomIntentIsAnsweredAfterThreeRuns(t *testing.T) {
	runs := 0
	def := coder.IntentDef{
		Intent:   "flaky",
		Patterns: []coder.Pattern{coder.NewPattern("flaky", "", `^flaky\b`, 0.95)},
		Run: func(context.Context, coder.State) (string, error) {
			runs++
			return "", errBoom
		},
	}
	a := newAgent(t, llm.NewScripted(), goSample(t), coder.WithIntent(def))
	res, err := a.Ask(t.Context(), "t1", "flaky thing")
	require.NoError(t, err)
	require.Equal(t, 3, runs)
	require.Equal(t, coder.OutcomeError, res.Outcome)
	require.Equal(t, map[string]int{"flaky": 3}, res.Working.RetryCount)
	require.Equal(t, `Sorry, I could not complete the step "flaky": it failed 3 times. The last error was: boom`, res.Answer)
}

func TestTheModelsReasonForItsChoiceIsShown(t *testing.T) {
	tests := []struct {
		name  string
		reply llm.Reply
		why   string
	}{
		{"tool call", llm.Reply{ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{Name: "choose_intent",
			Arguments: `{"intent": "profile", "reason": "the user states a preference"}`}}}}, "model: the user states a preference"},
		{"JSON", text(`{"intent": "profile", "reason": "a preference"}`), "model: a preference"},
		{"no reason", text(`profile`), "model"},
		{"control characters", llm.Reply{ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{Name: "choose_intent",
			Arguments: `{"intent": "profile", "reason": "a\u001b[2J\n\tpreference\u0007"}`}}}}, "model: a [2J preference"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(t, llm.NewScripted(tc.reply), goSample(t))
			res, err := a.Ask(t.Context(), "t1", "hmm, tabs please")
			require.NoError(t, err)
			require.Equal(t, coder.IntentProfile, res.Route.Intent)
			require.Equal(t, tc.why, res.Route.Why())
		})
	}
}
