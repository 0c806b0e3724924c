// Package goals defines the objectives of the retrAI coding agent and the
// checks that tell when they are reached.
//
// The agent runs a plan → act → evaluate loop; its evaluate step calls
// [Goal.Check] and stops when the Result is Achieved, and its plan step puts
// [Goal.SystemPrompt] into the model's instructions.
//
// # A tour
//
// Pick the goal of a project, configure it from .retrai.yml, and check it:
//
//	name, why, err := goals.Detect(dir)      // e.g. "go-test", "go.mod found"
//	cfg, _, err := goals.LoadConfig(dir)     // nil when there is no .retrai.yml
//	if cfg == nil {
//		cfg = &goals.Config{}
//	}
//	g, err := goals.New(name, *cfg)
//	res, err := g.Check(ctx, goals.State{Iteration: 1, MaxIterations: 50}, dir)
//	if err != nil {
//		// The check could not run: a missing toolchain (*ToolNotFoundError),
//		// a bad setting (*SettingError), a cancelled ctx.
//	}
//	fmt.Println(res.Achieved, res.Reason) // false go-test: 1 of 3 tests failed: example.com/m.TestX
//	for _, f := range res.Details.Failures {
//		fmt.Println(f.Name, f.Output)
//	}
//
// A Result is data, JSON-encodable: Achieved, a one-line Reason, and
// [Details] with what ran, pass/fail counts, the failures with their
// (capped) output, the exit code, the (capped) output, and timings. Not
// reaching the goal is a normal result; an error means the check itself
// could not be carried out.
//
// # Goals
//
// The built-in goals, each registered under its name:
//
//   - pytest, cargo-test, go-test, npm-test, bun-test: every test passes, as
//     run and parsed by [tools.RunTestsRecorded] (failures name the
//     tests), and none went missing (see Test integrity below).
//   - pyright: `pyright --outputjson` reports no errors (failures name
//     file:line:column).
//   - make-test: `make test` exits 0, and runs no fewer tests than at
//     the start.
//   - shell: the command of .retrai.yml exits 0.
//   - perf-check: a command exits 0 every time and the median wall time of
//     N runs is within perf.max_seconds.
//   - sql-benchmark: the median time of N executions of a query, on a
//     SQLite file or a PostgreSQL database, is within sql.max_ms. The
//     program imports the database/sql driver (see [SQLConfig]).
//   - ai-eval: a harness script that a planner model wrote from a
//     natural-language objective ([PlanHarness]) exits 0.
//
// [Config] documents every setting. Goals read the project from the
// directory passed to Check, so one Goal serves any checkout.
//
// # Test integrity
//
// A test goal must not be reachable by deleting, skipping or renaming the
// failing test. The test goals implement [Baseliner]: at the start of a
// run, before the agent changes anything, Baseline runs the tests and
// records them in a [Baseline], which the caller keeps with the run (it is
// JSON, for the run's checkpointed state) and passes back in
// State.Baseline at every check:
//
//	base, err := g.(goals.Baseliner).Baseline(ctx, dir) // once per run
//	…
//	res, err := g.Check(ctx, goals.State{RunID: id, Baseline: base}, dir)
//
// What is recorded, per goal:
//
//   - go-test: every test and subtest that ran, as package.Test/sub, from
//     the events of go test -json; for a package that failed, also the
//     Test and Fuzz functions of its test files, read from the source
//     (its tests may not have built or started).
//   - pytest: the node ID of every test, through a small plugin loaded
//     with -p; test files that failed to collect.
//   - cargo-test: the name of every test from the "test NAME ... ok"
//     lines (doc-tests without their line numbers), with cargo test
//     --no-fail-fast so that every test binary runs.
//   - npm-test, bun-test: the numbers of tests that ran and were skipped,
//     as the runner's summary gives them.
//   - make-test: the same numbers, added up from the summary lines of the
//     runners make test runs (pytest, cargo, go test -v or -json, jest,
//     vitest, bun, node's test runner, mocha, or a plain "N passed, N
//     failed" line); none when the output has no such line.
//
// A check then fails, naming the tests, when a test of the baseline did
// not run ("example.com/m.TestSum was in the baseline but did not run
// (deleted or renamed?)": a renamed test is a deleted one, while new tests
// are fine) or was skipped, pytest's xfail included ("… was skipped (it
// ran at the baseline)"); for the counting goals, when fewer tests ran or
// more were skipped than at the baseline. Tests of a unit whose run failed
// (a Go package, a pytest file, a cargo run) are judged once it runs. A
// run in which no test ran never reaches the goal, whatever the baseline.
//
// Test files are protected by default: the baseline also records the
// SHA-256 of every test file ([IsTestFile]), and a check fails, naming the
// files and telling the model to restore them, when one of them was
// changed in any way — an expected value, a weakened assertion, an
// emptied test body — or deleted; new test files are allowed.
// Config.AllowTestEdits (protect_tests: false in .retrai.yml) turns that
// off, for projects whose agent is meant to edit tests.
//
// A goal given no Baseline in State takes one from its first check of a run
// (by RunID, when set, and directory), kept in memory: it misses what the
// agent did before that check and does not survive a restart.
//
// # What a check runs, and what it shows
//
// The programs of a check (go, pytest, npm, make, bash, …) are looked up
// on PATH without its entries inside the project (tools.LookPathOutside),
// and the commands a check runs get that PATH too: a program planted in
// the project, put first on PATH by, say, direnv's PATH_add bin, is never
// taken for the toolchain. The output of every goal built by [New] —
// Reason, Details and a Baseline's Summary — has the values of this
// process's environment replaced by "[redacted]" (but for PATH, HOME,
// LANG and the toolchains' variables, when they do not look like
// secrets), so that a test printing its environment or /proc/*/environ
// shows the model no key.
//
// # Registry
//
// [Register] adds goals under new names (a name registered twice is an
// error, never a silent replacement), [New] builds one from a Config, and
// [Names] lists them all.
//
// # Detection
//
// [Detect] picks a goal from the project's files: .retrai.yml first, then
// Python, Rust, Go, JavaScript and Makefile markers, in the documented
// order.
package goals
