// Package coder builds the intent-routed coding agent: a graph that
// classifies each request into an intent and sends it down that intent's
// path, with three tiers of memory and an auto-fix loop after edits.
//
//	START → route ─┬─→ profile ─────────→ END
//	               ├─→ plan_read → read ─→ END
//	               ├─→ edit ⇄ test ──────→ END   (the auto-fix loop)
//	               └─→ run_command ──────→ END
//
// [New] builds an [Agent] on a model and a workspace directory. Its file
// tools are confined to it (see package tools); its commands, and the
// tests the auto-fix loop runs, run in it with a timeout, and in the
// bubblewrap sandbox where the machine has one
// (tools.SandboxStatus) — unconfined where it has none, unless
// WithToolOptions(tools.WithSandbox(tools.SandboxRequired)) makes them
// fail there instead. [Agent.Ask] runs one request on a conversation
// thread and returns its [Result]:
//
//	a, err := coder.New(model, dir,
//		coder.WithStore(st),              // persistent memory (a SQLite store, say)
//		coder.WithCheckpointer(saver))    // session memory, per thread
//	res, err := a.Ask(ctx, "session-1", "what does Sum do in calc.go?")
//	fmt.Println(res.Route.Intent, res.Route.Why(), res.Answer)
//
// # Routing
//
// The route node first matches the request against [Pattern]s — regular
// expressions with an intent and a confidence, a fast path that costs no
// model call ([DefaultPatterns]: "run …", "remember that I prefer …",
// "what does X do", "fix …" and more). When no pattern reaches the
// minimum confidence ([WithMinConfidence]), the model classifies the
// request with a constrained answer: a call of the choose_intent tool whose
// argument is an enum of the registered intents (a JSON object
// {"intent": …} or a bare intent name in the text is accepted too). An
// answer that names no registered intent falls back to [IntentRead] (or to
// the best low-confidence pattern), and the [Decision] records why. The
// decision is in the state (State.Route) and in an [IntentChosen] event.
//
// # Adding an intent
//
// An intent is one node, one pattern entry and one route entry. The
// built-in intents are registered the same way ([Builtins]); a new one is
// an [IntentDef] given to [WithIntent], whose Run is the node (it returns
// the answer to the user) and whose Patterns are its fast-path entries:
//
//	explain := coder.IntentDef{
//		Intent:      "git_log",
//		Description: "show the recent history of the repository",
//		Patterns: []coder.Pattern{coder.NewPattern("git-log", "git_log",
//			`^(show|list) (the )?(recent )?(commits|history)\b`, 0.9)},
//		Run: func(ctx context.Context, s coder.State) (string, error) {
//			return recentCommits(ctx, s.Request.Get())
//		},
//	}
//	a, err := coder.New(model, dir, coder.WithIntent(explain))
//
// The model classifier is told about the new intent through its
// Description, and the route node's conditional edge gains the entry
// git_log → git_log; the node goes to END.
//
// # Memory
//
// Working memory is the state of the current request — the node and step
// it is at, the file it works on, the failed attempts per node, the last
// error and the feedback history (at most middleware.MaxFeedback entries)
// — in State.Memory, the working memory of package agent/middleware
// (middleware.WorkingMemory), reset by [Agent.Ask] at the start of every
// request, with State.Activity saying what the current node is doing.
//
// Session memory is the thread's state, saved by the checkpointer: the
// files read, a cache of their contents (evicted oldest first beyond
// [WithFileCacheSize]) and the last question/answer pairs
// ([WithHistoryLimit], default 10) with the files each one used, which a
// follow-up ("and what does it return?") reads again. A new process that
// asks on the same thread with the same checkpointer continues the
// conversation.
//
// Persistent memory is a store.Store given with [WithStore] (an in-memory
// store by default; the package imports no database driver — the program
// opens the store): the user's preferences (the profile intent writes
// them, the read and edit prompts include them), a query cache keyed by a
// hash of the question, of the contents of the files the answer read
// and of the preferences it was given under (so an edit to a file
// invalidates exactly the answers that read it; [WithQueryCacheSize]
// entries, oldest evicted first; a request that refers to the
// conversation — "and what does it return?", "what did I ask before?" —
// depends on the session's history and is never cached, so that no
// answer crosses from one session to another), a node log capped
// at [WithLogLimit] entries (1,000 by default, oldest evicted) and a
// memory log of what the agent remembered, recalled and forgot. See
// [Memory].
//
// Prompts are truncated to [WithMaxPromptChars] characters (50,000 by
// default), keeping the beginning of each file.
//
// # The auto-fix loop
//
// The edit node works on the files the request names, or that define or
// mention the identifiers it names; when it names none the agent can
// find (nor does a follow-up of an earlier request), the model picks them
// from the project's listing, as for a question, and sees them before it
// edits.
//
// After an edit, when the workspace has tests (goals.Detect finds a test
// goal: go-test, pytest, …), the test node runs them with that goal's
// check. The tests are recorded before the request's first edit is
// applied (a goals.Baseline, in State.Baseline), so that a test of that
// record which an edit deleted, renamed or skipped counts as failing: an
// edit cannot make the tests pass by removing the failing one. A request
// that itself asks to delete, rename or skip tests takes no record. When they fail, the edit node runs again with the files re-read,
// the failure and the previous attempts in its prompt — and, after
// repeated failures, a hint to try a different approach — up to
// [WithMaxAttempts] edit attempts in all (3 by default); then the run
// ends and the [Result] says honestly that the tests still fail.
//
// # Errors
//
// Every node is wrapped in middleware.HandleErrors (package
// agent/middleware), a graph.Middleware that catches its errors (not
// interrupts, not a cancelled context): it runs the node up to
// [WithMaxNodeRetries] times in all, recording each failure in the working
// memory, and then ends the request with an answer that says what failed
// (Result.Outcome is OutcomeError) instead of failing the run. Another
// middleware writes the node log; [WithNodeMiddleware] adds your own.
//
// # Events
//
// The nodes write events of their own kinds with graph.StreamWriter —
// [IntentChosen], [ToolAction], [TestRun], [MemoryHit], [Finished] — which
// events.Bridge publishes from [Agent.Stream]'s run.
package coder
