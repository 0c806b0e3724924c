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
// Sandboxed or not, the command gets an environment by allowlist: PATH
// (without its entries inside the workspace or relative ones, where a
// model could plant a go or a python), LANG, LANGUAGE, LC_*, TERM, TZ,
// USER, LOGNAME, the toolchains' variables (GOFLAGS, GOPATH, GOROOT,
// GOPROXY, ..., PYTHONPATH, VIRTUAL_ENV, CARGO_HOME, NODE_PATH,
// JAVA_HOME, ...), plus WithEnv's, and nothing else; a secret-looking one
// (a name such as OPENAI_API_KEY, see SecretEnvName, or a value such as a
// URL with a password, see SecretEnvVar) passes only when WithEnv names
// it exactly. Whatever the command prints, the values of this process's
// other variables are replaced by [redacted] (see NewRedactor) before
// the result is returned, so that a command reading /proc/*/environ
// shows no secret of this process either;
// with HOME set to a fresh directory (or WithHome's) and the build caches
// of go, pip and npm in a persistent, writable directory of their own (see
// WithCacheDir), stdin is closed, and
// when it ends, times out (WithTimeout, default 60 s; the model may ask for
// up to WithMaxTimeout) or ctx is done, every process it started is killed,
// including background jobs and processes that called setsid. How
// thoroughly that works without the sandbox is described by
// SandboxStatus().ProcessTree.
//
// Each command is bounded by WithLimits (DefaultLimits: 2,048 processes
// and threads, 4 GiB of memory, 4 GiB per file; see Limits for how and
// where each applies); the first line of the result says which limit a
// command reached.
//
// The result holds the exit code, stdout and stderr; a non-zero exit code
// is a normal result, not an error, and so is a timeout. Output is capped
// at WithOutputLimit characters (default 8,000) keeping head and tail.
// Cancellation of ctx returns ctx.Err(). Commands ruled out by
// WithCommandAllow or WithCommandDeny return *CommandRefusedError.
//
// Run by root, sandboxed commands do not run as root: they run as
// SandboxUID and SandboxGID in a user namespace of their own, with no
// capabilities and no way to make further user namespaces
// (SandboxStatus().DropsRoot; where the kernel refuses the user
// namespace they run as uid 0 without capabilities). The kernel still
// sees them as root, the owner of the workspace, which is what keeps it
// writable to them, and of root's files, which it would let them read.
// So every file (and directory) of the directories they see read-only —
// the system directories, WithReadOnlyPaths', the toolchains — that not
// everyone may read is hidden: an empty file or directory is bound over
// it. The rule and its limits: the trees are scanned once per process (the
// system directories while SandboxStatus probes), so a file made
// root-only later in a tree already scanned is not hidden; a root-only
// directory that holds the workspace or a writable path stays visible;
// and the writable paths (the workspace, HOME, the caches, WithWritablePaths')
// are not scanned: what root keeps there is readable, and writable, as
// root's workspace is. Resource limits that the kernel does not apply to
// root (the number of processes) come from a cgroup (see WithLimits).
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
	desc += " " + sandboxSentence(cfg)
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
	if res.Limit != "" {
		fmt.Fprintf(&b, " (%s)", res.Limit)
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
