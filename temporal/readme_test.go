package temporal_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README states the at-least-once rule for a node's side effects word
// for word as the package doc does.
func TestReadmeQuotesTheSideEffectsRule(t *testing.T) {
	const first, last = "Side effects run at least once.", "which a re-run of the same task keeps."
	paragraph := func(text, prefix string) string {
		var words []string
		for _, line := range strings.Split(text, "\n") {
			words = append(words, strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), prefix))...)
		}
		joined := strings.Join(words, " ")
		i := strings.Index(joined, first)
		require.GreaterOrEqual(t, i, 0, "no %q", first)
		j := strings.Index(joined[i:], last)
		require.GreaterOrEqual(t, j, 0, "no %q", last)
		return joined[i : i+j+len(last)]
	}
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	want := strings.ReplaceAll(paragraph(string(doc), "//"), "[graph.TaskID]", "`graph.TaskID`")
	require.Equal(t, want, paragraph(string(readme), ">"))
}
