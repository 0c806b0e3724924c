package coder_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/agent/middleware"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/store"
)

const sumQuestion = "what does Sum do?"

func TestQueryCacheHitThenInvalidatedOnlyByEditingAFileTheAnswerRead(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(
		text("Sum adds the numbers."),     // 1: the first answer
		write("notes.txt", "unrelated\n"), // 2: edit an unrelated file
		patch("calc.go", "// Sum returns the sum of xs.", "// Sum returns the total of xs.", "reworded"), // 3
		text("Sum returns the total."), // 4: the answer after calc.go changed
	)
	a := newAgent(t, model, dir, coder.WithAutoFix(false))

	first, err := a.Ask(t.Context(), "t1", sumQuestion)
	require.NoError(t, err)
	require.Equal(t, "Sum adds the numbers.", first.Answer)
	require.False(t, first.Cached)
	require.Equal(t, []string{"calc.go", "calc_test.go"}, first.Files)

	evs, again := customEvents(t, a, "t1", sumQuestion)
	require.True(t, again.Cached)
	require.Equal(t, "Sum adds the numbers.", again.Answer)
	require.Contains(t, evs, any(coder.MemoryHit{Memory: coder.MemoryQueryCache, Detail: "calc.go, calc_test.go", Count: 1}))
	require.Contains(t, evs, any(coder.MemoryHit{Memory: coder.MemoryFileCache, Detail: "calc.go", Count: 1}))
	require.Equal(t, 3, model.Remaining(), "a cache hit calls no model")

	res, err := a.Ask(t.Context(), "t1", "create notes.txt")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeEdited, res.Outcome)
	again, err = a.Ask(t.Context(), "t1", sumQuestion)
	require.NoError(t, err)
	require.True(t, again.Cached, "an edit of a file the answer did not read keeps it")

	res, err = a.Ask(t.Context(), "t1", "change the comment of Sum in calc.go")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeEdited, res.Outcome)
	require.Contains(t, feedback(res), "edit memory: invalidated 1 cached answer(s) that read calc.go")
	entries, err := a.Memory().CachedAnswers(t.Context())
	require.NoError(t, err)
	require.Empty(t, entries)

	after, err := a.Ask(t.Context(), "t1", sumQuestion)
	require.NoError(t, err)
	require.False(t, after.Cached)
	require.Equal(t, "Sum returns the total.", after.Answer)
	require.Zero(t, model.Remaining())
}

func TestQueryCacheMissesWhenAFileChangesOutsideTheAgent(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(text("one"), text("two"))
	a := newAgent(t, model, dir)
	_, err := a.Ask(t.Context(), "t1", sumQuestion)
	require.NoError(t, err)
	writeFile(t, dir, "calc.go", buggySum+"\n// changed by hand, and longer\n")
	res, err := a.Ask(t.Context(), "t1", sumQuestion)
	require.NoError(t, err)
	require.False(t, res.Cached)
	require.Equal(t, "two", res.Answer)
}

func TestQueryCacheEvictsTheOldestEntries(t *testing.T) {
	a := newAgent(t, llm.NewScripted(), t.TempDir(), coder.WithQueryCacheSize(3))
	m := a.Memory()
	for i := 1; i <= 5; i++ {
		require.NoError(t, m.CacheAnswer(t.Context(), fmt.Sprint("k", i), fmt.Sprint("q", i), "a", []string{"f.go"}))
	}
	entries, err := m.CachedAnswers(t.Context())
	require.NoError(t, err)
	var keys []string
	for _, e := range entries {
		keys = append(keys, e.Key)
	}
	require.Equal(t, []string{"k5", "k4", "k3"}, keys)
}

