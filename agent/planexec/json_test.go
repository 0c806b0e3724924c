package planexec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestParseJSONToleratesFencesAndProse(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string // nil: no array found
	}{
		{"bare", `["a", "b"]`, []string{"a", "b"}},
		{"surrounding space", "\n  [\"a\"]  \n", []string{"a"}},
		{"json fence", "```json\n[\"a\", \"b\"]\n```", []string{"a", "b"}},
		{"plain fence", "```\n[\"a\"]\n```", []string{"a"}},
		{"leading prose", "Sure! Here is the plan:\n[\"a\"]", []string{"a"}},
		{"prose on both sides", "Plan: [\"a\"] — hope it helps [really].", []string{"a"}},
		{"brackets in prose first", "Steps [see below]:\n[\"a\"]", []string{"a"}},
		{"nested in an object", `{"steps": ["a"]}`, []string{"a"}},
		{"brackets inside strings", `["read [x]", "b"]`, []string{"read [x]", "b"}},
		{"prose only", "I cannot plan this.", nil},
		{"wrong element type", `[1, 2]`, nil},
		{"truncated", `["a", "b`, nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseJSON[[]string](tt.text)
			if tt.want == nil {
				require.ErrorIs(t, err, errNoJSON)
				return
			}
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tt.want, got))
		})
	}
}

func TestParseJSONFindsAnObjectAfterProse(t *testing.T) {
	got, err := parseJSON[refineAnswer]("Thinking… {\"decision\": \"FINISH\", \"reason\": \"done {ok}\"} end")
	require.NoError(t, err)
	require.Equal(t, refineAnswer{Decision: "FINISH", Reason: "done {ok}"}, got)
}

func TestRenderReplacesPlaceholdersOnce(t *testing.T) {
	got := render("Q: {input}; F: {findings}; {unknown}", "input", "{findings}", "findings", "x")
	require.Equal(t, "Q: {findings}; F: x; {unknown}", got)
}

func TestFormatFindingsOrdersByStepNumber(t *testing.T) {
	tests := []struct {
		name     string
		findings map[string]string
		want     string
	}{
		{"none", nil, "(none yet)"},
		{"numeric order", map[string]string{"step_10: b": "B", "step_2: a": "A"}, "### step_2: a\nA\n\n### step_10: b\nB"},
		{"other keys first", map[string]string{"step_1: a": "A", "note": "N"}, "### note\nN\n\n### step_1: a\nA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, formatFindings(tt.findings))
		})
	}
}
