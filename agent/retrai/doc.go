// Package retrai builds the retrAI coding agent: plan (the model, with the
// tools bound) → act (run the tool calls) → evaluate (the goal's check) →
// plan again, until the goal is achieved or the iterations run out, with
// an optional human_check that pauses the run (graph.Interrupt) for an
// approve or abort.
//
// The goal ([goals.Goal]) is given when the graph is built ([New]), not
// carried in its state ([State]); [Input] builds the input of a new run:
//
//	goal, err := goals.New(goals.GoalGoTest, goals.Config{})
//	g, err := retrai.New(model, goal, retrai.WithCheckpointer(saver))
//	out, err := g.Invoke(ctx, retrai.Input(retrai.Run{RunID: id, Cwd: dir}),
//		graph.WithThread(id))
//	fmt.Println(out.Outcome(), out.GoalReason.Get())
//
// The agent reports its progress as any graph does: its nodes write
// events of its own kinds ([GoalCheck], [HumanCheck], [Finished], …) with
// graph.StreamWriter, and events.Bridge publishes them with the SDK's
// (package events) from the run's stream:
//
//	stream := g.Stream(ctx, retrai.Input(run), graph.WithThread(id),
//		graph.WithStreamModes(events.StreamModes))
//	err := events.Bridge(ctx, bus, id, stream)
//
// The act node works like the ReAct agent's tool node (package agent): each
// tool call is a task of its own, so a run resumed after a crash runs only
// the calls whose results were not saved; but a turn's calls run one at a
// time, in call order.
//
// The goals' checks are run by package goals; a goal that reads a database
// (sql-benchmark) needs its database/sql driver, which the program imports
// (examples/retrai, the command-line agent, imports SQLite's and
// PostgreSQL's).
package retrai