func TestNodeLogKeepsExactlyTheLast1000Entries(t *testing.T) {
	a := newAgent(t, llm.NewScripted(), t.TempDir())
	m := a.Memory()
	for i := 1; i <= 1005; i++ {
		require.NoError(t, m.LogNode(t.Context(), coder.NodeLogEntry{Thread: "t", Node: fmt.Sprint("n", i)}))
	}
	log, err := m.NodeLog(t.Context())
	require.NoError(t, err)
	require.Len(t, log, 1000)
	require.Equal(t, 6, log[0].Seq)
	require.Equal(t, "n6", log[0].Node)
	require.Equal(t, 1005, log[999].Seq)
	// What a store holds is what NodeLog shows: nothing older is left.
	items, err := m.Store().Search(t.Context(), []string{"coder", "node_log"}, store.Limit(2000))
	require.NoError(t, err)
	require.Len(t, items, 1000)
}

func TestNodeLogRecordsEveryNodeOfARequest(t *testing.T) {
	dir := goSample(t)
	a := newAgent(t, llm.NewScripted(text("It adds.")), dir)
	_, err := a.Ask(t.Context(), "t1", sumQuestion)
	require.NoError(t, err)
	log, err := a.Memory().NodeLog(t.Context())
	require.NoError(t, err)
	var nodes []string
	for _, e := range log {
		require.Equal(t, "t1", e.Thread)
		require.Equal(t, 1, e.Turn)
		nodes = append(nodes, e.Node)
	}
	require.Equal(t, []string{"route", "plan_read", "read"}, nodes)
}

func TestWorkingMemoryIsResetBetweenRequests(t *testing.T) {
	dir := goSample(t)
	// The read node's model call fails three times: the request ends
	// with an error answer and a full working memory.
	model := llm.NewScripted(llm.Reply{Err: errBoom}, llm.Reply{Err: errBoom}, llm.Reply{Err: errBoom})
	a := newAgent(t, model, dir)
	res, err := a.Ask(t.Context(), "t1", sumQuestion)
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeError, res.Outcome)
	require.Equal(t, `Sorry, I could not complete the step "read": it failed 3 times. The last error was: model call: boom`, res.Answer)
	require.Equal(t, map[string]int{"read": 3}, res.Working.RetryCount)
	require.Contains(t, res.Working.LastError, "boom")
	require.Len(t, res.Working.Feedback, 3)

	res, err = a.Ask(t.Context(), "t1", "run echo hi")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeCommand, res.Outcome)
	require.Positive(t, res.Working.CurrentStep)
	require.Empty(t, cmp.Diff(middleware.WorkingMemory{
		CurrentNode: "run_command",
		Feedback:    []middleware.Feedback{{Node: "run_command", Kind: "tool", Text: "echo hi: exit code: 0"}},
	}, res.Working, cmpopts.IgnoreFields(middleware.WorkingMemory{}, "CurrentStep"),
		cmpopts.IgnoreFields(middleware.Feedback{}, "Step")))
}

func TestFeedbackKeepsTheLast20Entries(t *testing.T) {
	dir := goSample(t)
	// 4 edit attempts of 6 failing patches each: 24 feedback entries.
	var replies []llm.Reply
	for range 4 {
		r := patch("calc.go", "no such text", "x", "try")
		for range 5 {
			r.ToolCalls = append(r.ToolCalls, r.ToolCalls[0])
		}
		replies = append(replies, r)
	}
	a := newAgent(t, llm.NewScripted(replies...), dir, coder.WithMaxAttempts(4))
	res, err := a.Ask(t.Context(), "t1", "fix calc.go")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeTestsFail, res.Outcome)
	require.Len(t, res.Working.Feedback, middleware.MaxFeedback)
}

