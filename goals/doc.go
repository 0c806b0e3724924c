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
//     run and parsed by [tools.RunTests] (failures name the tests).
//   - pyright: `pyright --outputjson` reports no errors (failures name
//     file:line:column).
//   - make-test: `make test` exits 0.
//   - shell: the command of .retrai.yml exits 0.
//   - perf-check: a command exits 0 every time and the median wall time of
//     N runs is within perf.max_seconds.
//   - sql-benchmark: the median time of N executions of a query, on a
//     SQLite file or a PostgreSQL database, is within sql.max_ms.
//   - ai-eval: a harness script that a planner model wrote from a
//     natural-language objective ([PlanHarness]) exits 0.
//
// [Config] documents every setting. Goals read the project from the
// directory passed to Check, so one Goal serves any checkout.
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
