// Command retrai is the retrAI coding agent: it works on a project — reads
// code, runs commands, patches files — until a goal such as "every test
// passes" is achieved.
//
//	retrai run [--goal G] [--model M] [--max-iterations N] [--hitl] [--cwd DIR] [--db FILE|URL] [--sandbox MODE] [--allow-config-endpoint]
//	retrai run --resume RUN_ID [--db FILE|URL]
//	retrai tui [run flags]
//	retrai serve [--addr 127.0.0.1:8484] [--token T] [--db FILE|URL] [--sandbox MODE] [--allow-config-endpoint]
//	retrai runs [--db FILE|URL] [RUN_ID]
//	retrai goals [--cwd DIR]
//	retrai graph
//	retrai --version
//
// `retrai run` shows the run's progress — each iteration, every tool call
// with its result on one line, the goal checks and the tokens used — then
// a summary, and exits 0 only when the goal is achieved. Flags override the
// project's .retrai.yml (goal, model, max_iterations, hitl_enabled), which
// overrides the defaults (goal detected from the project, 50 iterations).
// The model comes from --model, else $RETRAI_MODEL, else .retrai.yml, e.g.
// "openai:gpt-4o-mini" (OPENAI_API_KEY), "anthropic:claude-sonnet-4-5"
// (ANTHROPIC_API_KEY) or "openai-compatible:<model>@<base URL>"; a spec may
// end in "?timeout=10m&stall=2m", the limits of each model call (see
// llm.New). A .retrai.yml comes with the project — a cloned repository,
// say — so its model may not name an endpoint (a base URL, where the API
// key would be sent) unless --allow-config-endpoint or
// $RETRAI_ALLOW_CONFIG_ENDPOINT=1 allows it. Unknown keys in .retrai.yml
// are errors.
//
// With no model configured at all, `retrai run` — and `retrai` with no
// arguments — runs the offline demo: it copies a bundled sample project
// with a failing test into a temporary directory and fixes it with a
// scripted model (no LLM, no network). --goal picks the sample: go-test
// (the default), pytest (needs python3 with pytest) or shell.
//
// With --hitl the run pauses after every iteration and asks on the
// terminal whether to go on: answer approve (or yes, y, continue, or just
// Enter) or abort (no, n). The answers are read line by line from standard
// input, so they can be piped.
//
// Runs and their checkpoints are kept in a SQLite file (--db, default
// ~/.retrai/retrai.db) or in PostgreSQL (--db postgres://…); `retrai runs`
// lists them. A run that was interrupted — Ctrl-C, a crash, an error, or a
// pending human check — continues with `retrai run --resume RUN_ID`, with
// the settings it was created with. A run holds a lease on its record
// while it executes, renewed every few seconds: a run that is live in
// another process cannot be resumed a second time, and one whose process
// died (kill -9, a power cut) shows as interrupted once its lease expires,
// after 30 s. ($RETRAI_LEASE_TTL changes that time; it is meant for tests.)
//
// The agent's commands, its tests and the goal checks run in the
// bubblewrap sandbox (--sandbox, see tools.SandboxMode). `retrai run`
// defaults to auto, which runs them unconfined where the machine has no
// sandbox, and then says so: a WARNING line at start and a
// sandbox_warning event in every run. `retrai serve` defaults to
// required: where there is no sandbox it refuses them.
//
// `retrai tui` is `retrai run` in a terminal UI: the run's events live, a
// status line (iteration, goal, tokens), a and x to approve or abort a
// human check, q to quit.
//
// `retrai serve` serves an HTTP API of the runs — POST /api/runs,
// GET /api/runs, GET /api/runs/{id}, POST /api/runs/{id}/resume and the
// WebSocket GET /api/runs/{id}/events — and a dashboard at /, on
// 127.0.0.1:8484 by default. Every request needs the token (--token, or
// a random one printed at start) as "Authorization: Bearer <token>"; the
// dashboard and the WebSocket also take it as ?token=.
//
// `retrai runs` lists the runs of the database, newest first, and
// `retrai runs RUN_ID` shows one; `retrai goals` lists the goals and the
// one detected for a project; `retrai graph` prints the agent's graph as a
// Mermaid flowchart; `retrai --version` prints the version.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitAchieved = 0 // the goal is achieved (or a command other than run succeeded)
	exitNotDone  = 1 // the goal is not achieved, or an error
	exitUsage    = 2 // bad command line
)

// cli runs the command line args (without the program name) and returns the
// exit code.
func cli(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "version", "-version", "--version", "-v":
			return versionCommand(args[1:], stdout, stderr)
		}
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "-help" && args[0] != "--help" {
		return runCommand(ctx, args, stdin, stdout, stderr)
	}
	switch args[0] {
	case "run":
		return runCommand(ctx, args[1:], stdin, stdout, stderr)
	case "runs":
		return runsCommand(ctx, args[1:], stdout, stderr)
	case "goals":
		return goalsCommand(args[1:], stdout, stderr)
	case "graph":
		return graphCommand(args[1:], stdout, stderr)
	case "serve":
		return serveCommand(ctx, args[1:], stdout, stderr)
	case "tui":
		return tuiCommand(ctx, args[1:], stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitAchieved
	}
	fmt.Fprintf(stderr, "retrai: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

const usage = `retrai — an autonomous coding agent that iterates until a goal is achieved.

Usage:
  retrai run [flags]     work on a project until its goal is achieved
                         (with no model configured: the offline demo)
  retrai tui [flags]     the same, in a terminal UI (a approve, x abort, q quit)
  retrai run --resume RUN_ID
                         continue an interrupted run (or answer its human check)
  retrai serve [--addr 127.0.0.1:8484] [--token T] [--db FILE]
                         the HTTP API and a web dashboard of the runs
  retrai runs [RUN_ID]   list the runs (with their IDs), or show one
  retrai goals [--cwd DIR]
                         list the goals and the one detected for DIR
  retrai graph           print the agent's graph (Mermaid)
  retrai --version       print the version

Run "retrai run -h" for the flags of run (and tui), "retrai serve -h" for serve's.
`