func TestSessionContinuesInANewAgentOnTheSameCheckpointerAndStore(t *testing.T) {
	dir := goSample(t)
	saver := checkpoint.NewMemory()
	st := store.NewMemory()

	first := newAgent(t, llm.NewScripted(text("Sum adds the numbers.")), dir,
		coder.WithCheckpointer(saver), coder.WithStore(st))
	_, err := first.Ask(t.Context(), "s1", sumQuestion)
	require.NoError(t, err)
	_, err = first.Ask(t.Context(), "s1", "remember that I prefer short answers")
	require.NoError(t, err)

	model := llm.NewScripted(text("It is in calc.go."))
	second := newAgent(t, model, dir, coder.WithCheckpointer(saver), coder.WithStore(st))
	evs, res := customEvents(t, second, "s1", "where is Sum defined?")
	require.Equal(t, "It is in calc.go.", res.Answer)

	// The session's file cache, history and the persistent preferences
	// carried over.
	require.Contains(t, evs, any(coder.MemoryHit{Memory: coder.MemoryFileCache, Detail: "calc.go", Count: 1}))
	require.Contains(t, evs, any(coder.MemoryHit{Memory: coder.MemoryHistory, Count: 2}))
	require.Contains(t, evs, any(coder.MemoryHit{Memory: coder.MemoryPreferences, Detail: "I prefer short answers", Count: 1}))
	prompt := messagesText(model.Calls()[0])
	require.Contains(t, prompt, "Q: what does Sum do?\nA: Sum adds the numbers.")
	require.Contains(t, prompt, "- I prefer short answers")

	snap, err := second.Graph().GetState(t.Context(), graphThread("s1"))
	require.NoError(t, err)
	require.Equal(t, 3, snap.Values.Turn.Get())
	require.Equal(t, []string{"calc.go", "calc_test.go"}, snap.Values.FilesRead.Get())
	require.Len(t, snap.Values.History.Get(), 3)
}

func TestHistoryKeepsTheLastExchanges(t *testing.T) {
	dir := goSample(t)
	a := newAgent(t, llm.NewScripted(), dir, coder.WithHistoryLimit(2))
	for i := range 4 {
		_, err := a.Ask(t.Context(), "t1", fmt.Sprintf("remember that I prefer style %d", i))
		require.NoError(t, err)
	}
	snap, err := a.Graph().GetState(t.Context(), graphThread("t1"))
	require.NoError(t, err)
	var qs []string
	for _, e := range snap.Values.History.Get() {
		qs = append(qs, e.Question)
	}
	require.Equal(t, []string{"remember that I prefer style 2", "remember that I prefer style 3"}, qs)
}

func TestFileCacheEvictsTheOldestFiles(t *testing.T) {
	dir := goSample(t)
	for i := range 4 {
		writeFile(t, dir, fmt.Sprintf("f%d.txt", i), "file\n")
	}
	model := llm.NewScripted(text("a"), text("b"), text("c"), text("d"))
	a := newAgent(t, model, dir, coder.WithFileCacheSize(2))
	for i := range 4 {
		_, err := a.Ask(t.Context(), "t1", fmt.Sprintf("explain f%d.txt", i))
		require.NoError(t, err)
	}
	snap, err := a.Graph().GetState(t.Context(), graphThread("t1"))
	require.NoError(t, err)
	var cached []string
	for p := range snap.Values.FileCache.Get() {
		cached = append(cached, p)
	}
	require.ElementsMatch(t, []string{"f2.txt", "f3.txt"}, cached)
}

func TestProfileSavesAPreferenceRecalledByLaterPrompts(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(patch("calc.go", "i := 1", "i := 0", "fixed"))
	a := newAgent(t, model, dir)
	res, err := a.Ask(t.Context(), "t1", "Remember that I prefer table-driven tests.")
	require.NoError(t, err)
	require.Equal(t, coder.IntentProfile, res.Route.Intent)
	require.Equal(t, "Noted. I will remember: I prefer table-driven tests", res.Answer)
	prefs, err := a.Memory().Preferences(t.Context())
	require.NoError(t, err)
	require.Len(t, prefs, 1)
	require.Equal(t, "I prefer table-driven tests", prefs[0].Text)

	_, err = a.Ask(t.Context(), "t1", "fix the bug in calc.go")
	require.NoError(t, err)
	require.Contains(t, messagesText(model.Calls()[0]), "- I prefer table-driven tests")
	mlog, err := a.Memory().MemoryLog(t.Context())
	require.NoError(t, err)
	require.Equal(t, "preference_saved", mlog[0].Action)
}

