// Command coder is the intent-routed coding assistant of package
// agent/coder, in a terminal.
//
//	coder [--cwd DIR] [--model SPEC] [--session NAME]
//	coder -p "request" [--cwd DIR] [--model SPEC] [--session NAME]
//	coder graph
//
// With -p the exit code is 1 when the request failed, its edit left the
// tests failing, or it was refused (a path outside the project).
//
// Without -p it is a REPL with line editing and history (Ctrl-D or /quit
// leaves it); with -p it runs one request and exits. Each request shows
// the intent the agent chose and why (a pattern, costing no model call, or
// the model), each action on the workspace, the test runs of the auto-fix
// loop, the memories that served it, and the answer.
//
// The model comes from --model, else $CODER_MODEL, as a spec of llm.New:
// "openai:gpt-4o", "anthropic:claude-sonnet-4-5",
// "openai-compatible:<model>@<base URL>". With no model configured, coder
// runs an offline demo: a scripted model (its replies canned, no LLM
// called) over a bundled sample project copied to a temporary folder,
// one request per intent, whose file reads, edits, test runs and commands
// are real.
//
// Memory lives outside the project, where the agent's file tools and
// commands cannot reach it: in --memory DIR, by default in a folder of the
// project's own under $XDG_STATE_HOME/coder (~/.local/state/coder), named
// after the project and a hash of its path. A memory folder inside the
// project is refused. sessions.db holds each session's thread (the
// checkpointer: files read, their cached contents, the last
// question/answer pairs), so "coder --session NAME" after a restart goes
// on with the conversation; memory.db is the persistent store
// (preferences, the query cache, the node log). Both are SQLite files.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/tools"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// modelEnv supplies the model when --model is not given.
const modelEnv = "CODER_MODEL"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `coder — an intent-routed coding assistant.

Usage:
  coder [--cwd DIR] [--model SPEC] [--session NAME]
                  interactive: one request per line (/help lists the commands)
  coder -p "request" [--cwd DIR] [--model SPEC] [--session NAME]
                  run one request and exit
  coder graph     print the agent's graph (Mermaid)

With no model configured (no --model, no $CODER_MODEL) coder runs an offline
demo: a scripted model over a bundled sample project, one request per intent.

Flags:
`

// options are the command line's settings.
type options struct {
	cwd     string
	spec    string
	session string
	prompt  string
	verbose bool
	sandbox string
	memory  string
	// commandTimeout bounds each command of a run_command request.
	commandTimeout time.Duration
}

// run runs the command line args and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "graph" {
		return graphCommand(stdout, stderr)
	}
	fs := flag.NewFlagSet("coder", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	var o options
	fs.StringVar(&o.cwd, "cwd", ".", "the project to work in; the file tools are confined to it, and commands run in it")
	fs.StringVar(&o.sandbox, "sandbox", "auto", "commands in the bubblewrap sandbox: auto (where the machine has one), required (refuse commands where it has none), off")
	fs.StringVar(&o.spec, "model", "", "model, e.g. openai:gpt-4o, anthropic:claude-sonnet-4-5, openai-compatible:<model>@<base URL> (default: $"+modelEnv+"; none: the offline demo)")
	fs.StringVar(&o.session, "session", "default", "the conversation to continue (a thread saved in the memory folder's sessions.db)")
	fs.StringVar(&o.memory, "memory", "", "the folder of the session and memory databases, outside the project (default: a folder per project under $"+stateEnv+"/coder or ~/.local/state/coder)")
	fs.StringVar(&o.prompt, "p", "", "run this one request and exit (exit status 1 when it failed: an error, failing tests, a refused path, a command that timed out)")
	fs.DurationVar(&o.commandTimeout, "command-timeout", coder.DefaultCommandTimeout, "time limit of each command a request runs")
	fs.BoolVar(&o.verbose, "verbose", false, "also show each node as it runs")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "coder: unexpected argument %q (quote a request and pass it with -p)\n\n", fs.Arg(0))
		fs.Usage()
		return exitUsage
	}
	if _, err := tools.ParseSandboxMode(o.sandbox); err != nil {
		fmt.Fprintf(stderr, "coder: --%v\n", err)
		return exitUsage
	}
	if strings.TrimSpace(o.session) == "" {
		fmt.Fprintln(stderr, "coder: --session must not be empty")
		return exitUsage
	}
	if o.spec == "" {
		o.spec = strings.TrimSpace(os.Getenv(modelEnv))
	}
	if o.spec == "" {
		return demo(ctx, o, stdout, stderr)
	}
	s, err := open(ctx, o, stdout)
	if err != nil {
		return fail(stderr, err)
	}
	defer s.close()
	if o.prompt != "" {
		res, err := s.ask(ctx, o.prompt)
		if err != nil {
			return fail(stderr, err)
		}
		if failed(res) {
			return exitError // the answer above says why
		}
		return exitOK
	}
	return repl(ctx, s, stdin, stdout, stderr)
}

// fail prints err and returns exitError.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "coder:", strings.TrimPrefix(err.Error(), "coder: "))
	return exitError
}
