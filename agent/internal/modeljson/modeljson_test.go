package modeljson_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/internal/modeljson"
)

func TestParseToleratesFencesAndProse(t *testing.T) {
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
			got, err := modeljson.Parse[[]string](tt.text)
			if tt.want == nil {
				require.ErrorIs(t, err, modeljson.ErrNoJSON)
				return
			}
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tt.want, got))
		})
	}
}

func TestParseFindsAnObjectAfterProse(t *testing.T) {
	type answer struct{ Decision, Reason string }
	got, err := modeljson.Parse[answer]("Thinking… {\"decision\": \"FINISH\", \"reason\": \"done {ok}\"} end")
	require.NoError(t, err)
	require.Equal(t, answer{Decision: "FINISH", Reason: "done {ok}"}, got)
}

// An answer of brackets only is given up on after a bounded number of
// tries, not after one try per bracket.
func TestParseGivesUpOnAFloodOfBrackets(t *testing.T) {
	flood := strings.Repeat("[", 1<<20) + `["a"]`
	_, err := modeljson.Parse[[]string](flood)
	require.ErrorIs(t, err, modeljson.ErrNoJSON)
}
