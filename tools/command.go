package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/internal/process"
)

// Command is a program for RunCommand to run in a workspace.
type Command struct {
	// Args are the program and its arguments. A program name without a
	// slash is looked up in PATH, inside the sandbox when there is one.
	Args []string
	// Dir is the working directory, a path in the workspace ("" for its
	// root); one outside it is refused, as the file tools refuse it.
	Dir string
	// ShowProgram makes the program visible, read-only, in the sandbox
	// wherever it is installed (a coding CLI under HOME, a test runner):
	// a name without a slash is looked up in this process's PATH first,
	// and the executable found is run. A program of the system
	// directories or of the workspace is visible anyway.
	ShowProgram bool
	// Env are more "NAME=value" variables, added as given to the scrubbed
	// environment RunCommand builds (see BashExec); a secret the program
	// needs goes here.
	Env []string
	// Stdin is the program's standard input; nil gives it none.
	Stdin io.Reader
	// Stdout and Stderr receive its output; nil discards it.
	Stdout, Stderr io.Writer
}

// CommandResult is the outcome of a command that ran.
type CommandResult struct {
	// ExitCode is the program's exit status, -1 if it was killed.
	ExitCode int
	// TimedOut reports that its time limit (WithTimeout) expired and every
	// process it started was killed.
	TimedOut bool
	// Sandboxed reports that it ran in the bubblewrap sandbox.
	Sandboxed bool
	// LimitHit names the resource limit (see WithLimits) the program
	// reached, LimitProcs, LimitMemory or LimitFileSize, or is "".
	LimitHit string
	// Limit describes that limit and what it did, for a person or a
	// model: "the memory limit of 4 GiB was reached: the kernel killed a
	// process".
	Limit string
}

// The resource limits a command can reach (CommandResult.LimitHit).
const (
	LimitProcs    = "processes"
	LimitMemory   = "memory"
	LimitFileSize = "file size"
)

// RunCommand runs a program in the workspace the way bash_exec runs
// a command (see BashExec): in the bubblewrap sandbox where the machine
// has one (WithSandbox, WithNetwork, WithReadOnlyPaths, WithWritablePaths,
// WithGoCaches), with a scrubbed environment (WithEnv, WithHome, plus
// c.Env), and with every process it started killed when it exits, when its
// time limit expires (WithTimeout, default 60 s; reported as TimedOut,
// not as an error) or when ctx is done (reported as ctx.Err()). It is for
// programs an agent runs on a model's behalf: an external coding CLI, the
// program a model wrote.
//
// A non-zero exit status is a normal result. With SandboxRequired and no
// sandbox, RunCommand returns an error wrapping ErrSandboxUnavailable and
// runs nothing.
func RunCommand(ctx context.Context, ws *Workspace, c Command, opts ...Option) (CommandResult, error) {
	return runCommand(ctx, ws, newConfig(opts), c, 0)
}

