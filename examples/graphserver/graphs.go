package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/agent/planexec"
	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/examples/retrai/samples"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/tools"
)

// The names the graphs are served under (their assistants' graph ids).
const (
	reactGraph    = "react"
	retraiGraph   = "retrai"
	researchGraph = "research"
	coderGraph    = "coder"
)

// models are the models of the served graphs: one real model for all,
// or each graph's offline model.
type models struct {
	react, retrai, research, coder llm.Model
	offline                        bool
}

// newModels returns the model spec names (llm.New) for every graph, or
// the offline models when spec is empty.
func newModels(ctx context.Context, spec string) (models, error) {
	if spec == "" {
		rm, err := samples.Model(samples.Shell)
		if err != nil {
			return models{}, err
		}
		return models{react: reactModel{}, retrai: rm, research: newResearchModel(), coder: newCoderModel(), offline: true}, nil
	}
	m, err := llm.New(ctx, spec)
	if err != nil {
		return models{}, fmt.Errorf("model %s: %w", spec, err)
	}
	return models{react: m, retrai: m, research: m, coder: m}, nil
}

// workspaces are the project directories the agents work in.
type workspaces struct {
	retrai, research, coder string
	// temp lists the temporary copies of the samples, removed at exit.
	temp []string
}

// newWorkspaces returns dir for every agent, or, when dir is empty,
// temporary copies of the bundled samples the offline models know: the
// shell sample for retrAI (its check is a grep), the go-test sample for
// the research agent and the coder.
func newWorkspaces(dir string) (*workspaces, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--workspace %s: not a directory", dir)
		}
		return &workspaces{retrai: abs, research: abs, coder: abs}, nil
	}
	ws := &workspaces{}
	for _, c := range []struct {
		sample string
		dst    *string
	}{{samples.Shell, &ws.retrai}, {samples.GoTest, &ws.research}, {samples.GoTest, &ws.coder}} {
		d, err := os.MkdirTemp("", "graphserver-"+c.sample+"-")
		if err != nil {
			return nil, errors.Join(err, ws.remove())
		}
		ws.temp = append(ws.temp, d)
		if err := samples.Copy(c.sample, d); err != nil {
			return nil, errors.Join(err, ws.remove())
		}
		*c.dst = d
	}
	return ws, nil
}

// remove deletes the temporary copies.
func (ws *workspaces) remove() error {
	var errs []error
	for _, d := range ws.temp {
		errs = append(errs, os.RemoveAll(d))
	}
	return errors.Join(errs...)
}

// OutsideWorkspaceError refuses a retrAI run whose Cwd is not the
// server's workspace: a client may not point the agent (which runs
// commands and edits files) at another directory.
type OutsideWorkspaceError struct {
	Cwd, Workspace string
}

// Error implements error.
func (e *OutsideWorkspaceError) Error() string {
	return fmt.Sprintf("retrai: Cwd %q is not the served workspace %s", e.Cwd, e.Workspace)
}

// allowed returns an *OutsideWorkspaceError unless cwd is the workspace.
func allowed(cwd, workspace string) error {
	if cwd == "" || filepath.Clean(cwd) != workspace {
		return &OutsideWorkspaceError{Cwd: cwd, Workspace: workspace}
	}
	return nil
}

// confinedGoal is a goal whose checks run in the workspace only.
type confinedGoal struct {
	goals.Goal
	workspace string
}

// Check implements goals.Goal.
func (g confinedGoal) Check(ctx context.Context, st goals.State, cwd string) (goals.Result, error) {
	if err := allowed(cwd, g.workspace); err != nil {
		return goals.Result{}, err
	}
	return g.Goal.Check(ctx, st, cwd)
}

// confinedBaseliner is a confinedGoal of a goal that takes a baseline
// (the test goals), which it takes in the workspace only.
type confinedBaseliner struct {
	confinedGoal
	b goals.Baseliner
}

