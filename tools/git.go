package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/agentgraph/agentgraph/internal/process"
)

const (
	// defaultLogCount is git_log's default max_count.
	defaultLogCount = 10
	// maxLogCount bounds git_log's max_count.
	maxLogCount = 200
)

// gitSafeConfig disables the settings through which a repository's own
// configuration (.git/config, which a model or a cloned repository may
// have written) makes git run programs: fsmonitor and hooks, pagers and
// editors, external diff and signature programs, credential helpers and
// transports (which could run ssh or a remote helper, and which git status
// and diff may use to fetch missing objects of a partial clone). They are
// given with -c, which takes precedence over every configuration file and
// reaches git's child processes. Filter and diff drivers have names chosen
// by the repository; gitDriverConfig neutralizes those.
var gitSafeConfig = []string{
	"core.fsmonitor=false",
	"core.hooksPath=" + os.DevNull,
	"core.pager=cat",
	"core.editor=:",
	"sequence.editor=:",
	"core.askPass=",
	"core.sshCommand=false",
	"diff.external=",
	"credential.helper=",
	"gpg.program=false",
	"gpg.openpgp.program=false",
	"gpg.x509.program=false",
	"gpg.ssh.program=false",
	"log.showSignature=false",
	"protocol.allow=never",
	"protocol.ext.allow=never",
	"protocol.file.allow=never",
	"status.submoduleSummary=false",
	"submodule.recurse=false",
	"safe.bareRepository=explicit",
	"color.ui=never",
	"core.quotepath=off",
}

// gitEnvAllow are the variables of this process's environment git gets.
var gitEnvAllow = []string{"PATH", "TZ"}

// gitEnv returns git's whole environment: a few variables of this process,
// no system or global configuration, HOME (where git looks for more) set
// to the empty directory home, and git kept non-interactive, uncolored and
// lock-free for reads.
func gitEnv(home string) []string {
	env := []string{
		"HOME=" + home, "XDG_CONFIG_HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=",
		"GIT_PAGER=cat", "PAGER=cat", "GIT_EDITOR=:",
		"GIT_OPTIONAL_LOCKS=0", "GIT_NO_LAZY_FETCH=1", "LC_ALL=C",
	}
	return passEnv(env, os.Environ(), func(_, name string) bool { return slices.Contains(gitEnvAllow, name) })
}

// UnsafeRepositoryError is returned by the git tools when the repository's
// configuration sets something they cannot neutralize, such as core.worktree
// (which would let git show files outside the workspace).
type UnsafeRepositoryError struct {
	// Key is the configuration key.
	Key string
}

// Error implements error.
func (e *UnsafeRepositoryError) Error() string {
	return fmt.Sprintf("the repository configuration sets %s, which the git tools do not allow", e.Key)
}

// gitDriverConfig lists the repository's configuration keys (without
// running anything) and returns -c settings that disable every filter and
// diff driver it defines, whatever its name: a filter's clean command
// runs on git status, a textconv on git diff.
func gitDriverConfig(ctx context.Context, ws *Workspace, cfg *config, env []string) ([]string, error) {
	var stdout, stderr bytes.Buffer
	args := slices.Concat(gitConfigArgs(gitSafeConfig), []string{"config", "--list", "--name-only", "--includes", "-z"})
	res, err := process.Run(ctx, process.Command{
		Name: "git", Args: args, Dir: ws.Root(), Env: env, ClearEnv: true,
		Timeout: cfg.timeout, Stdout: &stdout, Stderr: &stderr,
	})
	if err != nil {
		return nil, err
	}
	if res.TimedOut || res.ExitCode != 0 {
		// Outside a repository, or unreadable configuration: the command
		// itself reports it.
		return nil, nil
	}
	var extra []string
	seen := map[string]bool{}
	for key := range strings.SplitSeq(stdout.String(), "\x00") {
		key = strings.TrimSpace(key)
		lower := strings.ToLower(key)
		if lower == "core.worktree" {
			return nil, &UnsafeRepositoryError{Key: key}
		}
		section, rest, ok := strings.Cut(key, ".")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '.')
		if i <= 0 {
			continue
		}
		name := rest[:i]
		var neutral []string
		switch strings.ToLower(section) {
		case "filter":
			neutral = []string{"clean=", "smudge=", "process=", "required=false"}
		case "diff":
			neutral = []string{"command=", "textconv="}
		case "merge":
			neutral = []string{"driver="}
		default:
			continue
		}
		if strings.ContainsAny(name, "=\n") {
			return nil, &UnsafeRepositoryError{Key: key}
		}
		id := strings.ToLower(section) + "." + name
		if seen[id] {
			continue
		}
		seen[id] = true
		for _, n := range neutral {
			extra = append(extra, id+"."+n)
		}
	}
	return extra, nil
}

// gitConfigArgs turns settings into git -c options.
func gitConfigArgs(settings []string) []string {
	args := make([]string, 0, 2*len(settings))
	for _, s := range settings {
		args = append(args, "-c", s)
	}
	return args
}