// runCommand is RunCommand with the config built; timeout overrides
// cfg.timeout when positive.
func runCommand(ctx context.Context, ws *Workspace, cfg *config, c Command, timeout time.Duration) (CommandResult, error) {
	if len(c.Args) == 0 || c.Args[0] == "" {
		return CommandResult{}, errors.New("tools: RunCommand: no program to run")
	}
	if err := ctx.Err(); err != nil {
		return CommandResult{}, err
	}
	dir, err := ws.Resolve(c.Dir)
	if err != nil {
		return CommandResult{}, err
	}
	var info SandboxInfo
	if cfg.sandbox != SandboxOff {
		info = cfg.sandboxInfo()
		if !info.Available && cfg.sandbox == SandboxRequired {
			return CommandResult{}, fmt.Errorf("%w: %s", ErrSandboxUnavailable, info.Reason)
		}
	}
	if timeout <= 0 {
		timeout = cfg.timeout
	}
	home := cfg.home
	switch {
	case home != "":
	case info.Available:
		home = sandboxHome
	default:
		dir, err := os.MkdirTemp("", "agentgraph-home-")
		if err != nil {
			return CommandResult{}, err
		}
		defer removeTree(dir)
		home = dir
	}
	environ := os.Environ()
	env := commandEnv(environ, cfg, home, info.Available, ws.Root())
	// This machine's go, asked once for the command (nil when there is none).
	var host *goEnv
	if g, err := hostGoEnv(ws.Root()); err == nil {
		host = &g
	}
	caches, err := cfg.openCaches(ws, host)
	if err != nil {
		return CommandResult{}, err
	}
	env = append(env, caches.env()...)
	env = append(env, goEnvironment(cfg, caches, host, ws.Root(), info.Available)...)
	readOnly := cfg.readOnlyPaths
	if cfg.goCaches && host != nil {
		readOnly = append(readOnly[:len(readOnly):len(readOnly)], host.GOROOT, host.GOMODCACHE)
	}
	env = append(env, c.Env...)
	// What the program writes may reach a model: the values of this
	// process's environment that the program was not given are hidden
	// (those c.Env gives it were given on purpose).
	redactor := NewRedactor(environ, givenNames(environ, cfg.envAllow, c.Env)...)
	stdout, stderr := newRedactWriter(redactor, c.Stdout), newRedactWriter(redactor, c.Stderr)
	if c.Stdout != nil && sameWriter(c.Stdout, c.Stderr) {
		// One writer for both, as process.Run (and os/exec) write it:
		// never concurrently.
		stderr = stdout
	}
	for _, w := range []io.Writer{stdout, stderr} {
		if rw, ok := w.(*redactWriter); ok {
			defer rw.flush()
		}
	}
	if c.ShowProgram {
		if exe, ok := hostProgram(c.Args[0]); ok {
			c.Args = append([]string{exe}, c.Args[1:]...)
			readOnly = append(readOnly[:len(readOnly):len(readOnly)], exe)
		}
	}

	limits := DefaultLimits
	if cfg.limitsSet {
		limits = cfg.limits
	}
	cgroups := newLimitCgroups(limits)
	defer cgroups.remove()
	cgroupProcs, cgroupMemory := cgroups.applies()
	if rl := rlimitArgs(limits, cfg.limitsSet, cgroupProcs, cgroupMemory); len(rl) > 0 {
		if prlimit := prlimitPath(ws.Root()); prlimit != "" {
			// prlimit, a system program, sets the rlimits and executes
			// the program, inside the sandbox when there is one.
			c.Args = slices.Concat([]string{prlimit}, rl, []string{"--"}, c.Args)
		}
	}

	name, args := c.Args[0], c.Args[1:]
	var extra []*os.File
	if info.Available {
		sb := sandbox{
			bwrap:         info.Path,
			userNS:        info.UserNamespace,
			dropRoot:      info.DropsRoot,
			network:       cfg.network,
			workspace:     ws.Root(),
			home:          cfg.home,
			readOnlyPaths: readOnly,
			writablePaths: slices.Concat(cfg.writablePaths, caches.dirs()),
			tmpSize:       info.tmpSize,
		}
		a := sb.args()
		if !cfg.vcsWrites {
			// Version-control metadata stays read-only (see
			// WithVCSWrites): a command that wrote .git/config or
			// .git/hooks would run its code in the next git command on
			// the host. It is bound from a descriptor opened without
			// following a symlink, so a .git swapped for a symlink never
			// binds what it points to.
			for _, meta := range vcsMetadataNames {
				p := filepath.Join(ws.Root(), meta)
				f := openNoFollow(p)
				if f == nil {
					continue
				}
				defer f.Close()
				a = append(a, "--ro-bind-fd", strconv.Itoa(3+len(extra)), p)
				extra = append(extra, f)
			}
		}
		if f := seccompFile(); f != nil {
			defer f.Close()
			a = append(a, "--seccomp", strconv.Itoa(3+len(extra)))
			extra = append(extra, f)
		}
		if dir != ws.Root() {
			a = append(a, "--chdir", dir) // the last --chdir wins
		}
		name, args = info.Path, append(append(a, "--"), c.Args...)
	}
	name, args = cgroups.wrap(name, args)
	res, err := process.Run(ctx, process.Command{
		Name:       name,
		Args:       args,
		Dir:        dir,
		Env:        env,
		ClearEnv:   true,
		Timeout:    timeout,
		Stdin:      c.Stdin,
		ExtraFiles: extra,
		Stdout:     stdout,
		Stderr:     stderr,
	})
	if err != nil {
		if ctx.Err() != nil {
			return CommandResult{}, ctx.Err()
		}
		return CommandResult{}, err
	}
	out := CommandResult{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Sandboxed: info.Available}
	procs, memory := cgroups.exceeded()
	switch {
	case memory:
		out.LimitHit = LimitMemory
		out.Limit = fmt.Sprintf("the memory limit of %s was reached: the kernel killed a process", sizeString(limits.MemoryBytes))
	case procs:
		out.LimitHit = LimitProcs
		out.Limit = fmt.Sprintf("the limit of %d processes and threads was reached: starting more failed", limits.Procs)
	case limits.FileBytes > 0 && fileSizeKill(res.Signal, res.ExitCode):
		out.LimitHit = LimitFileSize
		out.Limit = fmt.Sprintf("the file size limit of %s was reached: a process writing beyond it was killed (SIGXFSZ)", sizeString(limits.FileBytes))
	}
	return out, nil
}

// hostProgram returns the absolute path of the program name on this
// machine: name itself when absolute, else as found in this process's
// PATH. ok is false for a relative path (the workspace's) and a name
// not found.
func hostProgram(name string) (string, bool) {
	if !strings.ContainsRune(name, filepath.Separator) {
		exe, err := exec.LookPath(name)
		if err != nil {
			return "", false
		}
		name = exe
	}
	return name, filepath.IsAbs(name)
}

