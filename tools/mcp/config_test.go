package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/tools/mcp"
)

func TestServerConfigConnectsOverStdio(t *testing.T) {
	var cfg map[string]mcp.ServerConfig
	raw := `{"local": {"command": ` + jsonString(os.Args[0]) + `, "args": ["-test.run=^$"],
		"env": {"` + serverEnv + `": "1", "GORACE": "atexit_sleep_ms=0", "GREETING": "hello"}, "cwd": ` + jsonString(t.TempDir()) + `}}`
	require.NoError(t, json.Unmarshal([]byte(raw), &cfg))
	s, err := cfg["local"].Connect(context.Background(), "local")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.Equal(t, "local", s.Name())
	out, err := s.CallTool(context.Background(), "env", json.RawMessage(`{"name":"GREETING"}`))
	require.NoError(t, err)
	require.Equal(t, "hello", out)
	out, err = s.CallTool(context.Background(), "cwd", nil)
	require.NoError(t, err)
	want, err := os.Stat(cfg["local"].Dir)
	require.NoError(t, err)
	got, err := os.Stat(out)
	require.NoError(t, err)
	require.True(t, os.SameFile(want, got), "cwd %s, want %s", out, cfg["local"].Dir)
}

func TestServerConfigConnectsOverHTTP(t *testing.T) {
	srv := newTestServer(newHooks())
	var mu sync.Mutex
	var auth []string
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		mu.Lock()
		auth = append(auth, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		return srv
	}, nil))
	t.Cleanup(hs.Close)
	cfg := mcp.ServerConfig{URL: hs.URL, Headers: map[string]string{"X-Api-Key": "k3y"}}
	s, err := cfg.Connect(context.Background(), "web", mcp.WithToolPrefix("web__"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.Equal(t, "web", s.Name())
	ts, err := s.Tools(context.Background())
	require.NoError(t, err)
	toolByName(t, ts, "web__add")
	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, auth, "k3y")
}

func TestServerConfigRejectsAmbiguousConfigs(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  mcp.ServerConfig
		want string
	}{
		{"empty", mcp.ServerConfig{}, "neither command nor url"},
		{"both", mcp.ServerConfig{Command: "srv", URL: "http://127.0.0.1:1/"}, "both command and url"},
		{"headers for stdio", mcp.ServerConfig{Command: "srv", Headers: map[string]string{"A": "b"}}, "headers are set for a stdio server"},
		{"env for http", mcp.ServerConfig{URL: "http://127.0.0.1:1/", Env: map[string]string{"A": "b"}}, "set for an HTTP server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.Connect(context.Background(), "x")
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
