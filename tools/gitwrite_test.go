package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

func TestGitStageAndCommit(t *testing.T) {
	ws := gitRepo(t)
	root := ws.Root()
	out, err := call(t, GitStage(ws), GitStageArgs{Paths: []string{"a.txt"}})
	require.NoError(t, err)
	require.Contains(t, out, "M  a.txt")
	out, err = call(t, GitCommit(ws), GitCommitArgs{Message: "update a"})
	require.NoError(t, err)
	require.Contains(t, out, "update a")
	require.Equal(t, "update a\n", gitOut(t, root, "log", "-1", "--pretty=%s"))
	require.Equal(t, DefaultCommitName+" <"+DefaultCommitEmail+">\n", gitOut(t, root, "log", "-1", "--pretty=%an <%ae>"))
	// The repository's own identity wins over the default.
	gitOut(t, root, "config", "user.email", "owner@example.com")
	_, err = call(t, GitStage(ws), GitStageArgs{All: true})
	require.NoError(t, err)
	_, err = call(t, GitCommit(ws), GitCommitArgs{Message: "all"})
	require.NoError(t, err)
	require.Equal(t, "owner@example.com\n", gitOut(t, root, "log", "-1", "--pretty=%ae"))
	require.Empty(t, gitOut(t, root, "status", "--short"))
}

func TestGitCommitRunsNoHooks(t *testing.T) {
	ws := gitRepo(t)
	root := ws.Root()
	marker := filepath.Join(t.TempDir(), "hook-ran")
	hook := filepath.Join(root, ".git", "hooks", "pre-commit")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755))
	gitOut(t, root, "config", "core.hooksPath", ".git/hooks")
	gitOut(t, root, "config", "commit.gpgsign", "true")
	_, err := call(t, GitCommit(ws), GitCommitArgs{Message: "staged b"})
	require.NoError(t, err)
	require.NoFileExists(t, marker)
}

func TestGitStageRefusesBadArguments(t *testing.T) {
	ws := gitRepo(t)
	for _, args := range []GitStageArgs{{}, {Paths: []string{"../x"}}, {Paths: []string{".git/config"}}} {
		_, err := call(t, GitStage(ws), args)
		require.Error(t, err, "%+v", args)
	}
	_, err := call(t, GitCommit(ws), GitCommitArgs{Message: "  "})
	require.Error(t, err)
	_, err = call(t, GitStage(newTestWorkspace(t)), GitStageArgs{All: true})
	require.ErrorContains(t, err, "not a git repository")
	require.NotContains(t, gitOut(t, ws.Root(), "diff", "--cached", "--name-only"), "config")
}
