package coder

import (
	"github.com/agentgraph/agentgraph/agent/middleware"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/state"
)

// State is the state of the coder graph. Its fields fall in three groups:
// the request and its outcome, the working memory of the current request
// (reset by [Agent.Ask] before each request), and the session memory of
// the thread (kept across requests by the checkpointer).
type State struct {
	// Thread is the conversation's thread, as given to Ask.
	Thread state.Value[string]
	// Request is the user's request.
	Request state.Value[string]
	// Turn counts the requests of the thread, this one included.
	Turn state.Value[int]

	// Route is the route node's decision: the intent and why.
	Route state.Value[Decision]
	// Files are the workspace files the request works on (relative,
	// slash-separated): chosen by plan_read, or named by an edit request.
	Files state.Value[[]string]
	// Answer is what the agent tells the user.
	Answer state.Value[string]
	// Outcome classifies how the request ended (see the Outcome…
	// constants).
	Outcome state.Value[string]
	// Cached reports an answer that came from the query cache.
	Cached state.Value[bool]
	// Edits are the edits applied or refused by the last edit attempt.
	Edits state.Value[[]EditResult]
	// Attempt counts the edit attempts of the request.
	Attempt state.Value[int]
	// Attempts are the failed attempts of the auto-fix loop so far, for
	// the next attempt's prompt.
	Attempts state.Value[[]AttemptRecord]
	// Tests is the result of the last test run of the request (nil when
	// none ran).
	Tests state.Value[*TestOutcome]
	// Baseline records the project's tests before the request's first
	// edit (nil when none was taken): the auto-fix loop's test runs count
	// a test of it that was deleted, renamed or skipped as failing, so
	// that an edit cannot pass by removing the failing test.
	Baseline state.Value[*goals.Baseline]
	// Halted is set when a node failed for good: the graph goes to END.
	Halted state.Value[bool]

	// Memory is the working memory of the request: the node and step of
	// the last failure or the last node run, the file being worked on,
	// the failed attempts per node, the last error and the recent
	// feedback (at most middleware.MaxFeedback entries). It is the
	// working memory of package agent/middleware, whose HandleErrors
	// records node errors in it; the nodes add their own feedback.
	Memory state.Reduced[middleware.WorkingMemory, middleware.MemoryReducer]
	// Activity says what the current node is doing, for display ("edit
	// attempt 2 of 3: apply").
	Activity state.Value[string]

	// Session memory: kept by the checkpointer across the thread's
	// requests.
	//
	// FilesRead are the files read in this session, in the order first
	// read.
	FilesRead state.Value[[]string]
	// FileCache holds the contents of files read, by path; entries are
	// evicted oldest first beyond the agent's file-cache size, and an
	// edit drops the entry of the file it changes.
	FileCache state.Map[string, CachedFile]
	// History are the last question/answer pairs, oldest first.
	History state.Value[[]Exchange]
}

// RequestStart returns the writes that start request number turn of a
// thread: the turn, and the working memory and the last request's outcome
// emptied. [Agent.Input] is them plus the thread and the request; a
// program that drives the graph itself (a server that takes only the
// request from its client) applies them at the route node.
func RequestStart(turn int) State {
	var in State
	in.Turn.Set(turn)
	in.Route.Set(Decision{})
	in.Files.Set(nil)
	in.Answer.Set("")
	in.Outcome.Set("")
	in.Cached.Set(false)
	in.Edits.Set(nil)
	in.Attempt.Set(0)
	in.Attempts.Set(nil)
	in.Tests.Set(nil)
	in.Baseline.Set(nil)
	in.Halted.Set(false)
	in.Memory.Overwrite(middleware.WorkingMemory{})
	in.Activity.Set("")
	return in
}

// CachedFile is a file's content in the session's file cache.
type CachedFile struct {
	// Content is the file's text as the model is shown it (numbered
	// lines, see tools.FileRead).
	Content string `json:"content"`
	// Hash is the SHA-256 of Content, hex-encoded; of the whole file
	// when Content is its beginning only (a file over 200 KB).
	Hash string `json:"hash"`
	// Stat is the key of the file's metadata when it was read (size,
	// times, inode): a file whose key changed, or that had none, is read
	// again.
	Stat string `json:"stat,omitempty"`
	// Order orders the entries by when they were read, for eviction.
	Order int `json:"order"`
}

// Exchange is one question/answer pair of the session's history.
type Exchange struct {
	// Question is the request and Answer the answer (both shortened).
	Question string `json:"question"`
	Answer   string `json:"answer"`
	// Intent is the request's intent.
	Intent Intent `json:"intent"`
	// Files are the files the request read or changed.
	Files []string `json:"files,omitempty"`
}

// EditResult is one edit the edit node tried.
type EditResult struct {
	// Path is the file, as the model named it.
	Path string `json:"path"`
	// Kind is "patch" (replace old text) or "write" (whole file).
	Kind string `json:"kind"`
	// Applied reports whether it was made; Error says why not.
	Applied bool   `json:"applied"`
	Error   string `json:"error,omitempty"`
}

// AttemptRecord is a failed attempt of the auto-fix loop.
type AttemptRecord struct {
	// Attempt is its number, from 1.
	Attempt int `json:"attempt"`
	// Summary is what the model said it changed.
	Summary string `json:"summary,omitempty"`
	// Edits are the edits it tried.
	Edits []EditResult `json:"edits,omitempty"`
	// Failure is why it failed: the test failure, or the edits that could
	// not be applied.
	Failure string `json:"failure"`
}

// TestOutcome is the result of a test run of the auto-fix loop.
type TestOutcome struct {
	// Goal is the goal that ran them (go-test, pytest, …).
	Goal string `json:"goal"`
	// Passed reports that the check succeeded.
	Passed bool `json:"passed"`
	// Reason is the check's one-line summary.
	Reason string `json:"reason"`
	// TimedOut reports that the test run was killed at its time limit.
	TimedOut bool `json:"timed_out,omitempty"`
	// NumPassed and NumFailed count tests.
	NumPassed int `json:"num_passed"`
	NumFailed int `json:"num_failed"`
	// Failure is the failure output shown to the model (truncated).
	Failure string `json:"failure,omitempty"`
}

// Outcomes of a request, as State.Outcome and Result.Outcome hold them.
const (
	// OutcomeAnswered: a question was answered (read) or a custom intent
	// ran.
	OutcomeAnswered = "answered"
	// OutcomeRemembered: a preference was saved (profile).
	OutcomeRemembered = "remembered"
	// OutcomeEdited: edits were applied and there are no tests to run.
	OutcomeEdited = "edited"
	// OutcomeTestsPass: edits were applied and the tests pass.
	OutcomeTestsPass = "tests_pass"
	// OutcomeTestsFail: the auto-fix loop ran out of attempts with the
	// tests still failing, or no edit could be applied.
	OutcomeTestsFail = "tests_fail"
	// OutcomeNoEdit: no edit could be applied (no tests to run).
	OutcomeNoEdit = "no_edit"
	// OutcomeCommand: a command ran (whatever its exit code), or the
	// tests ran to the end.
	OutcomeCommand = "command"
	// OutcomeTimedOut: the command, or the test run, of a run_command
	// request was killed at its time limit: it did not do what was asked.
	OutcomeTimedOut = "timed_out"
	// OutcomeRefused: the request named a path outside the workspace.
	OutcomeRefused = "refused"
	// OutcomeError: a node failed for good, or none of the files a
	// question is about could be read; Answer says what failed.
	OutcomeError = "error"
)
