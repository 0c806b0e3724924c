package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/agent/middleware"
	"github.com/agentgraph/agentgraph/checkpoint"
	cpsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/examples/internal/sandboxnote"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/store"
	stsqlite "github.com/agentgraph/agentgraph/store/sqlite"
	"github.com/agentgraph/agentgraph/tools"
)

// maxModelCalls bounds the model calls of one request.
const maxModelCalls = 30

// session is an agent on a project with its memory open, and the
// conversation (thread) requests go to.
type session struct {
	agent   *coder.Agent
	thread  string
	memory  string // the folder of the SQLite files and the REPL's history
	out     io.Writer
	verbose bool
	closers []func() error
}

// open opens the memory of the project o.cwd and builds the agent on the
// model of o.spec.
func open(ctx context.Context, o options, out io.Writer) (*session, error) {
	model, err := llm.New(ctx, o.spec)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "model %s\n", o.spec)
	return openWith(ctx, model, o, out)
}

// openWith is open with the model given.
func openWith(ctx context.Context, model llm.Model, o options, out io.Writer, opts ...coder.Option) (*session, error) {
	root, err := filepath.Abs(o.cwd)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--cwd %s: not a directory", o.cwd)
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return nil, err
	}
	// The memory is kept outside the project: the agent's file tools and
	// commands are confined to the project, not kept out of its folders.
	dir, err := memoryFolder(root, o.memory)
	if err != nil {
		return nil, err
	}
	s := &session{thread: o.session, out: out, verbose: o.verbose, memory: dir}
	saver, err := cpsqlite.Open(ctx, filepath.Join(dir, "sessions.db"))
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, saver.Close)
	st, err := stsqlite.Open(ctx, filepath.Join(dir, "memory.db"), storeOptions()...)
	if err != nil {
		s.close()
		return nil, err
	}
	s.closers = append(s.closers, st.Close)
	mode, _ := tools.ParseSandboxMode(o.sandbox) // checked by run
	fmt.Fprint(out, sandboxnote.Lines(tools.SandboxStatus(), mode))
	// A request makes a handful of model calls; a runaway one (a model
	// that keeps failing the auto-fix loop's tests, say) stops at
	// maxModelCalls, with an error the user sees.
	model = middleware.WrapModel(model, middleware.ModelCallLimit(middleware.WithRunLimit(maxModelCalls)))
	opts = append([]coder.Option{coder.WithStore(st), coder.WithCheckpointer(saver),
		coder.WithToolOptions(tools.WithSandbox(mode)), coder.WithCompileOptions(middleware.RunScope()),
		coder.WithCommandTimeout(o.commandTimeout)}, opts...)
	s.agent, err = coder.New(model, root, opts...)
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// Compile-time checks that the SQLite backends are what the agent takes.
var (
	_ checkpoint.Saver = (*cpsqlite.Saver)(nil)
	_ store.Store      = (*stsqlite.Store)(nil)
)

// close closes the memory.
func (s *session) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		_ = s.closers[i]()
	}
	s.closers = nil
}

// ask runs one request, printing its events as they come and then the
// answer, and returns its result.
func (s *session) ask(ctx context.Context, request string) (coder.Result, error) {
	p := &printer{w: s.out, verbose: s.verbose}
	if err := events.Bridge(ctx, p, "coder", s.agent.Stream(ctx, s.thread, request)); err != nil {
		if held, ok := errors.AsType[*checkpoint.LeaseHeldError](err); ok {
			return coder.Result{}, fmt.Errorf("session %q is taken, by another coder: %w; wait for it to end, or pass another --session", s.thread, held)
		}
		return coder.Result{}, err
	}
	res, err := s.agent.Last(ctx, s.thread)
	if err != nil {
		return coder.Result{}, err
	}
	p.result(res)
	return res, nil
}

// failed reports the outcomes of a request that did not do what was
// asked: -p exits with exitError after them.
func failed(res coder.Result) bool {
	switch res.Outcome {
	case coder.OutcomeError, coder.OutcomeTestsFail, coder.OutcomeRefused, coder.OutcomeTimedOut:
		return true
	}
	return false
}

// printer prints the events of a request: it is the events.Publisher of
// events.Bridge, called on the run's goroutine.
type printer struct {
	w       io.Writer
	verbose bool
}

// Publish implements events.Publisher.
func (p *printer) Publish(ev events.Event) {
	switch d := ev.Data.(type) {
	case coder.IntentChosen:
		fmt.Fprintf(p.w, "intent: %s — %s\n", d.Intent, d.Why())
	case coder.ToolAction:
		if d.Tool == "test_baseline" {
			fmt.Fprintf(p.w, "  tests (%s) before the edit, recorded so that none may vanish: %s\n", d.Target, firstLine(d.Result))
			break
		}
		if d.Tool == "run_tests" && !p.verbose {
			break // the TestRun event that follows says more
		}
		mark := "ok"
		if !d.OK {
			mark = "FAILED"
		}
		fmt.Fprintf(p.w, "  %s %s: %s\n", d.Tool, d.Target, mark)
		if d.Result != "" && (!d.OK || p.verbose || d.Tool == "bash_exec") {
			fmt.Fprint(p.w, indent(d.Result, "      "))
		}
	case coder.TestRun:
		verdict := "PASS"
		if !d.Passed {
			verdict = "FAIL"
		}
		fmt.Fprintf(p.w, "  tests (%s) after attempt %d of %d: %s — %s\n", d.Goal, d.Attempt, d.MaxAttempts, verdict, d.Reason)
	case coder.MemoryHit:
		what := d.Detail
		switch {
		case d.Memory == coder.MemoryHistory:
			what = fmt.Sprintf("%d earlier exchange(s) of the session in the prompt", d.Count)
		case d.Count > 0 && d.Detail != "":
			what = fmt.Sprintf("%d: %s", d.Count, d.Detail)
		}
		fmt.Fprintf(p.w, "  memory: %s (%s)\n", strings.ReplaceAll(d.Memory, "_", " "), what)
	case events.NodeStarted:
		if p.verbose {
			fmt.Fprintf(p.w, "  [node %s]\n", ev.Node)
		}
	}
	// events.Error, the run's error, is not printed here: Bridge returns
	// it, and the caller of ask prints it.
}

// result prints the end of a request.
func (p *printer) result(res coder.Result) {
	note := ""
	if res.Cached {
		note = " (from the query cache)"
	}
	fmt.Fprintf(p.w, "outcome: %s%s\n", res.Outcome, note)
	fmt.Fprintf(p.w, "\n%s\n\n", strings.TrimSpace(res.Answer))
}

// indent indents every line of text.
func indent(text, prefix string) string {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(text, "\n", "\n"+prefix) + "\n"
}

// errQuit ends the REPL.
var errQuit = errors.New("quit")

// firstLine returns the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
