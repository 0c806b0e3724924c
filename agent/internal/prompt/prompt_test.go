package prompt_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/internal/prompt"
)

func TestRenderReplacesPlaceholdersOnce(t *testing.T) {
	got := prompt.Render("Q: {input}; F: {findings}; {unknown}", "input", "{findings}", "findings", "x")
	require.Equal(t, "Q: {findings}; F: x; {unknown}", got)
}
