// Command graphserver serves the agents of this repository over the
// LangGraph Server API (package server), so that LangGraph's official
// clients — the JS and Python SDKs, useStream, Studio — drive them:
//
//	react     the ReAct agent (package agent) with an add tool
//	retrai    the retrAI coding agent (agent/retrai) on a project
//	research  the plan-and-execute research agent (agent/planexec) with
//	          grep, file_read and file_list on a project
//	coder     the intent-routed coder (agent/coder) on a project
//
// Usage:
//
//	graphserver [--addr 127.0.0.1:2024] [--db graphserver.db] [--model SPEC]
//	            [--workspace DIR] [--sandbox required|auto|off] [--allow-unsandboxed]
//	            [--auth token|users|none-loopback] [--token TOKEN] [--users FILE]
//
// The model comes from --model, a spec of llm.New ("openai:gpt-4o-mini",
// "anthropic:claude-sonnet-4-5", "openai-compatible:<model>@<base URL>").
// Without one every agent runs on an offline model, and the command says
// so: canned wording whose answers are functions of the conversation
// alone, so runs can come in any order, over real tools on temporary
// copies of the bundled sample projects (examples/retrai/samples).
//
// The commands, tests and goal checks of retrai and coder run in the
// bubblewrap sandbox, which is required by default: where the machine has
// none, or with --sandbox off, the command refuses to serve unless
// --allow-unsandboxed (then --sandbox required refuses every command, and
// --sandbox auto runs them unconfined, which the start-up lines say in a
// WARNING).
//
// Threads live in SQLite (--db): checkpoints, the store and the
// server's thread and run records share the file, so all of them survive
// a restart. --auth says how clients authenticate, with a bearer token or
// x-api-key:
//
//	token          one token (--token, else $AGENTGRAPH_TOKEN), the default;
//	               every client holding it reads and changes every thread
//	users          a token per user, from --users FILE ("USER-ID TOKEN" a
//	               line); each user sees only the threads, runs, assistants
//	               and store namespaces (starting with their ID) they created
//	               (server.OwnerPolicy); another's thread answers 404
//	none-loopback  no credentials, loopback clients only
//	               (--insecure-loopback says the same)
//
// GET /ok, the health check, needs no credentials.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agentgraph/agentgraph/examples/internal/sandboxnote"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/tools"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// tokenEnv supplies the token when --token is not given.
const tokenEnv = "AGENTGRAPH_TOKEN"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the command line's settings.
type options struct {
	addr      string
	db        string
	model     string
	workspace string
	auth      string                     // --auth: authToken, authUsers or authNoneLoopback
	token     string                     // of authToken
	users     map[string]server.Identity // of authUsers, by token
	loopback  bool
	postgres  string
	sandbox   tools.SandboxMode
	runLease  time.Duration
	maxBody   int64
	// allowUnsandboxed serves the coding graphs without a sandbox.
	allowUnsandboxed bool
}

const usage = `graphserver — the agents of this repository behind the LangGraph Server API.

Usage:
  graphserver [--addr HOST:PORT] [--db FILE | --postgres URL] [--model SPEC]
              [--workspace DIR] [--run-lease DURATION] [--max-body BYTES]
              [--sandbox required|auto|off] [--allow-unsandboxed]
              [--auth token|users|none-loopback] [--token TOKEN] [--users FILE]

Auth (--auth): token (default) one bearer token, --token or $AGENTGRAPH_TOKEN,
which sees every thread; users, a token per user from --users FILE (lines
"USER-ID TOKEN"), each user seeing only their own threads, runs, assistants
and store namespaces; none-loopback, no credentials and loopback clients only
(= --insecure-loopback). GET /ok needs no credentials.

Graphs: react, retrai, research, coder. Without --model they run on offline
models over copies of bundled sample projects.

Flags:
`

