// Command coderag is a code research agent: it indexes a project — its
// code chunked by definition, searchable by keyword (BM25), by vector and
// by both (hybrid), with the call graph of its Go packages — and answers
// questions about it with a plan-and-execute agent (package
// agent/planexec) whose tools search and read the indexed code.
//
//	coderag index [--rebuild] [DIR]
//	coderag search "query" [--mode bm25|vector|hybrid] [--json] [--limit N] [--dir DIR]
//	coderag callers NAME [--dir DIR] [--json]
//	coderag callees NAME [--dir DIR] [--json]
//	coderag ask "question" [--model SPEC] [--verbose] [--dir DIR]
//	coderag graph
//
// `coderag index` indexes DIR (default: the current directory) into
// DIR/.coderag, incrementally: files whose content is unchanged are
// skipped and deleted files are dropped. On a terminal it shows a
// progress line; at the end it prints the files and chunks indexed and
// the files looked at per second. --rebuild deletes the index first: an
// index that cannot be read (a damaged DIR/.coderag) is reported with
// that advice. coderag processes on one folder take turns: while one
// indexes or asks, another `index`, `ask` or `search` waits (codeindex
// holds the folder under flock(2) while an index is open; not on systems
// without it).
//
// `coderag search` queries the index of --dir (default: the current
// directory): hybrid (the default: BM25 and vector scores, min-max
// normalised, added and multiplied by the number of rankings that found
// the chunk — codeindex's default fusion, CombMNZ), bm25 or vector.
// Vectors come from codeindex's offline HashingEmbedder — hashed tokens
// and character trigrams, a lexical baseline, not a semantic model. With
// --json it prints one JSON object per hit and line: path (relative to
// the indexed root), start_line, end_line, symbol, kind and score.
//
// `coderag callers` and `coderag callees` answer from the call graph of
// the Go packages under --dir (class hierarchy analysis, see
// codeindex.CallGraph) and from those of its Python and
// JavaScript/TypeScript files (resolved by name, see codeindex.PythonCalls
// and codeindex.JSCalls, and marked approximate): each call
// site as file:line, the enclosing function and the function called;
// calls through an interface, a function value or an attribute are
// marked dynamic. NAME is a symbol as search prints it
// ("pricing.Discount", "cart.(*Cart).Add", "shop.pricing.Cart.checkout"),
// a full Go name ("example.com/bookshop/pricing.Discount") or a bare
// function name.
//
// `coderag ask` updates the index of --dir and runs the agent on the
// question, printing its plan, each step, each tool call with the start
// of its result, each finding and the refinery's decisions as they
// happen, then the answer; --verbose also prints the model calls and the
// agent's whole state after every superstep. The agent's tools are
// search_codebase, read_file, list_directory, get_callers and
// get_callees, confined to the indexed root (paths outside it, through
// "..", absolute paths or symlinks, are refused); each output is cut to
// 24,000 characters (head and tail kept), and each step's finding to
// 60,000, as every finding goes into the prompts that follow.
//
// The model comes from --model, else $CODERAG_MODEL, as a spec of llm.New:
// "openai:gpt-4o" (OPENAI_API_KEY), "anthropic:claude-sonnet-4-5"
// (ANTHROPIC_API_KEY), "ollama:qwen3" or
// "openai-compatible:<model>@<base URL>". With no model configured,
// `coderag ask` runs offline: it copies a small bundled Go project into a
// temporary directory, indexes it for real, and answers with a SCRIPTED
// model whose replies are canned — the tool calls it makes run against
// the real index and files, and their results are printed, but the text
// of its answers is written in advance. It says so, and how to use a real
// model.
//
// `coderag graph` prints the agent's graph as a Mermaid flowchart.
//
// Install it from a clone of the repository, at its root, with
//
//	go install ./examples/coderag
//
// (or `cd examples && go install ./coderag`): it builds in the repository's
// Go workspace. `go install …@latest` cannot work, as the examples module
// reaches the SDK and codeindex through replace directives.
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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0 // the command succeeded
	exitError = 1 // the command failed
	exitUsage = 2 // bad command line
)

// run runs the command line args (without the program name) and returns
// the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "index":
		return indexCommand(ctx, rest, stdout, stderr)
	case "search":
		return searchCommand(ctx, rest, stdout, stderr)
	case "callers", "callees":
		return callsCommand(ctx, cmd, rest, stdout, stderr)
	case "ask":
		return askCommand(ctx, rest, stdout, stderr)
	case "graph":
		return graphCommand(rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "coderag: unknown command %q\n\n%s", cmd, usage)
	return exitUsage
}

const usage = `coderag — index a code base and ask questions about it.

Usage:
  coderag index [--rebuild] [DIR]
                                index DIR (default .) into DIR/.coderag, incrementally
  coderag search "query" [--mode bm25|vector|hybrid] [--json] [--limit N] [--dir DIR]
                                search the index of DIR (default .)
  coderag callers NAME [--dir DIR] [--json]
                                the call sites of a Go or Python function
  coderag callees NAME [--dir DIR] [--json]
                                the calls a Go or Python function makes
  coderag ask "question" [--model SPEC] [--verbose] [--dir DIR]
                                answer a question with the plan-and-execute agent
                                (with no model configured: offline, scripted, on a bundled sample)
  coderag graph                 print the agent's graph (Mermaid)

Run "coderag COMMAND -h" for a command's flags.
`

// modelEnv supplies the model of ask when --model is not given.
const modelEnv = "CODERAG_MODEL"

// parseFlags parses args with fs, allowing flags before, between and after
// the positional arguments (flag.FlagSet alone stops at the first), and
// returns the positional arguments. The code is exitOK for -h and
// exitUsage for a bad flag; ok is false then.
func parseFlags(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, exitOK, true
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), exitOK, true
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// newFlagSet returns a flag set for the command cmd whose usage prints
// synopsis and about before the flags.
func newFlagSet(cmd, synopsis, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("coderag "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: coderag %s\n\n%s\n\nFlags:\n", synopsis, about)
		fs.PrintDefaults()
	}
	return fs
}

// usageErrorf prints a usage error of the command fs and returns exitUsage.
func usageErrorf(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(fs.Output(), "%s: %s\n\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return exitUsage
}

// fail prints err and returns exitError.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "coderag:", strings.TrimPrefix(err.Error(), "coderag: "))
	return exitError
}
