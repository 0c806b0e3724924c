package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/chzyer/readline"

	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/llm"
)

const replHelp = `Type a request and press Enter; for example:
  what does Total do in cart.go?      (read)
  fix the failing test                (edit, then the tests run)
  run go test ./...                   (run_command)
  remember that I prefer short names  (profile)
Commands:
  /prefs    the preferences remembered
  /session  the session's name and memory files
  /help     this text
  /quit     leave (so do Ctrl-D and "exit")
`

// lineReader reads the REPL's lines.
type lineReader interface {
	readLine() (string, error) // io.EOF at the end
	close()
}

// repl reads requests line by line and runs each. On a terminal it has
// line editing and a history kept in the memory folder.
func repl(ctx context.Context, s *session, stdin io.Reader, stdout, stderr io.Writer) int {
	lr, err := newLineReader(stdin, stdout, stderr, filepath.Join(s.memory, "history"))
	if err != nil {
		return fail(stderr, err)
	}
	defer lr.close()
	fmt.Fprintf(stdout, "coder in %s, session %q. /help for help, /quit to leave.\n", s.agent.Workspace(), s.thread)
	if res, err := s.agent.Last(ctx, s.thread); err == nil && res.Request != "" {
		fmt.Fprintf(stdout, "(continuing the session: its last request was %q)\n", res.Request)
	}
	for {
		line, err := lr.readLine()
		if errors.Is(err, io.EOF) || errors.Is(err, readline.ErrInterrupt) {
			return exitOK
		}
		if err != nil {
			return fail(stderr, err)
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if err := s.command(ctx, line); errors.Is(err, errQuit) {
			return exitOK
		} else if err != nil {
			fmt.Fprintln(stderr, "coder:", err)
			if ctx.Err() != nil {
				return exitError
			}
		}
	}
}

// command runs one line of the REPL: a slash command or a request.
func (s *session) command(ctx context.Context, line string) error {
	switch line {
	case "/quit", "/exit", "exit", "quit":
		return errQuit
	case "/help":
		fmt.Fprint(s.out, replHelp)
		return nil
	case "/session":
		fmt.Fprintf(s.out, "session %q: %s (sessions.db: the conversation, memory.db: preferences, query cache, logs)\n",
			s.thread, s.memory)
		return nil
	case "/prefs":
		prefs, err := s.agent.Memory().Preferences(ctx)
		if err != nil {
			return err
		}
		if len(prefs) == 0 {
			fmt.Fprintln(s.out, `no preferences yet (say "remember that I prefer …")`)
		}
		for _, p := range prefs {
			fmt.Fprintf(s.out, "  - %s\n", p.Text)
		}
		return nil
	}
	if strings.HasPrefix(line, "/") {
		return fmt.Errorf("unknown command %s (/help lists them)", line)
	}
	_, err := s.ask(ctx, line)
	return err
}

// newLineReader returns a reader with line editing on a terminal, and a
// plain line scanner otherwise (a pipe, a test).
func newLineReader(stdin io.Reader, stdout, stderr io.Writer, history string) (lineReader, error) {
	if f, ok := stdin.(*os.File); ok && readline.IsTerminal(int(f.Fd())) {
		rl, err := readline.NewEx(&readline.Config{
			Prompt:          "coder> ",
			HistoryFile:     history,
			InterruptPrompt: "^C",
			EOFPrompt:       "exit",
			Stdin:           f,
			Stdout:          stdout,
			Stderr:          stderr,
		})
		if err != nil {
			return nil, err
		}
		return terminal{rl}, nil
	}
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	return &scanner{sc: sc, out: stdout}, nil
}

// terminal is a lineReader with line editing.
type terminal struct{ rl *readline.Instance }

func (t terminal) readLine() (string, error) { return t.rl.Readline() }
func (t terminal) close()                    { _ = t.rl.Close() }

// scanner is a lineReader over a plain reader.
type scanner struct {
	sc  *bufio.Scanner
	out io.Writer
}

func (s *scanner) readLine() (string, error) {
	fmt.Fprint(s.out, "coder> ")
	if s.sc.Scan() {
		return s.sc.Text(), nil
	}
	if err := s.sc.Err(); err != nil {
		return "", err
	}
	return "", io.EOF
}

func (s *scanner) close() {}

// graphCommand prints the agent's graph as Mermaid.
func graphCommand(stdout, stderr io.Writer) int {
	dir, err := os.MkdirTemp("", "coder-graph-")
	if err != nil {
		return fail(stderr, err)
	}
	defer os.RemoveAll(dir)
	a, err := coder.New(llm.NewScripted(), dir)
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintln(stdout, a.Graph().Mermaid())
	return exitOK
}
