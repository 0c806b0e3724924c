package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/examples/retrai/samples"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
)

// retraiWorkflow is the Temporal workflow type the retrAI agent is
// registered under, and its name for --agent.
const retraiWorkflow = "retrai"

// retraiMaxIterations is the iteration limit of a retrAI run started by
// this command.
const retraiMaxIterations = 10

// retraiSample is the bundled sample project a retrAI run fixes when
// start is given no --project: a Go module whose test fails.
const retraiSample = samples.GoTest

// newRetrai returns the retrAI agent's graph (package agent/retrai) on
// model, with the goal go-test (`go test ./...` passes), its state in
// saver, and opts after those. The human check after each iteration (the
// graph's human_check node, on for every run this command starts) pauses
// the run on Temporal until `approve` answers it.
func newRetrai(model llm.Model, saver checkpoint.Saver, opts ...retrai.Option) (*graph.Graph[retrai.State], error) {
	goal, err := goals.New(goals.GoalGoTest, goals.Config{})
	if err != nil {
		return nil, err
	}
	return retrai.New(model, goal, append([]retrai.Option{retrai.WithCheckpointer(saver)}, opts...)...)
}

// newRetraiOfflineModel returns the scripted model that fixes the bundled
// sample. Its reply is picked by the number of AI messages in the
// conversation it is sent (samples.Model), not by how many calls it
// answered, so two worker processes carry on each other's runs.
func newRetraiOfflineModel() llm.Model {
	m, err := samples.Model(retraiSample)
	if err != nil {
		panic(err) // retraiSample is a bundled sample
	}
	return m
}

// retraiInput returns the input state of a retrAI run on thread, working
// on the project directory dir, with a human check after every iteration.
func retraiInput(thread, dir, instructions string) retrai.State {
	return retrai.Input(retrai.Run{
		RunID: thread, Cwd: dir, MaxIterations: retraiMaxIterations, HITL: true, Instructions: instructions,
	})
}

// retraiProject returns the absolute path of the project a retrAI run
// works on: dir, which must be a directory, or, when dir is empty, a new
// temporary directory holding a copy of the bundled sample (created says
// so). The workers run the agent's tools in it, so it must be on a disk
// they share.
func retraiProject(dir string) (path string, created bool, err error) {
	if dir == "" {
		dir, err := os.MkdirTemp("", "agentgraph-temporal-retrai-")
		if err != nil {
			return "", false, fmt.Errorf("making the project's directory: %w", err)
		}
		if err := samples.Copy(retraiSample, dir); err != nil {
			_ = os.RemoveAll(dir)
			return "", false, err
		}
		return dir, true, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, fmt.Errorf("--project: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", false, fmt.Errorf("--project: %w", err)
	}
	if !fi.IsDir() {
		return "", false, fmt.Errorf("--project: %s is not a directory", abs)
	}
	return abs, false, nil
}

// errRetraiAnswer is returned for an answer retrAI's human check does not
// take.
var errRetraiAnswer = errors.New("retrAI's human check takes approve (yes, ok, continue) or abort (reject, no)")

// retraiAnswer maps the reviewer's answer to the value retrAI's
// human_check node is resumed with ("approve" or "abort", see
// retrai.Approved). Unlike the research agent's plan review, it takes no
// note: any other text is refused before it reaches the run.
func retraiAnswer(answer string) (value string, approved bool, err error) {
	a := strings.ToLower(strings.TrimSpace(answer))
	switch {
	case plainYes(a) || a == "continue":
		return "approve", true, nil
	case !approves(a):
		return "abort", false, nil
	}
	return "", false, fmt.Errorf("answer %q: %w", answer, errRetraiAnswer)
}

// HumanCheck is the value of retrAI's human_check interrupt, as the
// workflow reports it.
type HumanCheck struct {
	Question  string `json:"question"`
	Iteration int    `json:"iteration"`
	Reason    string `json:"reason"`
}

// printHumanCheck prints the question of a retrAI human check.
func printHumanCheck(out io.Writer, value json.RawMessage) {
	var hc HumanCheck
	if err := json.Unmarshal(value, &hc); err != nil || hc.Question == "" {
		fmt.Fprintf(out, "  value: %s\n", value)
		return
	}
	fmt.Fprintf(out, "  question: %s\n", hc.Question)
}

// printRetraiResult prints how a finished retrAI run ended.
func printRetraiResult(out io.Writer, s retrai.State) {
	switch s.Outcome() {
	case retrai.OutcomeAchieved:
		fmt.Fprintf(out, "achieved after %d iteration(s): %s\n", s.Iteration.Get(), s.GoalReason.Get())
	case retrai.OutcomeAborted:
		fmt.Fprintf(out, "aborted by the reviewer after %d iteration(s): %s\n", s.Iteration.Get(), s.GoalReason.Get())
	default:
		fmt.Fprintf(out, "failed after %d iteration(s): %s\n", s.Iteration.Get(), s.GoalReason.Get())
	}
	fmt.Fprintf(out, "project: %s\n", s.Cwd.Get())
}
