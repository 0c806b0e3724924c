package goals_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
)

// realisticSecrets are values of the parent's environment that must never
// reach a model, whatever their names look like.
var realisticSecrets = map[string]string{
	"STRIPE_SK":               "sk_live_51HqLyjWDarjtT1zdp7dcXYZabcdef0123456789",
	"SLACK_WEBHOOK":           "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX",
	"DATABASE_URL":            "postgres://db.internal:5432/app?user=app&password=hunter2hunter2",
	"AZURE_STORAGE_CONN":      "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=bm90LWEtcmVhbC1rZXk=;EndpointSuffix=core.windows.net",
	"AGENTGRAPH_TEST_API_KEY": "sk-proj-abcdefghijklmnop",
}

// A test the model wrote that prints its environment and every process's
// /proc/*/environ shows the model no secret of this process's.
func TestGoalOutputHidesTheEnvironmentsSecrets(t *testing.T) {
	for name, value := range realisticSecrets {
		t.Setenv(name, value)
	}
	dir := project(t, nil)
	g := newGoal(t, goals.GoalShell, goals.Config{Command: `env; cat /proc/*/environ 2>/dev/null | tr '\0' '\n'; echo "$STRIPE_SK"; exit 1`})
	res := check(t, g, dir)
	require.False(t, res.Achieved)
	require.Contains(t, res.Details.Output, "[redacted]", "the shell printed the unscrubbed STRIPE_SK")
	text := []string{res.Reason, res.Details.Command, res.Details.Output}
	for _, f := range res.Details.Failures {
		text = append(text, f.Name, f.Output)
	}
	all := strings.Join(text, "\n")
	for name, value := range realisticSecrets {
		require.NotContains(t, all, value, name)
	}
	require.Contains(t, all, "PATH=", "the rest of the output stays")
}