// parse reads args into options.
func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("graphserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	var o options
	fs.StringVar(&o.addr, "addr", "127.0.0.1:2024", "address to listen on")
	fs.StringVar(&o.db, "db", "graphserver.db", "SQLite file of the threads' checkpoints, the store, and the threads and runs")
	fs.StringVar(&o.model, "model", "", "model of every agent, a spec of llm.New (openai:gpt-4o-mini, anthropic:claude-sonnet-4-5, openai-compatible:<model>@<base URL>); none: offline models")
	fs.StringVar(&o.workspace, "workspace", "", "project directory of retrai, research and coder (default: temporary copies of the bundled samples)")
	fs.StringVar(&o.auth, "auth", "", "how clients authenticate: token (one bearer token for all), users (a token per user, --users; each sees only their own threads), none-loopback (no credentials, loopback clients only); default token, or none-loopback with --insecure-loopback")
	fs.StringVar(&o.token, "token", "", "bearer token clients must send, with --auth token (default: $"+tokenEnv+")")
	usersFile := fs.String("users", "", "file of the users of --auth users: one \"USER-ID TOKEN\" a line, # for comments")
	fs.BoolVar(&o.loopback, "insecure-loopback", false, "serve loopback clients without a token: --auth none-loopback (server.WithoutAuthLoopbackOnly)")
	fs.BoolVar(&o.allowUnsandboxed, "allow-unsandboxed", false, "serve retrai and coder even where their commands would have no sandbox (--sandbox off, or none on the machine)")
	fs.StringVar(&o.postgres, "postgres", "", "PostgreSQL URL of the checkpoints, the store, and the threads and runs, instead of --db: several graphserver processes on one database share them")
	fs.DurationVar(&o.runLease, "run-lease", server.DefaultRunLeaseTTL, "how long a run stays its process's without renewal: the runs, and their threads, of a process that died are taken over by another after this")
	fs.Int64Var(&o.maxBody, "max-body", server.DefaultMaxBodyBytes, "largest request body in bytes (a larger one gets 413)")
	// The coding graphs run what clients ask for: without a sandbox they
	// run no command unless --sandbox says otherwise.
	o.sandbox = tools.SandboxRequired
	fs.Func("sandbox", "auto|required|off: how the commands, tests and goal checks of retrai and coder are confined; required refuses them where there is no sandbox (default required)", func(v string) error {
		mode, err := tools.ParseSandboxMode(v)
		o.sandbox = mode
		return err
	})
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "graphserver: unexpected argument %q\n", fs.Arg(0))
		return o, errors.New("usage")
	}
	if err := checkAuth(&o, *usersFile); err != nil {
		fmt.Fprintln(stderr, "graphserver:", err)
		return o, errors.New("usage")
	}
	return o, nil
}

// checkAuth settles o.auth from the flags and reads what it needs: the
// token (from $AGENTGRAPH_TOKEN when --token is not given) or the users
// of usersFile.
func checkAuth(o *options, usersFile string) error {
	switch {
	case o.loopback && o.auth != "" && o.auth != authNoneLoopback:
		return fmt.Errorf("--insecure-loopback and --auth %s exclude each other", o.auth)
	case o.loopback:
		o.auth = authNoneLoopback
	case o.auth == "":
		o.auth = authToken
	}
	if o.auth != authToken && o.token != "" {
		return fmt.Errorf("--token is for --auth token; --auth %s and a token exclude each other", o.auth)
	}
	if o.auth != authUsers && usersFile != "" {
		return fmt.Errorf("--users is for --auth users, not --auth %s", o.auth)
	}
	switch o.auth {
	case authToken:
		if o.token == "" {
			o.token = strings.TrimSpace(os.Getenv(tokenEnv))
		}
		if o.token == "" {
			return fmt.Errorf("no token: pass --token, set $%s, pass --auth users with --users FILE, or --insecure-loopback to serve loopback clients without one", tokenEnv)
		}
	case authUsers:
		if usersFile == "" {
			return errors.New("--auth users needs --users FILE")
		}
		users, err := loadUsers(usersFile)
		if err != nil {
			return err
		}
		o.users = users
	case authNoneLoopback:
	default:
		return fmt.Errorf("--auth %q: want token, users or none-loopback", o.auth)
	}
	return nil
}

