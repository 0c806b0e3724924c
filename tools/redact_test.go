package tools

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// realisticSecrets are values of the kind a developer's or a CI runner's
// environment holds, most under names that do not look secret.
var realisticSecrets = []string{
	"STRIPE_SK=sk_live_51HxYzAbCdEfGhIjKlMnOpQr",
	"SLACK_WEBHOOK=https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/cccccccccccccccccccccccc",
	"DATABASE_URL=postgres://app@db.internal:5432/prod?sslmode=require&password=hunter2hunter2",
	"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=c2VjcmV0a2V5c2VjcmV0a2V5;EndpointSuffix=core.windows.net",
	"OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234",
	"GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
	"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
	"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	"SENTRY_DSN=https://abc123def456abc123@o0.ingest.sentry.io/1",
	"REDIS_URL=redis://:s3cretpass@cache:6379/0",
	"NPM_CONFIG_REGISTRY_AUTH=npm_abcdefghijklmnopqrstuvwxyz",
	`DOCKER_AUTH_CONFIG={"auths":{"registry.example.com":{"auth":"dXNlcjpwYXNzd29yZA=="}}}`,
	"MONGO_URI=mongodb+srv://admin:mongopass99@cluster0.example.net/db",
	"SESSION_SIGNING=Zm9vYmFyYmF6cXV4cXV1eA",
	"JWT_SIGNING=eyJhbGciOiJIUzI1NiJ9.e30.ZmFrZXNpZw",
	"HF_HUB=hf_abcdefghijklmnopqrstuvwxyz",
	"PIP_INDEX_URL=https://user:pypipass123@pypi.internal/simple",
}

// secretValues returns the values of realisticSecrets.
func secretValues() []string {
	var vs []string
	for _, kv := range realisticSecrets {
		_, v, _ := strings.Cut(kv, "=")
		vs = append(vs, v)
	}
	return vs
}

// requireNoSecret fails if text holds any value of realisticSecrets.
func requireNoSecret(t *testing.T, text string) {
	t.Helper()
	for _, v := range secretValues() {
		require.NotContains(t, text, v)
	}
}

func TestCommandEnvPassesNoneOfSeventeenRealisticSecrets(t *testing.T) {
	environ := append([]string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "GOFLAGS=-count=1", "PYTHONPATH=/opt/lib"}, realisticSecrets...)
	env := commandEnv(environ, newConfig(nil), "/tmp/home", true, "/work/ws")
	requireNoSecret(t, strings.Join(env, "\n"))
	require.Contains(t, env, "LANG=C.UTF-8")
	require.Contains(t, env, "GOFLAGS=-count=1")
	require.Contains(t, env, "PYTHONPATH=/opt/lib")
}

func TestCommandEnvDropsPathEntriesInsideTheWorkspace(t *testing.T) {
	root := t.TempDir()
	env := commandEnv([]string{"PATH=" + root + "/bin:/usr/bin:.:" + root + ":bin:/bin"}, newConfig(nil), "/tmp/home", true, root)
	require.Contains(t, env, "PATH=/usr/bin:/bin")
}

func TestRedactorHidesEveryUnlistedValue(t *testing.T) {
	dir := t.TempDir()
	environ := append([]string{"PATH=/usr/local/bin:/usr/bin", "SHORT=abc1234", "HOME=/home/someone",
		"GOPROXY=https://tok:goproxysecret@proxy.internal", "ALLOWED_BY_USER=visible-value", "SOME_ROOT=" + dir}, realisticSecrets...)
	r := NewRedactor(environ, "ALLOWED_BY_USER", "GITHUB_TOKEN")
	var text strings.Builder
	text.WriteString("PATH is /usr/local/bin:/usr/bin, short abc1234, home /home/someone, visible-value\n")
	text.WriteString("tmp " + dir + "\n")
	text.WriteString("proxy https://tok:goproxysecret@proxy.internal\n")
	for _, kv := range realisticSecrets {
		text.WriteString("env: " + kv + "\n")
	}
	text.WriteString(`{"Output":"{\"auths\":{\"registry.example.com\":{\"auth\":\"dXNlcjpwYXNzd29yZA==\"}}}"}` + "\n")
	got := r.Redact(text.String())
	require.Contains(t, got, "env: GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n", "a secret named exactly is the user's to show")
	require.Contains(t, got, "tmp "+dir+"\n", "an existing path is no secret")
	got = strings.ReplaceAll(got, "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "")
	requireNoSecret(t, got)
	require.NotContains(t, got, "goproxysecret", "an allowed name with a secret-looking value is redacted")
	require.NotContains(t, got, `registry.example.com\"`, "the JSON-escaped form is redacted too")
	require.Contains(t, got, "PATH is /usr/local/bin:/usr/bin, short abc1234, home /home/someone, visible-value\n")
	require.Contains(t, got, "env: STRIPE_SK="+Redacted+"\n")
}

func TestRedactWriterFindsAValueSplitBetweenWrites(t *testing.T) {
	secret := "sk_live_51HxYzAbCdEfGhIjKlMnOpQr"
	r := NewRedactor([]string{"STRIPE_SK=" + secret})
	tests := []struct {
		name   string
		chunks []string
	}{
		{"split in the middle", []string{"key=sk_live_51Hx", "YzAbCdEfGhIjKlMnOpQr\nnext\n"}},
		{"one byte at a time", strings.Split("key="+secret+"\n", "")},
		{"no final newline", []string{"key=sk_live", "_51HxYzAbCdEfGhIjKlMnOpQr"}},
		{"a line longer than the buffer", []string{strings.Repeat("x", maxRedactLine-5), "sk_live_51HxYz", "AbCdEfGhIjKlMnOpQr" + strings.Repeat("y", maxRedactLine) + secret + "\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			w := newRedactWriter(r, &out).(*redactWriter)
			for _, c := range tt.chunks {
				_, err := w.Write([]byte(c))
				require.NoError(t, err)
			}
			w.flush()
			require.NotContains(t, out.String(), secret)
			require.Contains(t, out.String(), Redacted)
			require.Equal(t, len(strings.Join(tt.chunks, ""))-strings.Count(strings.Join(tt.chunks, ""), secret)*(len(secret)-len(Redacted)), out.Len())
		})
	}
}
