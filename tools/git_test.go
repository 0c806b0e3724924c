package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// git runs a git command in dir for test setup.
func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	full := append([]string{
		"-c", "user.name=Tester", "-c", "user.email=tester@example.com",
		"-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main",
	}, args...)
	cmd := exec.Command("git", full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}

// gitRepo returns a workspace holding a repository with two commits, an
// unstaged change to a.txt, a staged new file b.txt and an untracked c.txt.
func gitRepo(t *testing.T) *Workspace {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	ws := newTestWorkspace(t)
	root := ws.Root()
	git(t, root, "init", "-q")
	writeFiles(t, root, map[string]string{"a.txt": "old\n"})
	git(t, root, "add", "a.txt")
	git(t, root, "commit", "-q", "-m", "first commit")
	writeFiles(t, root, map[string]string{"d/x.txt": "x\n"})
	git(t, root, "add", "d")
	git(t, root, "commit", "-q", "-m", "second commit")
	writeFiles(t, root, map[string]string{"a.txt": "new\n", "b.txt": "staged\n", "c.txt": "untracked\n"})
	git(t, root, "add", "b.txt")
	return ws
}

func TestGitStatusShowsBranchAndChanges(t *testing.T) {
	t.Parallel()
	ws := gitRepo(t)
	out, err := call(t, GitStatus(ws), struct{}{})
	require.NoError(t, err)
	require.Equal(t, "## main\n M a.txt\nA  b.txt\n?? c.txt\n", out)
}

func TestGitDiffShowsUnstagedOrStagedChanges(t *testing.T) {
	t.Parallel()
	ws := gitRepo(t)
	tests := []struct {
		name     string
		args     GitDiffArgs
		contains []string
		excludes []string
	}{
		{"unstaged", GitDiffArgs{}, []string{"diff --git a/a.txt b/a.txt", "-old", "+new"}, []string{"b.txt"}},
		{"staged", GitDiffArgs{Staged: true}, []string{"diff --git a/b.txt b/b.txt", "+staged"}, []string{"a.txt"}},
		{"path filter", GitDiffArgs{Path: "d"}, []string{"(no unstaged changes)"}, []string{"a.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := call(t, GitDiff(ws), tt.args)
			require.NoError(t, err)
			for _, s := range tt.contains {
				require.Contains(t, out, s)
			}
			for _, s := range tt.excludes {
				require.NotContains(t, out, s)
			}
		})
	}
}

func TestGitDiffRefusesPathOutsideWorkspace(t *testing.T) {
	t.Parallel()
	ws := gitRepo(t)
	_, err := call(t, GitDiff(ws), GitDiffArgs{Path: "../x"})
	var outErr *OutsideWorkspaceError
	require.ErrorAs(t, err, &outErr)
}

func TestGitLogListsRecentCommits(t *testing.T) {
	t.Parallel()
	ws := gitRepo(t)
	tests := []struct {
		name     string
		maxCount int
		subjects []string
	}{
		{"default", 0, []string{"second commit", "first commit"}},
		{"max_count 1", 1, []string{"second commit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := call(t, GitLog(ws), GitLogArgs{MaxCount: tt.maxCount})
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			require.Len(t, lines, len(tt.subjects), out)
			for i, s := range tt.subjects {
				require.True(t, strings.HasSuffix(lines[i], " Tester: "+s), lines[i])
			}
		})
	}
}

func TestGitToolsFailOutsideRepository(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	ws := newTestWorkspace(t)
	if out, err := exec.Command("git", "-C", ws.Root(), "rev-parse").CombinedOutput(); err == nil {
		t.Skipf("temporary directory is inside a git repository: %s", out)
	}
	for _, tool := range []Tool{GitStatus(ws), GitDiff(ws), GitLog(ws)} {
		_, err := tool.Call(t.Context(), nil)
		require.ErrorContains(t, err, "not a git repository", tool.Name())
	}
}

func TestGitToolsConfineOutputToWorkspaceSubdirectory(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	ws, err := NewWorkspace(filepath.Join(repo.Root(), "d"))
	require.NoError(t, err)
	out, err := call(t, GitStatus(ws), struct{}{})
	require.NoError(t, err)
	require.Equal(t, "## main\n", out, "changes outside the workspace are not shown")
	out, err = call(t, GitLog(ws), GitLogArgs{})
	require.NoError(t, err)
	require.Contains(t, out, "second commit")
	require.NotContains(t, out, "first commit")
}