// hashEmbedder embeds a text as counts of a few keywords: enough for a
// store index to rank preferences by topic.
type keywordEmbedder struct{}

var keywords = []string{"test", "comment", "indent", "commit"}

func (keywordEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, len(keywords)+1)
		v[len(keywords)] = 0.01
		for j, k := range keywords {
			v[j] = float32(strings.Count(strings.ToLower(t), k))
		}
		out[i] = v
	}
	return out, nil
}

func TestPreferencesAreRecalledBySemanticSearchWhenTheStoreHasAnIndex(t *testing.T) {
	dir := goSample(t)
	st := store.NewMemory(store.WithIndex(store.IndexConfig{Embedder: keywordEmbedder{}, Dims: len(keywords) + 1}))
	model := llm.NewScripted(text("ok"))
	a := newAgent(t, model, dir, coder.WithStore(st), coder.WithPreferenceRecall(1))
	for _, p := range []string{"remember that I prefer tabs to indent", "remember that I prefer table-driven tests",
		"remember that I prefer short commit messages"} {
		_, err := a.Ask(t.Context(), "t1", p)
		require.NoError(t, err)
	}
	evs, _ := customEvents(t, a, "t1", "what does the test of Sum check?")
	require.Contains(t, evs, any(coder.MemoryHit{Memory: coder.MemoryPreferences, Detail: "I prefer table-driven tests", Count: 1}))
}

func TestFollowUpQuestionsReuseTheFilesOfThePreviousRequest(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(text("It adds."), text("An int."))
	a := newAgent(t, model, dir)
	_, err := a.Ask(t.Context(), "t1", sumQuestion)
	require.NoError(t, err)
	evs, res := customEvents(t, a, "t1", "and what does it return?")
	require.Equal(t, "An int.", res.Answer)
	require.Equal(t, []string{"calc.go", "calc_test.go"}, res.Files)
	require.Contains(t, evs, any(coder.MemoryHit{Memory: coder.MemoryHistory,
		Detail: "files of the previous request: calc.go, calc_test.go", Count: 2}))
	require.Zero(t, model.Remaining(), "no model call picked the files")
}

// An answer to a question about the conversation depends on the session's
// history, which the cache key does not hold: another session asking the
// same words must not get it.
func TestAnAnswerAboutTheConversationIsNeverCached(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(
		text("Sum adds the numbers."),
		text("You asked what Sum does."),            // session t1's answer, from its history
		text("You have not asked anything before."), // session t2's own answer
	)
	a := newAgent(t, model, dir)
	_, err := a.Ask(t.Context(), "t1", sumQuestion)
	require.NoError(t, err)
	const about = "what did I ask you before about calc.go?"
	first, err := a.Ask(t.Context(), "t1", about)
	require.NoError(t, err)
	require.Equal(t, "You asked what Sum does.", first.Answer)
	other, err := a.Ask(t.Context(), "t2", about)
	require.NoError(t, err)
	require.False(t, other.Cached)
	require.Equal(t, "You have not asked anything before.", other.Answer)
	entries, err := a.Memory().CachedAnswers(t.Context())
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the standalone question's answer is cached")
}

// The preferences an answer was given under are part of its key: a new
// preference that the question recalls makes the model answer again.
func TestANewPreferenceMakesTheCacheAnswerAgain(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(text("Sum adds the numbers."), text("Adds them."))
	a := newAgent(t, model, dir)
	_, err := a.Ask(t.Context(), "t1", sumQuestion)
	require.NoError(t, err)
	_, err = a.Ask(t.Context(), "t1", "remember that I prefer short answers")
	require.NoError(t, err)
	res, err := a.Ask(t.Context(), "t1", sumQuestion)
	require.NoError(t, err)
	require.False(t, res.Cached)
	require.Equal(t, "Adds them.", res.Answer)
	again, err := a.Ask(t.Context(), "t1", sumQuestion)
	require.NoError(t, err)
	require.True(t, again.Cached, "under the same preferences the new answer is served")
	require.Equal(t, "Adds them.", again.Answer)
}

