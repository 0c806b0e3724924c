package coder_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/store"
)

func TestStreamReportsTheIntentToolActionsAndTheEnd(t *testing.T) {
	a := newAgent(t, llm.NewScripted(), goSample(t))
	evs, res := customEvents(t, a, "t1", "run echo hello")
	require.Equal(t, coder.OutcomeCommand, res.Outcome)
	require.Equal(t, "$ echo hello\nexit code: 0\n--- stdout ---\nhello\n", res.Answer)
	require.Equal(t, []any{
		coder.IntentChosen{Decision: coder.Decision{Intent: coder.IntentRunCommand, Confidence: 0.9, Source: coder.SourcePattern,
			Pattern: "run-command", Reason: "the request matches the pattern run-command"}},
		coder.ToolAction{Tool: "bash_exec", Target: "echo hello", OK: true, Result: "exit code: 0\n--- stdout ---\nhello\n"},
		coder.Finished{Intent: coder.IntentRunCommand, Outcome: coder.OutcomeCommand},
	}, evs)
}

func TestEventsRoundTripThroughTheBridge(t *testing.T) {
	a := newAgent(t, llm.NewScripted(), goSample(t))
	bus := events.NewBus()
	defer bus.Close()
	sub := bus.Subscribe(t.Context())
	var got []events.Kind
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev, err := range sub.Events() {
			if err != nil {
				continue
			}
			if strings.HasPrefix(string(ev.Kind()), "coder.") {
				got = append(got, ev.Kind())
			}
			if ev.Kind() == events.KindRunEnded {
				return
			}
		}
	}()
	require.NoError(t, events.Bridge(t.Context(), bus, "run-1", a.Stream(t.Context(), "t1", "remember that I prefer tabs")))
	wg.Wait()
	require.Equal(t, []events.Kind{coder.KindIntentChosen, coder.KindFinished}, got)
}

func TestEmptyRequestIsAnsweredWithoutAModel(t *testing.T) {
	model := llm.NewScripted()
	a := newAgent(t, model, goSample(t))
	res, err := a.Ask(t.Context(), "t1", "   ")
	require.NoError(t, err)
	require.Equal(t, "Nothing to do: the request is empty.", res.Answer)
	require.Empty(t, model.Calls())
}

func TestAskNeedsAThread(t *testing.T) {
	a := newAgent(t, llm.NewScripted(), goSample(t))
	_, err := a.Ask(t.Context(), "", "what does Sum do?")
	require.Error(t, err)
}

func TestCancelledContextFailsTheRequest(t *testing.T) {
	a := newAgent(t, llm.NewScripted(text("x")), goSample(t))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := a.Ask(ctx, "t1", "what does Sum do?")
	require.ErrorIs(t, err, context.Canceled)
}

func TestPromptsAreTruncatedKeepingTheBeginningOfFiles(t *testing.T) {
	dir := goSample(t)
	big := "// HEAD of the big file\n" + strings.Repeat("// filler line of the big file\n", 2000) + "// TAIL of the big file\n"
	writeFile(t, dir, "big.go", "package calc\n"+big)
	model := llm.NewScripted(text("ok"))
	a := newAgent(t, model, dir, coder.WithMaxPromptChars(5000))
	_, err := a.Ask(t.Context(), "t1", "explain big.go and calc.go")
	require.NoError(t, err)
	call := model.Calls()[0]
	n := 0
	for _, m := range call.Messages {
		n += len([]rune(m.Text()))
	}
	require.LessOrEqual(t, n, 5000)
	prompt := messagesText(call)
	require.Contains(t, prompt, "HEAD of the big file")
	require.NotContains(t, prompt, "TAIL of the big file")
	require.Contains(t, prompt, "func Sum(xs []int) int", "the small file is shown whole")
}

func TestCorruptedMemoryItemsAreIgnored(t *testing.T) {
	dir := goSample(t)
	st := store.NewMemory()
	ctx := t.Context()
	require.NoError(t, st.Put(ctx, []string{"coder", "preferences"}, "bad", map[string]any{"text": 42}))
	require.NoError(t, st.Put(ctx, []string{"coder", "counters"}, "node_log", map[string]any{"next": "many"}))
	model := llm.NewScripted(text("answer"))
	a := newAgent(t, model, dir, coder.WithStore(st))
	// A cache entry under the key the question will have, with a non-string answer.
	res, err := a.Ask(ctx, "t1", "what does Sum do?")
	require.NoError(t, err)
	require.Equal(t, "answer", res.Answer)
	entries, err := a.Memory().CachedAnswers(ctx)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.NoError(t, st.Put(ctx, []string{"coder", "query_cache"}, entries[0].Key, map[string]any{"answer": []any{1}}))
	model2 := llm.NewScripted(text("fresh"))
	a2 := newAgent(t, model2, dir, coder.WithStore(st))
	res, err = a2.Ask(ctx, "t2", "what does Sum do?")
	require.NoError(t, err)
	require.Equal(t, "fresh", res.Answer)
	require.False(t, res.Cached)
	prefs, err := a2.Memory().Preferences(ctx)
	require.NoError(t, err)
	require.Empty(t, prefs)
}

