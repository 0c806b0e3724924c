package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// GitStageArgs are the arguments of the git_stage tool.
type GitStageArgs struct {
	// Paths are the files or directories to stage.
	Paths []string `json:"paths,omitempty" jsonschema_description:"Files or directories to stage, relative to the workspace root."`
	// All stages every change of the workspace (git add --all).
	All bool `json:"all,omitempty" jsonschema_description:"Stage every change of the workspace, deletions included."`
}

// GitStage returns the git_stage tool, which stages files (git add) of the
// workspace. Every path must resolve inside the workspace and outside
// version-control metadata; like every git tool it runs git so that the
// repository's configuration cannot make it run programs (filters and
// hooks are off).
func GitStage(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"git_stage",
		"Stage files for the next commit (git add). Give paths, or all=true for every change.",
		func(ctx context.Context, args GitStageArgs) (string, error) {
			if len(args.Paths) == 0 && !args.All {
				return "", errors.New("git_stage: give paths or all=true")
			}
			gitArgs := []string{"add"}
			if args.All {
				gitArgs = append(gitArgs, "--all", "--", ".")
			} else {
				gitArgs = append(gitArgs, "--")
				for _, p := range args.Paths {
					rel, err := ws.rootPath(p)
					if err != nil {
						return "", fmt.Errorf("git_stage: %w", err)
					}
					if c, bad := vcsComponent(rel); bad {
						return "", fmt.Errorf("git_stage: %w", &ProtectedPathError{Path: p, Component: c})
					}
					gitArgs = append(gitArgs, rel)
				}
			}
			if _, err := runGit(ctx, ws, cfg, "git_stage", gitArgs...); err != nil {
				return "", err
			}
			status, err := runGit(ctx, ws, cfg, "git_stage", "status", "--short", "--ignore-submodules=dirty", "--", ".")
			if err != nil {
				return "", err
			}
			return "staged; status now:\n" + withNewline(status), nil
		},
	)
}

// GitCommitArgs are the arguments of the git_commit tool.
type GitCommitArgs struct {
	// Message is the commit message.
	Message string `json:"message" jsonschema:"required" jsonschema_description:"The commit message."`
}

// Identity used by git_commit when the repository sets none (the git tools
// read no global configuration).
const (
	DefaultCommitName  = "agentgraph"
	DefaultCommitEmail = "agentgraph@localhost"
)

// GitCommit returns the git_commit tool, which commits the staged changes
// with a message. Hooks do not run and commits are not signed (no
// signature program can run); when the repository's own configuration sets
// no user.email, the commit is made as DefaultCommitName
// <DefaultCommitEmail>.
func GitCommit(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"git_commit",
		"Commit the staged changes with a message (git commit).",
		func(ctx context.Context, args GitCommitArgs) (string, error) {
			msg := strings.TrimSpace(args.Message)
			if msg == "" {
				return "", errors.New("git_commit: the message is empty")
			}
			var gitArgs []string
			if email, err := runGit(ctx, ws, cfg, "git_commit", "config", "--local", "user.email"); err != nil || strings.TrimSpace(email) == "" {
				if ctx.Err() != nil {
					return "", ctx.Err()
				}
				gitArgs = append(gitArgs, "-c", "user.name="+DefaultCommitName, "-c", "user.email="+DefaultCommitEmail)
			}
			gitArgs = append(gitArgs, "commit", "--no-verify", "--no-gpg-sign", "-m", msg)
			out, err := runGit(ctx, ws, cfg, "git_commit", gitArgs...)
			if err != nil {
				return "", err
			}
			return withNewline(out), nil
		},
	)
}