// An edit that keeps a file's size and modification time (cp -p, rsync -a,
// touch -r) still reaches the model: the file cache compares change times
// and inodes too, and does not trust a file changed within the racy window.
func TestTheFileCacheSeesAnEditThatKeepsSizeAndTime(t *testing.T) {
	for _, window := range []time.Duration{0, 2 * time.Second} {
		t.Run(window.String(), func(t *testing.T) {
			defer coder.SetRacyWindow(window)()
			dir := goSample(t)
			model := llm.NewScripted(text("first"), text("second"))
			a := newAgent(t, model, dir)
			_, err := a.Ask(t.Context(), "t1", sumQuestion)
			require.NoError(t, err)
			path := filepath.Join(dir, "calc.go")
			fi, err := os.Stat(path)
			require.NoError(t, err)
			old, err := os.ReadFile(path)
			require.NoError(t, err)
			changed := strings.Replace(string(old), "sum of xs", "SUM OF XS", 1)
			require.Len(t, changed, len(old))
			require.NoError(t, os.WriteFile(path, []byte(changed), fi.Mode()))
			require.NoError(t, os.Chtimes(path, fi.ModTime(), fi.ModTime()))
			res, err := a.Ask(t.Context(), "t1", sumQuestion)
			require.NoError(t, err)
			require.False(t, res.Cached, "the answer read the old calc.go")
			require.Equal(t, "second", res.Answer)
			require.Contains(t, messagesText(model.Calls()[1]), "SUM OF XS")
		})
	}
}

// A follow-up uses the files of the latest earlier request that had some,
// also when a request without files came in between.
func TestAFollowUpFindsTheFilesOfTheLatestRequestThatHadSome(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(text("Sum adds the numbers."), text("It returns an int."))
	a := newAgent(t, model, dir)
	_, err := a.Ask(t.Context(), "t1", sumQuestion+" in calc.go")
	require.NoError(t, err)
	_, err = a.Ask(t.Context(), "t1", "remember that I prefer tabs")
	require.NoError(t, err)
	res, err := a.Ask(t.Context(), "t1", "and what does it return?")
	require.NoError(t, err)
	require.Contains(t, res.Files, "calc.go")
	require.Contains(t, messagesText(model.Calls()[1]), "func Sum", "the follow-up's prompt holds calc.go")
}

// A model provider refusing the request (HTTP 400: not retryable) is not
// worth running the node again: the user is told at once.
func TestAProviderRefusalIsAnsweredWithoutRunningTheNodeAgain(t *testing.T) {
	dir := goSample(t)
	refusal := &llm.Error{Model: "m", Attempts: 1, StatusCode: 400, Err: fmt.Errorf("bad request")}
	model := llm.NewScripted(llm.Reply{Err: refusal}, text("never used"))
	a := newAgent(t, model, dir)
	res, err := a.Ask(t.Context(), "t1", sumQuestion)
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeError, res.Outcome)
	require.Equal(t, 1, model.Remaining(), "one model call, not three")
}

func TestAnEmptyModelAnswerIsNotAnAnswer(t *testing.T) {
	dir := goSample(t)
	model := llm.NewScripted(text(""), text("  "), text("Sum adds the numbers."))
	a := newAgent(t, model, dir)
	res, err := a.Ask(t.Context(), "t1", sumQuestion)
	require.NoError(t, err)
	require.Equal(t, "Sum adds the numbers.", res.Answer, "the read node ran again after the empty answers")
	entries, err := a.Memory().CachedAnswers(t.Context())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "Sum adds the numbers.", entries[0].Answer)
}
