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
// A run goes pending → running → achieved | failed | aborted: achieved
// reached its goal, failed did not within its iteration limit, a human
// aborted it. These three are final. On the way it may be waiting (paused
// at a human check, for Resume with a decision), interrupted (cancelled,
// the manager closed, or its process died; Resume continues it) or error
// (stopped by a model or tool failure, Error says which; Resume retries).
// Records of earlier versions, which had a run stopped on an error
// "failed" with its Error set, are read — and upgraded in the database at
// Open — as error.
//
// # One live execution per run
//
// A run executes under the lease of its checkpoint thread (see
// checkpoint.Leaser and graph.WithLeaseTTL), which the graph renews while
// it runs. So a run is never executed twice at once, by two processes or
// two Managers: Start and Resume of a run whose lease another holds fail
// with a *LiveError (ErrLive) naming the holder — "pid 4242 on build-7" —
// and leave the run's record as it is. A run recorded running whose
// process died keeps its lease until the lease expires (Options.LeaseTTL);
// from then on Get and List report it interrupted, and Resume takes it
// over. CheckIdle tells whether a run executes anywhere.
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
// The manager runs the agent's graph as a stream and publishes its events
// with events.Bridge (see retrai.New) on its bus, with the run's ID. Each
// execution of a run ends with exactly one of two events, published after
// the run's record is updated and the run can be resumed: the agent's
// retrai.HumanCheck (the run is waiting) or an [Ended], whose Status is
// the run's new Status (achieved, failed, aborted, interrupted or error),
// after an events.Error when the run stopped on one. The events of the
// graph run's own start and end and the agent's retrai.Finished are left
// out: the Ended stands for them. (An execution that finds the run taken
// over by another process ends with an Ended whose Status is running and
// Live is set: the record is that process's.)
//
// The manager adds events of its own: [ModelProgress], the progress of
// the model's calls (waits, back-offs, failures), and a [Progress] after
// every retrai.GoalCheck.
package runs