// Baseline implements goals.Baseliner.
func (g confinedBaseliner) Baseline(ctx context.Context, cwd string) (*goals.Baseline, error) {
	if err := allowed(cwd, g.workspace); err != nil {
		return nil, err
	}
	return g.b.Baseline(ctx, cwd)
}

// confine returns g with its checks (and its baseline, for a
// goals.Baseliner) refused outside workspace.
func confine(g goals.Goal, workspace string) goals.Goal {
	c := confinedGoal{Goal: g, workspace: workspace}
	if b, ok := g.(goals.Baseliner); ok {
		return confinedBaseliner{confinedGoal: c, b: b}
	}
	return c
}

// serveGraphs builds the four graphs on the models, the workspaces and
// the storage, with the commands, tests and goal checks of retrai and
// coder confined by sandbox, and returns them as server options.
func serveGraphs(ms models, ws *workspaces, st *storage, sandbox tools.SandboxMode) ([]server.Option, error) {
	withSaver := graph.WithCheckpointer(st.saver)

	react, err := agent.NewReAct(ms.react, []tools.Tool{addTool()},
		agent.WithSystemPrompt("You are a terse assistant. Use the add tool for sums."),
		agent.WithCompileOptions(withSaver))
	if err != nil {
		return nil, fmt.Errorf("react: %w", err)
	}

	goal, err := detectGoal(ws.retrai, sandbox)
	if err != nil {
		return nil, err
	}
	// The state's Cwd comes from the client: the tools and the goal's
	// checks refuse any directory but the served workspace.
	retraiG, err := retrai.New(ms.retrai, confine(goal, ws.retrai), retrai.WithCheckpointer(st.saver),
		retrai.WithTools(func(cwd string) ([]tools.Tool, error) {
			if err := allowed(cwd, ws.retrai); err != nil {
				return nil, err
			}
			w, err := tools.NewWorkspace(cwd)
			if err != nil {
				return nil, err
			}
			return tools.Coding(w, tools.WithSandbox(sandbox)), nil
		}))
	if err != nil {
		return nil, fmt.Errorf("retrai: %w", err)
	}

	rw, err := tools.NewWorkspace(ws.research)
	if err != nil {
		return nil, err
	}
	research, err := planexec.New(ms.research, []tools.Tool{tools.Grep(rw), tools.FileRead(rw), tools.FileList(rw)},
		planexec.WithMaxIterations(3), planexec.WithCompileOptions(withSaver))
	if err != nil {
		return nil, fmt.Errorf("research: %w", err)
	}

	c, err := coder.New(ms.coder, ws.coder, coder.WithCheckpointer(st.saver), coder.WithStore(st.store),
		coder.WithNodeMiddleware(newRequest), coder.WithToolOptions(tools.WithSandbox(sandbox)))
	if err != nil {
		return nil, fmt.Errorf("coder: %w", err)
	}

	return []server.Option{
		server.Graph(reactGraph, react),
		server.Graph(retraiGraph, retraiG),
		server.Graph(researchGraph, research),
		server.Graph(coderGraph, c.Graph()),
	}, nil
}

// detectGoal returns the goal of the project in dir: the one its
// .retrai.yml names, else the one detected, its tests confined by sandbox.
func detectGoal(dir string, sandbox tools.SandboxMode) (goals.Goal, error) {
	cfg, _, err := goals.LoadConfig(dir)
	if err != nil {
		return nil, fmt.Errorf("retrai: %w", err)
	}
	if cfg == nil {
		cfg = &goals.Config{}
	}
	cfg.TestOptions = append(cfg.TestOptions, tools.WithSandbox(sandbox))
	name := cfg.Goal
	if name == "" {
		if name, _, err = goals.Detect(dir); err != nil {
			return nil, fmt.Errorf("retrai: no goal for %s: %w", dir, err)
		}
	}
	g, err := goals.New(name, *cfg)
	if err != nil {
		return nil, fmt.Errorf("retrai: goal %s: %w", name, err)
	}
	return g, nil
}