// goEnv is the Go toolchain of this machine, as `go env` reports it.
type goEnv struct {
	GOROOT, GOCACHE, GOMODCACHE string
	// Where modules come from, as configured here.
	GOPROXY, GOSUMDB, GOPRIVATE, GONOPROXY, GONOSUMDB, GOINSECURE, GOFLAGS string
}

// goEnvironment returns the variables that point a command's go at its
// build cache and module cache. With WithGoCaches, go is this machine's
// (GOROOT), with its module settings, and fetches no other toolchain;
// its module cache is this machine's, read-only in the sandbox, where go
// therefore fetches no module (GOPROXY=off) nor changes go.mod
// (-mod=readonly). Unsandboxed, the build cache is this machine's too;
// in the sandbox it is the writable one of the cache directory, never
// this machine's. Without WithGoCaches, GOCACHE and GOPATH (and so the
// module cache) are in the cache directory, and in the sandbox without
// network go neither tries to fetch a module nor changes go.mod.
func goEnvironment(cfg *config, b buildCaches, host *goEnv, root string, sandboxed bool) []string {
	var g goEnv
	if host != nil {
		g = *host
	}
	if cfg.goCaches && host != nil {
		env := []string{"GOROOT=" + g.GOROOT, "GOMODCACHE=" + g.GOMODCACHE, "GOTOOLCHAIN=local",
			"GOSUMDB=" + g.GOSUMDB, "GOPRIVATE=" + g.GOPRIVATE, "GONOPROXY=" + g.GONOPROXY,
			"GONOSUMDB=" + g.GONOSUMDB, "GOINSECURE=" + g.GOINSECURE}
		if !sandboxed {
			env = append(env, "GOCACHE="+g.GOCACHE, "GOFLAGS="+g.GOFLAGS)
			if !SecretEnvVar("GOPROXY=" + g.GOPROXY) { // a proxy URL with a token is not passed on
				env = append(env, "GOPROXY="+g.GOPROXY)
			}
			return env
		}
		return append(env, "GOCACHE="+b.dir(cacheGoBuild), "GOFLAGS="+goFlagsReadOnly(g.GOFLAGS, root), "GOPROXY=off")
	}
	gopath := b.dir(cacheGoPath)
	env := []string{"GOCACHE=" + b.dir(cacheGoBuild), "GOPATH=" + gopath, "GOMODCACHE=" + filepath.Join(gopath, "pkg", "mod")}
	if sandboxed && !cfg.network {
		env = append(env, "GOFLAGS="+goFlagsReadOnly(g.GOFLAGS, root), "GOPROXY=off")
	}
	return env
}

// hostGoEnv asks this machine's go for its root and caches: the go of
// this process's PATH outside the workspace root, once per go found. It
// runs on the host, unsandboxed: a go the model planted in the workspace,
// on a PATH entry that lies inside it (an activated .venv/bin, direnv's
// PATH_add bin), must never be the one asked.
func hostGoEnv(root string) (goEnv, error) {
	goBin, err := LookPathOutside(os.Getenv("PATH"), root, "go")
	if err != nil {
		return goEnv{}, err
	}
	ask, _ := goEnvs.LoadOrStore(goBin, sync.OnceValues(func() (goEnv, error) { return askGoEnv(goBin) }))
	return ask.(func() (goEnv, error))()
}

// goEnvs holds, for each go program asked, its answer (see hostGoEnv).
var goEnvs sync.Map // path → func() (goEnv, error)

// askGoEnv runs goBin env for the root, caches and module settings.
func askGoEnv(goBin string) (goEnv, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, goBin, "env", "-json", "GOROOT", "GOCACHE", "GOMODCACHE",
		"GOPROXY", "GOSUMDB", "GOPRIVATE", "GONOPROXY", "GONOSUMDB", "GOINSECURE", "GOFLAGS").Output()
	if err != nil {
		return goEnv{}, fmt.Errorf("go env: %w", err)
	}
	var g goEnv
	if err := json.Unmarshal(out, &g); err != nil {
		return goEnv{}, fmt.Errorf("go env: %w", err)
	}
	for _, p := range []string{g.GOROOT, g.GOCACHE, g.GOMODCACHE} {
		if !filepath.IsAbs(p) || strings.ContainsAny(p, "\x00") {
			return goEnv{}, fmt.Errorf("go env: unusable path %q", p)
		}
	}
	return g, nil
}

// givenNames returns the names of environ's variables a command is given:
// allow, the names c.Env sets, and those whose value c.Env passes under
// another name.
func givenNames(environ, allow, given []string) []string {
	if len(given) == 0 {
		return allow
	}
	names := slices.Clone(allow)
	values := make(map[string]bool, len(given))
	for _, kv := range given {
		name, value, _ := strings.Cut(kv, "=")
		names = append(names, name)
		values[value] = true
	}
	for _, kv := range environ {
		if name, value, ok := strings.Cut(kv, "="); ok && values[value] {
			names = append(names, name)
		}
	}
	return names
}