// run runs the command line args and returns the exit code. It serves
// until ctx is cancelled.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if err := serve(ctx, o, stdout); err != nil {
		fmt.Fprintln(stderr, "graphserver:", err)
		return exitError
	}
	return exitOK
}

// serve opens the storage, builds the graphs and serves them on o.addr
// until ctx is cancelled; then it stops the runs and closes everything.
func serve(ctx context.Context, o options, stdout io.Writer) (err error) {
	if err := checkSandbox(tools.SandboxStatus(), o.sandbox, o.allowUnsandboxed); err != nil {
		return err
	}
	auth, err := authOptions(o)
	if err != nil {
		return err
	}
	ms, err := newModels(ctx, o.model)
	if err != nil {
		return err
	}
	ws, err := newWorkspaces(o.workspace)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ws.remove()) }()
	st, err := openStorage(ctx, o)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.close()) }()
	opts, err := serveGraphs(ms, ws, st, o.sandbox)
	if err != nil {
		return err
	}
	opts = append(opts, st.serverOptions()...)
	opts = append(opts, server.WithRunLeaseTTL(o.runLease), server.WithMaxBodyBytes(o.maxBody))
	opts = append(opts, auth...)
	srv, err := server.New(opts...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	printBanner(stdout, o, ms, ws, st, ln.Addr().String())

	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Refuse new runs and cancel the running ones, then close the
	// connections (open streams end when their runs do).
	return errors.Join(srv.Shutdown(sctx), hs.Shutdown(sctx))
}

// printBanner says what is served, where, on which models and storage.
func printBanner(w io.Writer, o options, ms models, ws *workspaces, st *storage, addr string) {
	if ms.offline {
		fmt.Fprint(w, `graphserver: OFFLINE MODELS — no --model given, so no LLM is called. Each agent's
  model is canned wording whose answers depend only on the conversation it is sent:
    react     calls add on the two numbers it is asked about, then says the sum;
    research  greps the project for the question's subject and quotes the file;
    coder     quotes the declarations of the files it reads; knows one edit, the
              fix of the go-test sample's off-by-one bug;
    retrai    the scripted answers that fix the bundled shell sample
              (examples/retrai/samples).
  The tools, the goal checks, the tests and the storage are real. Without --workspace
  the agents work on copies of the bundled samples, removed at exit. Pass --model openai:gpt-4o-mini
  (or any llm.New spec) for a real model.
`)
		if len(ws.temp) == 0 {
			fmt.Fprintln(w, "graphserver: the offline models know the bundled samples only: on --workspace their answers will not fit the project")
		}
	} else {
		fmt.Fprintf(w, "graphserver: model %s for every graph\n", o.model)
	}
	for _, d := range []struct{ graph, dir string }{{retraiGraph, ws.retrai}, {researchGraph, ws.research}, {coderGraph, ws.coder}} {
		fmt.Fprintf(w, "graphserver: workspace of %s: %s\n", d.graph, d.dir)
	}
	auth := "a bearer token is required (--auth token); every client holding it sees every thread"
	switch o.auth {
	case authNoneLoopback:
		auth = "no token, loopback clients only (--auth none-loopback)"
	case authUsers:
		auth = fmt.Sprintf("a token per user (--auth users, %d tokens): each user sees only their own threads, runs, assistants and store namespaces", len(o.users))
	}
	fmt.Fprintf(w, "graphserver: graphs %s, %s, %s, %s; storage %s; %s\n", reactGraph, retraiGraph, researchGraph, coderGraph, st.where, auth)
	for _, line := range strings.Split(strings.TrimSuffix(sandboxnote.Lines(tools.SandboxStatus(), o.sandbox), "\n"), "\n") {
		fmt.Fprintf(w, "graphserver: %s\n", line)
	}
	if o.allowUnsandboxed && checkSandbox(tools.SandboxStatus(), o.sandbox, false) != nil {
		fmt.Fprintln(w, "graphserver: WARNING: --allow-unsandboxed: retrai and coder are served without a sandbox, to every client")
	}
	fmt.Fprintf(w, "graphserver: listening on http://%s\n", addr)
}
