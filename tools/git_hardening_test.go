//go:build unix

package tools

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// evilScript writes an executable script outside the workspace that
// creates the returned marker file when run (and passes stdin through, so
// that it also works as a filter), and returns the script and the marker.
func evilScript(t *testing.T) (script, marker string) {
	t.Helper()
	dir := t.TempDir()
	marker = filepath.Join(os.TempDir(), fmt.Sprintf("pwned-%d", rand.Uint64()))
	t.Cleanup(func() { _ = os.Remove(marker) })
	script = filepath.Join(dir, "evil.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\ntouch '"+marker+"'\nexec cat\n"), 0o755))
	return script, marker
}

// appendFile appends text to the file root/name, creating it.
func appendFile(t *testing.T, root, name, text string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, mode)
	require.NoError(t, err)
	_, err = f.WriteString(text)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestGitToolsNeverRunRepositoryCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// plant writes the repository configuration directly (not through
		// the tools) so that script runs.
		plant func(t *testing.T, root, script string)
		// control is a plain git command that does run script, showing
		// that the plant works; nil if there is none.
		control []string
	}{
		{
			name: "core.fsmonitor",
			plant: func(t *testing.T, root, script string) {
				appendFile(t, root, ".git/config", "[core]\n\tfsmonitor = \""+script+"\"\n", 0o644)
			},
			control: []string{"status"},
		},
		{
			name: "fsmonitor through an include",
			plant: func(t *testing.T, root, script string) {
				appendFile(t, root, ".git/evil.inc", "[core]\n\tfsmonitor = \""+script+"\"\n", 0o644)
				appendFile(t, root, ".git/config", "[include]\n\tpath = evil.inc\n", 0o644)
			},
			control: []string{"status"},
		},
		{
			name: "post-index-change hook",
			plant: func(t *testing.T, root, script string) {
				appendFile(t, root, ".git/hooks/post-index-change", "#!/bin/sh\nexec '"+script+"' </dev/null\n", 0o755)
				// A new mtime makes git refresh, and rewrite, the index.
				old := time.Now().Add(-time.Hour)
				require.NoError(t, os.Chtimes(filepath.Join(root, "d/x.txt"), old, old))
			},
			control: []string{"status"},
		},
		{
			name: "hooks path",
			plant: func(t *testing.T, root, script string) {
				appendFile(t, root, ".git/myhooks/post-index-change", "#!/bin/sh\nexec '"+script+"' </dev/null\n", 0o755)
				appendFile(t, root, ".git/config", "[core]\n\thooksPath = .git/myhooks\n", 0o644)
				old := time.Now().Add(-time.Hour)
				require.NoError(t, os.Chtimes(filepath.Join(root, "d/x.txt"), old, old))
			},
			control: []string{"status"},
		},
		{
			name: "filter driver",
			plant: func(t *testing.T, root, script string) {
				appendFile(t, root, ".gitattributes", "*.txt filter=evil\n", 0o644)
				appendFile(t, root, ".git/config", "[filter \"evil\"]\n\tclean = \""+script+"\"\n\tsmudge = \""+script+"\"\n", 0o644)
			},
			control: []string{"diff"},
		},
		{
			name: "filter process",
			plant: func(t *testing.T, root, script string) {
				appendFile(t, root, ".git/info/attributes", "* filter=Evil2\n", 0o644)
				appendFile(t, root, ".git/config", "[filter \"Evil2\"]\n\tprocess = \""+script+"\"\n", 0o644)
			},
			control: []string{"diff"},
		},
		{
			name: "diff textconv",
			plant: func(t *testing.T, root, script string) {
				appendFile(t, root, ".gitattributes", "*.txt diff=evil\n", 0o644)
				appendFile(t, root, ".git/config", "[diff \"evil\"]\n\ttextconv = \""+script+"\"\n", 0o644)
			},
			control: []string{"diff"},
		},
		{
			name: "diff driver command",
			plant: func(t *testing.T, root, script string) {
				appendFile(t, root, ".gitattributes", "*.txt diff=evil\n", 0o644)
				appendFile(t, root, ".git/config", "[diff \"evil\"]\n\tcommand = \""+script+"\"\n", 0o644)
			},
			control: []string{"diff"},
		},
		{
			name: "external diff",
			plant: func(t *testing.T, root, script string) {
				appendFile(t, root, ".git/config", "[diff]\n\texternal = \""+script+"\"\n", 0o644)
			},
			control: []string{"diff"},
		},
		{
			name: "pager",
			plant: func(t *testing.T, root, script string) {
				appendFile(t, root, ".git/config", "[core]\n\tpager = \""+script+"\"\n[pager]\n\tlog = \""+script+"\"\n\tstatus = \""+script+"\"\n\tdiff = \""+script+"\"\n", 0o644)
			},
		},
		{
			name: "signature program",
			plant: func(t *testing.T, root, script string) {
				appendFile(t, root, ".git/config", "[log]\n\tshowSignature = true\n[gpg]\n\tprogram = \""+script+"\"\n", 0o644)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := gitRepo(t)
			root := ws.Root()
			script, marker := evilScript(t)
			tt.plant(t, root, script)
			for _, tool := range []Tool{GitStatus(ws), GitDiff(ws), GitDiff(ws), GitLog(ws)} {
				args := []byte(nil)
				if tool.Name() == "git_diff" {
					args = []byte(`{"staged":true}`)
				}
				_, _ = tool.Call(t.Context(), args) // errors are fine, running the script is not
				_, _ = tool.Call(t.Context(), nil)
				require.NoFileExists(t, marker, "%s ran the repository's program", tool.Name())
			}
			if tt.control != nil {
				// A few attempts: running a script just written can fail
				// with ETXTBSY while a parallel test forks.
				for i := range 10 {
					// A new mtime makes git refresh, and rewrite, the index.
					old := time.Now().Add(-time.Duration(i+2) * time.Hour)
					require.NoError(t, os.Chtimes(filepath.Join(root, "d/x.txt"), old, old))
					cmd := exec.Command("git", tt.control...)
					cmd.Dir = root
					cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_PAGER=cat")
					_ = cmd.Run()
					if _, err := os.Stat(marker); err == nil {
						break
					}
				}
				require.FileExists(t, marker, "control: plain git %v should have run the planted program", tt.control)
			}
		})
	}
}

