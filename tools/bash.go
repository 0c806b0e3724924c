package tools

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
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
// Where the machine has bubblewrap (see SandboxStatus) the command runs in
// a sandbox: the workspace is the only writable directory besides a
// private /tmp and HOME, the system directories (/usr, /etc, ...) are
// read-only, the rest of the file system (home directories included) is
// absent, there is no network unless WithNetwork allows it, and the
// command runs in its own pid namespace with no capabilities. With
// WithSandbox(SandboxRequired) a machine without the sandbox refuses every
// command; with SandboxOff the sandbox is never used.
//
// Sandboxed or not, the command gets a scrubbed environment (PATH, LANG,
// LC_*, TERM, TZ, USER, LOGNAME, plus WithEnv's; never a secret-looking
// variable such as OPENAI_API_KEY unless named exactly, see SecretEnvName)
// with HOME set to a fresh directory (or WithHome's) and the build caches
// of go, pip and npm in a persistent, writable directory of their own (see
// WithCacheDir), stdin is closed, and
// when it ends, times out (WithTimeout, default 60 s; the model may ask for
// up to WithMaxTimeout) or ctx is done, every process it started is killed,
// including background jobs and processes that called setsid. How
// thoroughly that works without the sandbox is described by
// SandboxStatus().ProcessTree.
//
// The result holds the exit code, stdout and stderr; a non-zero exit code
// is a normal result, not an error, and so is a timeout. Output is capped
// at WithOutputLimit characters (default 8,000) keeping head and tail.
// Cancellation of ctx returns ctx.Err(). Commands ruled out by
// WithCommandAllow or WithCommandDeny return *CommandRefusedError.
//
// Without the sandbox the command can read and write anything this
// process can, use the network and read this process's environment through
// /proc: the scrubbed environment then only keeps secrets out of sight,
// it does not protect them.
func BashExec(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	desc := "Run a shell command with `bash -c` in the workspace root and return its exit code, stdout and stderr. " +
		"Use it to build, run programs, inspect the environment or use command-line tools. " +
		"Commands are killed after timeout_seconds (default " + fmt.Sprint(int(cfg.timeout.Seconds())) + "), " +
		"and background processes are killed when the command ends. " +
		"stdin is closed, so do not run interactive programs. Long output is truncated in the middle."
	if cfg.sandbox != SandboxOff && cfg.sandboxInfo().Available {
		desc += " Commands run in a sandbox: only the workspace, /tmp, $HOME and the build caches are writable"
		if !cfg.network {
			desc += ", and there is no network access"
		}
		desc += "."
	}
	return New("bash_exec", desc,
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
	if err := checkCommand(cfg, args.Command); err != nil {
		return "", err
	}
	timeout := cfg.timeout
	if args.TimeoutSeconds > 0 {
		timeout = min(time.Duration(args.TimeoutSeconds)*time.Second, cfg.maxTimeout)
	}
	capture := captureBytes(cfg.outputLimit)
	stdout, stderr := newCapBuffer(capture), newCapBuffer(capture)
	res, err := runCommand(ctx, ws, cfg, Command{Args: []string{"bash", "-c", args.Command}, Stdout: stdout, Stderr: stderr}, timeout)
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
		fmt.Fprintf(&b, " (timed out after %s; all its processes were killed)", timeout)
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

// removeTree removes dir like os.RemoveAll, first making read-only
// directories in it writable (Go's module cache has them).
func removeTree(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
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