// runGit runs git with args in the workspace root and returns its capped
// stdout. A non-zero exit status is an error carrying git's stderr.
//
// git runs with the repository's code-running settings disabled (see
// gitSafeConfig and gitDriverConfig), without system or global
// configuration and with a scrubbed environment, so that neither a
// repository's configuration nor this process's environment can make it
// run a program.
func runGit(ctx context.Context, ws *Workspace, cfg *config, tool string, args ...string) (string, error) {
	home, err := os.MkdirTemp("", "agentgraph-git-home-")
	if err != nil {
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	defer os.RemoveAll(home)
	env := gitEnv(home)
	drivers, err := gitDriverConfig(ctx, ws, cfg, env)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	capture := captureBytes(cfg.outputLimit)
	stdout, stderr := newCapBuffer(capture), newCapBuffer(capture)
	full := slices.Concat([]string{"--no-pager"}, gitConfigArgs(gitSafeConfig), gitConfigArgs(drivers), args)
	res, err := process.Run(ctx, process.Command{
		Name:     "git",
		Args:     full,
		Dir:      ws.Root(),
		Env:      env,
		ClearEnv: true,
		Timeout:  cfg.timeout,
		Stdout:   stdout,
		Stderr:   stderr,
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	if res.TimedOut {
		return "", fmt.Errorf("%s: git timed out after %s", tool, cfg.timeout)
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(stderr.String(cfg.outputLimit))
		if strings.Contains(strings.ToLower(msg), "not a git repository") {
			return "", fmt.Errorf("%s: the workspace %s is not a git repository", tool, ws.Root())
		}
		return "", fmt.Errorf("%s: git %s failed (exit code %d): %s", tool, args[0], res.ExitCode, msg)
	}
	return stdout.String(cfg.outputLimit), nil
}

// GitStatus returns the git_status tool, which shows the branch and the
// changed files (git status --short --branch) under the workspace root.
// Submodules are reported when their commit changed, not when only their
// work tree did (--ignore-submodules=dirty), since looking into their work
// trees would run git with their configuration. Like every git tool it runs
// git so that the repository's configuration cannot make it run programs
// (see the package documentation).
func GitStatus(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"git_status",
		"Show the current git branch and the modified, staged and untracked files of the workspace (git status --short --branch).",
		func(ctx context.Context, _ struct{}) (string, error) {
			out, err := runGit(ctx, ws, cfg, "git_status", "status", "--short", "--branch", "--ignore-submodules=dirty", "--", ".")
			if err != nil {
				return "", err
			}
			return out, nil
		},
	)
}

// GitDiffArgs are the arguments of the git_diff tool.
type GitDiffArgs struct {
	// Path limits the diff to a file or directory.
	Path string `json:"path,omitempty" jsonschema_description:"File or directory to diff, relative to the workspace root. Default: the whole workspace."`
	// Staged shows staged changes instead of unstaged ones.
	Staged bool `json:"staged,omitempty" jsonschema_description:"Show staged (index) changes instead of unstaged working-tree changes."`
}

// GitDiff returns the git_diff tool, which shows unstaged (or, with staged,
// staged) changes of the workspace or of one path in it, without external
// diff programs or textconv filters.
func GitDiff(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"git_diff",
		"Show the git diff of the workspace: unstaged changes by default, staged changes with staged=true. Optionally limited to a path.",
		func(ctx context.Context, args GitDiffArgs) (string, error) {
			p, err := ws.Resolve(args.Path)
			if err != nil {
				return "", fmt.Errorf("git_diff: %w", err)
			}
			gitArgs := []string{"diff", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty"}
			if args.Staged {
				gitArgs = append(gitArgs, "--cached")
			}
			gitArgs = append(gitArgs, "--", ws.rel(p))
			out, err := runGit(ctx, ws, cfg, "git_diff", gitArgs...)
			if err != nil {
				return "", err
			}
			if out == "" {
				if args.Staged {
					return "(no staged changes)\n", nil
				}
				return "(no unstaged changes)\n", nil
			}
			return out, nil
		},
	)
}

// GitLogArgs are the arguments of the git_log tool.
type GitLogArgs struct {
	// MaxCount is the number of commits to show; 0 means 10.
	MaxCount int `json:"max_count,omitempty" jsonschema:"minimum=1,maximum=200,default=10" jsonschema_description:"Number of commits to show. Default: 10."`
}

// GitLog returns the git_log tool, which lists recent commits (hash, date,
// author, subject) touching the workspace.
func GitLog(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"git_log",
		"List the most recent git commits (short hash, date, author, subject).",
		func(ctx context.Context, args GitLogArgs) (string, error) {
			n := args.MaxCount
			switch {
			case n < 0:
				return "", fmt.Errorf("git_log: max_count must be positive, got %d", n)
			case n == 0:
				n = defaultLogCount
			case n > maxLogCount:
				n = maxLogCount
			}
			out, err := runGit(ctx, ws, cfg, "git_log", "log", "-n", strconv.Itoa(n),
				"--date=short", "--pretty=format:%h %ad %an: %s", "--", ".")
			if err != nil {
				return "", err
			}
			if out == "" {
				return "(no commits)\n", nil
			}
			return withNewline(out), nil
		},
	)
}
