// Package middleware wraps the three things an agent is made of — model
// calls, tool calls and graph nodes — in reusable behaviour, as
// LangChain's agent middleware does: retries, call limits, fallbacks,
// context trimming and summaries, and error handling that answers the
// user instead of failing the run.
//
// # Models
//
// A [ModelMiddleware] turns an llm.Model into another; [WrapModel] applies
// several, the first outermost:
//
//	model := middleware.WrapModel(primary,
//		middleware.ModelCallLimit(middleware.WithRunLimit(20), middleware.WithMessageOnLimit()),
//		middleware.Fallback(backup),
//		middleware.ModelRetry(middleware.WithMaxAttempts(3)),
//		middleware.Trim(40))
//
// [ModelRetry] retries what package llm classifies as transient (429,
// 5xx, timeouts) with exponential backoff and jitter; [Fallback] tries the
// next model of a chain when one fails; [ModelCallLimit] refuses calls
// past a limit per run or per thread, with a [*CallLimitError] or an AI
// message that ends an agent loop; [Trim] and [TrimChars] send only the
// end of a long conversation, never a tool result without its call;
// [Summarize] replaces its beginning by a summary. None of them fails,
// retries or falls back on the cancellation of the call's context: its
// error is returned.
//
// # Tools
//
// A [ToolMiddleware] turns a tools.Tool into another with the same name,
// description and parameters; [WrapTool] and [WrapTools] apply them:
// [ToolRetry], [ToolCallLimit] (all tools together or [WithPerTool]) and
// [ToolErrorText] (errors become the output the model reads).
//
// # Runs and threads
//
// Call limits count per run and per thread. A run is identified by the
// context: compile the graph with [RunScope] (each Invoke, Stream or
// Resume is a run; its thread is graph.WithThread's), or make the context
// with [ContextWithRun] outside a graph.
//
// # Nodes
//
// [HandleErrors] is a graph.Middleware for any state: it runs a failing
// node again (up to 3 times in all), records each error in a
// [WorkingMemory] kept in the state, and after the last attempt writes an
// answer for the user (an AI message, say) instead of failing the run.
// Interrupts and the run's cancellation pass through it untouched.
//
//	b := graph.New[State]()
//	b.Use(middleware.HandleErrors(
//		func(s State) middleware.WorkingMemory { return s.Memory.Get() },
//		func(u *State, d middleware.WorkingMemory) { u.Memory.Update(d) },
//		func(ctx context.Context, s State, f middleware.NodeFailure) State {
//			return State{Messages: state.Msgs(state.AI(f.Message()))}
//		}))
package middleware