func TestConcurrentRequestsOnDifferentThreads(t *testing.T) {
	dir := goSample(t)
	var replies []llm.Reply
	for range 8 {
		replies = append(replies, text("answer"))
	}
	a := newAgent(t, llm.NewScripted(replies...), dir)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = a.Ask(t.Context(), fmt.Sprint("t", i), fmt.Sprintf("explain calc.go, part %d", i))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	log, err := a.Memory().NodeLog(t.Context())
	require.NoError(t, err)
	require.Len(t, log, 8*3)
}

func TestGraphHasTheIntentRoutes(t *testing.T) {
	a := newAgent(t, llm.NewScripted(), t.TempDir())
	m := a.Graph().Mermaid()
	for _, want := range []string{"route", "profile", "plan_read", "read", "edit", "test", "run_command"} {
		require.Contains(t, m, want)
	}
}

func TestCommandsAreKilledAtTheTimeout(t *testing.T) {
	a := newAgent(t, llm.NewScripted(), goSample(t), coder.WithCommandTimeout(time.Second))
	res, err := a.Ask(t.Context(), "t1", "run sleep 30")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeTimedOut, res.Outcome, "a command killed at its time limit did not do what was asked")
	require.Contains(t, res.Answer, "timed out after 1s")
}

func TestRunCommandAsksTheModelForACommandTheRequestDoesNotSpellOut(t *testing.T) {
	model := llm.NewScripted(text(`{"command": "echo from-the-model"}`))
	a := newAgent(t, model, goSample(t))
	res, err := a.Ask(t.Context(), "t1", "run the greeting script")
	require.NoError(t, err)
	require.Equal(t, "$ echo from-the-model\nexit code: 0\n--- stdout ---\nfrom-the-model\n", res.Answer)
}

func TestRunTheTestsReportsTheTestResult(t *testing.T) {
	a := newAgent(t, llm.NewScripted(), goSample(t))
	res, err := a.Ask(t.Context(), "t1", "run the tests")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeCommand, res.Outcome)
	require.False(t, res.Tests.Passed)
	require.Contains(t, res.Answer, "Tests fail (go-test)")
	require.Contains(t, res.Answer, "Sum = 5, want 6")
}

// A file over file_read's 200 KB limit is not left out of the prompt: its
// beginning is shown, within the 50,000 characters of the default prompt
// limit; and an answer that read it is not served from the cache after
// the file changes past what was shown.
func TestAFileOverTheReadLimitIsShownByItsBeginning(t *testing.T) {
	dir := goSample(t)
	head := "// HEAD of the big file\n"
	filler := strings.Repeat("// filler line of the big file, long enough to add up quickly\n", 4000)
	writeFile(t, dir, "big.txt", head+filler+"// TAIL of the big file\n")
	model := llm.NewScripted(text("first answer"), text("second answer"))
	a := newAgent(t, model, dir)

	res, err := a.Ask(t.Context(), "t1", "explain big.txt")
	require.NoError(t, err)
	require.Equal(t, "first answer", res.Answer)
	require.Equal(t, []string{"big.txt"}, res.Files)
	call := model.Calls()[0]
	n := 0
	for _, m := range call.Messages {
		n += len([]rune(m.Text()))
	}
	require.LessOrEqual(t, n, coder.DefaultMaxPromptChars)
	require.Greater(t, n, coder.DefaultMaxPromptChars/2, "the file fills the prompt")
	prompt := messagesText(call)
	require.Contains(t, prompt, "HEAD of the big file")
	require.NotContains(t, prompt, "TAIL of the big file")

	res, err = a.Ask(t.Context(), "t2", "explain big.txt")
	require.NoError(t, err)
	require.True(t, res.Cached, "the same question on the same file")

	writeFile(t, dir, "big.txt", head+filler+"// TAIL of the big file, changed\n")
	res, err = a.Ask(t.Context(), "t3", "explain big.txt")
	require.NoError(t, err)
	require.False(t, res.Cached, "the file changed past the part shown")
	require.Equal(t, "second answer", res.Answer)
}

// A question about files none of which can be read (here a binary file)
// is answered with why, without a model call: the model is not asked to
// answer without them.
func TestAQuestionAboutUnreadableFilesIsNotAnsweredBlind(t *testing.T) {
	dir := goSample(t)
	writeFile(t, dir, "data.bin", "\x00\x01\x02 not text")
	model := llm.NewScripted() // any model call fails the test
	a := newAgent(t, model, dir)
	res, err := a.Ask(t.Context(), "t1", "what is in data.bin?")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeError, res.Outcome, res.Answer)
	require.Contains(t, res.Answer, "I could not read the files this question is about")
	require.Contains(t, res.Answer, "data.bin: file_read: data.bin looks like a binary file")
	require.Empty(t, model.Calls())
}

// A command that exits non-zero is still a command that ran.
func TestACommandThatFailsEndsAsACommand(t *testing.T) {
	a := newAgent(t, llm.NewScripted(), goSample(t), coder.WithCommandTimeout(time.Second))
	_, res := customEvents(t, a, "t1", "run false")
	require.Equal(t, coder.OutcomeCommand, res.Outcome, res.Answer)
}
