package tools

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// passThrough is a RoundTripper that is not an *http.Transport, so
// web_fetch uses it as it is (the tests' server is on loopback).
type passThrough struct{ rt http.RoundTripper }

func (p passThrough) RoundTrip(r *http.Request) (*http.Response, error) { return p.rt.RoundTrip(r) }

func fetchServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(`<html><head><title>Doc &amp; co</title><style>p{}</style></head><body><h1>Intro</h1><p>First <b>para</b>.</p><script>evil()</script><ul><li>one</li><li>two</li></ul></body></html>`))
		case "/plain":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("just text"))
		case "/image":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte{0x89, 'P', 'N', 'G'})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestWebFetchReturnsPageText(t *testing.T) {
	srv := fetchServer(t)
	tool := WebFetch(WithHTTPClient(&http.Client{Transport: passThrough{srv.Client().Transport}}))
	out, err := call(t, tool, WebFetchArgs{URL: srv.URL + "/page"})
	require.NoError(t, err)
	require.Equal(t, "# Doc & co\n\nIntro\nFirst para .\none\ntwo", out)
	require.NotContains(t, out, "evil")
	out, err = call(t, tool, WebFetchArgs{URL: srv.URL + "/plain"})
	require.NoError(t, err)
	require.Equal(t, "just text", out)
	_, err = call(t, tool, WebFetchArgs{URL: srv.URL + "/image"})
	require.ErrorContains(t, err, "not text")
	_, err = call(t, tool, WebFetchArgs{URL: srv.URL + "/missing"})
	require.ErrorContains(t, err, "404")
}

func TestWebFetchRefusesPrivateAddresses(t *testing.T) {
	srv := fetchServer(t)
	tool := WebFetch() // the default transport, guarded
	for _, u := range []string{srv.URL + "/page", "http://localhost:" + strings.TrimPrefix(srv.URL, "http://127.0.0.1:") + "/page", "http://[::1]:1/", "http://169.254.169.254/latest/meta-data/"} {
		_, err := call(t, tool, WebFetchArgs{URL: u})
		var pe *PrivateAddressError
		require.ErrorAs(t, err, &pe, u)
	}
	// The check is on the dial itself, so it holds for every request of the
	// guarded client, redirects included.
	guarded := guardedClient(&http.Client{})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://127.0.0.1:1/", nil)
	_, err := guarded.Do(req)
	var pe *PrivateAddressError
	require.ErrorAs(t, err, &pe)
}

func TestWebFetchRejectsBadURLs(t *testing.T) {
	tool := WebFetch()
	for _, u := range []string{"", "file:///etc/passwd", "ftp://x/", "http://", "::"} {
		_, err := call(t, tool, WebFetchArgs{URL: u})
		require.ErrorContains(t, err, "not an http(s) URL", u)
	}
}
