// Package runs manages the runs of the retrAI agent: it creates them,
// runs them in the background, pauses them for human checks, resumes them —
// after a human decision, a cancellation, an error or a crash of the
// process — and reports their progress on an event bus. The `retrai run`
// command is built on it, and so can a TUI or a web server be.
//
//	m, err := runs.Open(ctx, runs.Options{DB: "retrai.db"})
//	defer m.Close()
//	sub := m.Bus().Subscribe(ctx)           // every event carries its RunID
//	run, err := m.Create(ctx, runs.Config{Cwd: dir, Model: "openai:gpt-4o-mini"})
//	err = m.Start(ctx, run.ID)              // runs in the background
//	run, err = m.Wait(ctx, run.ID)          // until it ends or waits for a human
//	if run.Status == runs.StatusWaiting {
//		err = m.Resume(ctx, run.ID, runs.DecisionApprove)
//	}
//
// # Statuses
//
// A run goes pending → running → achieved | failed | aborted. On the way
// it may be waiting (paused at a human check, for Resume with a decision)
// or interrupted (cancelled, or the manager closed, while running; Resume
// continues it). A run that stopped on an error (a model or tool
// failure) is failed with its Error set, and can be resumed too; a failed
// run without Error ran out of iterations and is final, as are achieved
// and aborted runs. A run found "running" that no Manager of this process
// executes was left by a process that died; Resume takes it over.
//
// Resuming works from the graph's checkpoints: an interrupted run
// continues from its last completed step (steps that had not finished run
// again), in this process or another.
//
// # Storage
//
// Runs and checkpoints share one database. Options.DB is a SQLite file
// (created if needed; default [DefaultDB]) or a postgres:// URL. Checkpoints
// go to the tables of package checkpoint/sqlite or checkpoint/postgres;
// runs to the table retrai_runs (id, status, created_at and updated_at in
// Unix nanoseconds, and data: the [Run] as JSON).
//
// # Events
//
// The manager's bus carries the agent's events (see agent.NewRetrai) for
// every run, with the run's ID. Each execution of a run ends with exactly
// one of two events, published after the run's record is updated and the
// run can be resumed: human_check_required (the run is waiting) or
// run_end, whose "status" is the run's new Status ("achieved", "failed",
// "aborted" or "interrupted") and which has "reason", "iteration",
// "total_tokens" and, on errors, "error".
package runs