func TestGitToolsRefuseForeignWorktree(t *testing.T) {
	t.Parallel()
	ws := gitRepo(t)
	outside := t.TempDir()
	appendFile(t, ws.Root(), ".git/config", "[core]\n\tworktree = "+outside+"\n", 0o644)
	for _, tool := range []Tool{GitStatus(ws), GitDiff(ws), GitLog(ws)} {
		_, err := tool.Call(t.Context(), nil)
		var unsafe *UnsafeRepositoryError
		require.ErrorAs(t, err, &unsafe, tool.Name())
		require.Equal(t, "core.worktree", unsafe.Key)
	}
}

func TestGitToolsIgnoreCallerEnvironment(t *testing.T) {
	// GIT_DIR in this process's environment must not redirect the tools,
	// and GIT_EXTERNAL_DIFF must not run.
	ws := gitRepo(t)
	script, marker := evilScript(t)
	other := gitRepo(t)
	t.Setenv("GIT_DIR", filepath.Join(other.Root(), ".git"))
	t.Setenv("GIT_EXTERNAL_DIFF", script)
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='"+script+"'")
	out, err := call(t, GitStatus(ws), struct{}{})
	require.NoError(t, err)
	require.Equal(t, "## main\n M a.txt\nA  b.txt\n?? c.txt\n", out)
	_, err = call(t, GitDiff(ws), GitDiffArgs{})
	require.NoError(t, err)
	require.NoFileExists(t, marker)
}
