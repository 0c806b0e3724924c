package agent_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The two programs of testdata/react: the same ReAct loop, built with
// package agent and by hand from packages graph and tools.
const (
	viaAgent = "./testdata/react/viaagent"
	byHand   = "./testdata/react/byhand"
)

// goTool runs the go command with args and returns its standard output.
func goTool(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	out, err := exec.Command("go", args...).Output()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
	}
	require.NoError(t, err)
	return string(out)
}

// nonStandardDeps returns the packages outside the standard library that
// the program pkg links, itself included.
func nonStandardDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out := goTool(t, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg)
	return strings.Fields(out)
}

// Library packages import no database driver (the program does), and
// package agent holds only what a ReAct user needs: a ReAct program links
// no driver, no terminal UI, no browser driver, no WebSocket and no YAML
// configuration parser.
func TestReActProgramLinksNoDriverTUIBrowserOrYAML(t *testing.T) {
	deps := nonStandardDeps(t, viaAgent)
	require.Contains(t, deps, "github.com/agentgraph/agentgraph/agent")
	tests := []struct {
		name     string
		prefixes []string // of import paths
	}{
		{"PostgreSQL drivers", []string{"github.com/jackc/pgx", "github.com/lib/pq"}},
		{"SQLite drivers", []string{"modernc.org/sqlite", "github.com/mattn/go-sqlite3"}},
		{"MySQL driver", []string{"github.com/go-sql-driver/mysql"}},
		{"terminal UI", []string{"charm.land/", "github.com/charmbracelet/"}},
		{"browser driver", []string{"github.com/chromedp/"}},
		{"WebSocket", []string{"github.com/coder/websocket", "github.com/gorilla/websocket", "nhooyr.io/websocket"}},
		{"YAML configuration", []string{"go.yaml.in/yaml/v3", "gopkg.in/yaml.", "sigs.k8s.io/yaml"}},
		{"retrAI", []string{"github.com/agentgraph/agentgraph/goals", "github.com/agentgraph/agentgraph/agent/retrai"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var linked []string
			for _, d := range deps {
				if slices.ContainsFunc(tt.prefixes, func(p string) bool { return strings.HasPrefix(d, p) }) {
					linked = append(linked, d)
				}
			}
			require.Empty(t, linked)
		})
	}
}

// Package agent brings no dependency of its own: a ReAct program links
// what the same loop built by hand from graph and tools links, plus
// package agent, its internal helpers and package events (whose
// ModelCall it reports), all of this module.
func TestReActProgramLinksWhatTheLoopBuiltByHandLinks(t *testing.T) {
	hand := nonStandardDeps(t, byHand)
	var extra []string
	for _, d := range nonStandardDeps(t, viaAgent) {
		if !slices.Contains(hand, d) && !strings.HasSuffix(d, "/testdata/react/viaagent") {
			extra = append(extra, d)
		}
	}
	slices.Sort(extra)
	require.Equal(t, []string{
		"github.com/agentgraph/agentgraph/agent",
		"github.com/agentgraph/agentgraph/agent/internal/modelcall",
		"github.com/agentgraph/agentgraph/agent/internal/prompt",
		"github.com/agentgraph/agentgraph/events",
	}, extra)
}

// The binary of a ReAct program is within 10 % of that of the same loop
// built by hand.
func TestReActBinaryIsWithinTenPercentOfTheLoopBuiltByHand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	dir := t.TempDir()
	size := func(pkg string) int64 {
		bin := filepath.Join(dir, filepath.Base(pkg))
		goTool(t, "build", "-buildvcs=false", "-o", bin, pkg)
		fi, err := os.Stat(bin)
		require.NoError(t, err)
		return fi.Size()
	}
	agent, hand := size(viaAgent), size(byHand)
	t.Logf("ReAct binary: %d bytes through package agent, %d bytes by hand (%+.1f %%)",
		agent, hand, 100*float64(agent-hand)/float64(hand))
	require.LessOrEqual(t, float64(agent), 1.10*float64(hand))
}
