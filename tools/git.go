package tools

import (
	"context"
	"fmt"
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

// gitEnv keeps git non-interactive, uncolored and lock-free for reads.
var gitEnv = []string{"GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "PAGER=cat", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C"}

// runGit runs git with args in the workspace root and returns its capped
// stdout. A non-zero exit status is an error carrying git's stderr.
func runGit(ctx context.Context, ws *Workspace, cfg *config, tool string, args ...string) (string, error) {
	capture := captureBytes(cfg.outputLimit)
	stdout, stderr := newCapBuffer(capture), newCapBuffer(capture)
	full := append([]string{"--no-pager", "-c", "color.ui=never", "-c", "core.quotepath=off"}, args...)
	res, err := process.Run(ctx, process.Command{
		Name:    "git",
		Args:    full,
		Dir:     ws.Root(),
		Env:     gitEnv,
		Timeout: cfg.timeout,
		Stdout:  stdout,
		Stderr:  stderr,
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
func GitStatus(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"git_status",
		"Show the current git branch and the modified, staged and untracked files of the workspace (git status --short --branch).",
		func(ctx context.Context, _ struct{}) (string, error) {
			out, err := runGit(ctx, ws, cfg, "git_status", "status", "--short", "--branch", "--", ".")
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
// staged) changes of the workspace or of one path in it.
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
			gitArgs := []string{"diff", "--no-ext-diff"}
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
