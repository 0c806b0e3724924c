package coder_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/llm"
)

func TestRequestsNamingPathsOutsideTheWorkspaceAreRefused(t *testing.T) {
	outside := t.TempDir()
	writeFile(t, outside, "secret.txt", "the secret\n")
	dir := goSample(t)
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link.txt")))

	for _, req := range []string{
		"what is in " + filepath.Join(outside, "secret.txt") + "?",
		"explain ../secret.txt",
		"explain link.txt",
		"what does /etc/passwd contain?",
		"fix the typo in ../secret.txt",
		"add a line to " + filepath.Join(outside, "secret.txt"),
		"change ~/.bashrc",
	} {
		t.Run(req, func(t *testing.T) {
			model := llm.NewScripted() // any model call fails the test
			a := newAgent(t, model, dir)
			res, err := a.Ask(t.Context(), "t1", req)
			require.NoError(t, err)
			require.Equal(t, coder.OutcomeRefused, res.Outcome, res.Answer)
			require.Contains(t, res.Answer, "outside the workspace")
			require.Empty(t, model.Calls())
			require.Equal(t, "the secret\n", readFile(t, outside, "secret.txt"))
		})
	}
}

func TestModelEditsOutsideTheWorkspaceAreNotApplied(t *testing.T) {
	outside := t.TempDir()
	writeFile(t, outside, "secret.txt", "the secret\n")
	dir := t.TempDir()
	writeFile(t, dir, "notes.md", "# Notes\n")
	rel, err := filepath.Rel(dir, filepath.Join(outside, "secret.txt"))
	require.NoError(t, err)
	model := llm.NewScripted(
		write(rel, "pwned\n"),
		write(filepath.Join(outside, "secret.txt"), "pwned\n"),
	)
	a := newAgent(t, model, dir, coder.WithMaxAttempts(2))
	res, err := a.Ask(t.Context(), "t1", "update notes.md")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeNoEdit, res.Outcome)
	require.Len(t, res.Edits, 1)
	require.False(t, res.Edits[0].Applied)
	require.Contains(t, res.Edits[0].Error, "outside the workspace")
	require.Equal(t, "the secret\n", readFile(t, outside, "secret.txt"))
}

func TestModelPickedFilesOutsideTheListingAreDropped(t *testing.T) {
	dir := goSample(t)
	// WithMinConfidence(2): no pattern decides; the model classifies,
	// then picks the files (the request names none).
	model := llm.NewScripted(chooseIntent("read"), text(`["../../etc/passwd", "/etc/passwd", "calc.go"]`), text("answer"))
	a := newAgent(t, model, dir, coder.WithMinConfidence(2))
	res, err := a.Ask(t.Context(), "t1", "tell me about this project")
	require.NoError(t, err)
	require.Equal(t, []string{"calc.go"}, res.Files)
	require.Equal(t, "answer", res.Answer)
}
