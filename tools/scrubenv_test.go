package tools_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/tools"
)

func TestScrubEnvDropsSecretsAndKeepsOrdinaryValues(t *testing.T) {
	for _, tc := range []struct {
		kv   string
		kept bool
	}{
		{"PATH=/usr/bin:/bin", true},
		{"DOCS=https://example.com/a?b=c@d", true},
		{"UPSTREAM=ssh://git@github.com/o/r.git", true},
		{"REMOTE=git@github.com:o/r.git", true},
		{"PROXY=http://proxy:8080/", true},
		{"TOKENIZERS_PARALLELISM=false", true},
		{"OLDPWD=/home/u", true},
		{"DATABASE_URL=postgres://u:p@h/db", false},
		{"AWS_SESSION_TOKEN=x", false},
		{"github_token=x", false},
		{"GIT_REMOTE=https://ghp_abcdef@github.com/o/r.git", false},
		{"SENTRY_DSN=https://abc123@o1.ingest.sentry.io/1", false},
		{"MYSQL_PWD=hunter2", false},
		{"SMTP_PASS=hunter2", false},
		{"GPG_PASSPHRASE=x", false},
		{"SSH_AUTH_SOCK=/run/user/1000/ssh-agent.sock", false},
	} {
		t.Run(tc.kv, func(t *testing.T) {
			require.Equal(t, tc.kept, len(tools.ScrubEnv([]string{tc.kv})) == 1)
		})
	}
}
