package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/internal/process"
)

// BashArgs are the arguments of the bash_exec tool.
type BashArgs struct {
	// Command is the bash script to run.
	Command string `json:"command" jsonschema:"required" jsonschema_description:"Bash command(s) to run with bash -c in the workspace root."`
	// TimeoutSeconds overrides the default time limit.
	TimeoutSeconds int `json:"timeout_seconds,omitempty" jsonschema:"minimum=1" jsonschema_description:"Time limit in seconds (default 60). The command and all its child processes are killed when it expires."`
}

// BashExec returns the bash_exec tool, which runs a command with bash -c in
// the workspace root.
//
// The command runs in its own process group with stdin closed; on timeout
// (WithTimeout, default 60 s; the model may ask for up to WithMaxTimeout)
// or when ctx is done the whole group is killed. The result holds the exit
// code, stdout and stderr; a non-zero exit code is a normal result, not an
// error, and so is a timeout. Output is capped at WithOutputLimit characters
// (default 8,000) keeping head and tail. Cancellation of ctx returns ctx.Err().
//
// bash_exec is not sandboxed: the command can access anything the process
// can. Only its working directory is the workspace root.
func BashExec(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"bash_exec",
		"Run a shell command with `bash -c` in the workspace root and return its exit code, stdout and stderr. "+
			"Use it to build, run programs, inspect the environment or use command-line tools. "+
			"Commands are killed after timeout_seconds (default "+fmt.Sprint(int(cfg.timeout.Seconds()))+"). "+
			"stdin is closed, so do not run interactive programs. Long output is truncated in the middle.",
		func(ctx context.Context, args BashArgs) (string, error) {
			return runBash(ctx, ws, cfg, args)
		},
	)
}

func runBash(ctx context.Context, ws *Workspace, cfg *config, args BashArgs) (string, error) {
	if strings.TrimSpace(args.Command) == "" {
		return "", fmt.Errorf("bash_exec: command is empty")
	}
	if args.TimeoutSeconds < 0 {
		return "", fmt.Errorf("bash_exec: timeout_seconds must be positive, got %d", args.TimeoutSeconds)
	}
	timeout := cfg.timeout
	if args.TimeoutSeconds > 0 {
		timeout = min(time.Duration(args.TimeoutSeconds)*time.Second, cfg.maxTimeout)
	}
	capture := captureBytes(cfg.outputLimit)
	stdout, stderr := newCapBuffer(capture), newCapBuffer(capture)
	res, err := process.Run(ctx, process.Command{
		Name:    "bash",
		Args:    []string{"-c", args.Command},
		Dir:     ws.Root(),
		Timeout: timeout,
		Stdout:  stdout,
		Stderr:  stderr,
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("bash_exec: %w", err)
	}
	outBudget, errBudget := splitBudget(stdout.chars(), stderr.chars(), cfg.outputLimit)

	var b strings.Builder
	fmt.Fprintf(&b, "exit code: %d", res.ExitCode)
	if res.TimedOut {
		fmt.Fprintf(&b, " (timed out after %s; process group killed)", timeout)
	}
	b.WriteString("\n")
	out, errOut := stdout.String(outBudget), stderr.String(errBudget)
	if out != "" {
		b.WriteString("--- stdout ---\n")
		b.WriteString(withNewline(out))
	}
	if errOut != "" {
		b.WriteString("--- stderr ---\n")
		b.WriteString(withNewline(errOut))
	}
	if out == "" && errOut == "" {
		b.WriteString("(no output)\n")
	}
	return b.String(), nil
}

// splitBudget shares limit characters between two outputs: a short one
// keeps all of its characters and the long one gets the rest.
func splitBudget(a, b int64, limit int) (int, int) {
	half := int64(limit / 2)
	switch {
	case a+b <= int64(limit):
		return int(a), int(b)
	case b <= half:
		return limit - int(b), int(b)
	case a <= half:
		return int(a), limit - int(a)
	default:
		return int(half), limit - int(half)
	}
}

func withNewline(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}
