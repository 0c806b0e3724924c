package tools

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
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

func TestWebFetchRefusesEverySpecialPurposeRange(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		public bool
	}{
		{"0.0.0.0", false}, {"0.1.2.3", false},
		{"10.1.2.3", false},
		{"100.64.0.1", false}, {"100.100.100.200", false}, {"100.127.255.254", false},
		{"127.0.0.1", false}, {"127.1.2.3", false},
		{"169.254.169.254", false},
		{"172.16.0.1", false}, {"172.31.255.255", false},
		{"192.0.0.1", false}, {"192.0.0.170", false},
		{"192.0.2.1", false}, {"192.88.99.1", false}, {"192.168.1.1", false},
		{"198.18.0.1", false}, {"198.19.255.254", false},
		{"198.51.100.1", false}, {"203.0.113.1", false},
		{"224.0.0.1", false}, {"239.255.255.250", false},
		{"240.0.0.1", false}, {"255.255.255.255", false},
		{"::", false}, {"::1", false}, {"::127.0.0.1", false}, {"::8.8.8.8", false},
		{"::ffff:127.0.0.1", false}, {"::ffff:100.100.100.200", false}, {"::ffff:8.8.8.8", true},
		{"64:ff9b::7f00:1", false}, {"64:ff9b::a9fe:a9fe", false}, {"64:ff9b::6464:64c8", false}, {"64:ff9b::808:808", true},
		{"64:ff9b:1::808:808", false},
		{"100::1", false},
		{"2001::1", false}, {"2001:0:4136:e378:8000:63bf:3fff:fdd2", false},
		{"2001:db8::1", false}, {"3fff::1", false},
		{"2002:7f00:1::1", false}, {"2002:a9fe:a9fe::1", false}, {"2002:c612:1::1", false}, {"2002:808:808::1", true},
		{"5f00::1", false},
		{"fc00::1", false}, {"fd00:ec2::254", false},
		{"fe80::1", false}, {"fe80::1%eth0", false}, {"fec0::1", false},
		{"ff02::1", false}, {"ff05::1%1", false},
		{"1.1.1.1", true}, {"8.8.8.8", true}, {"100.63.255.255", true}, {"100.128.0.0", true}, {"198.20.0.1", true},
		{"2606:4700:4700::1111", true}, {"2a00:1450:4001::1", true},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			require.Equal(t, tc.public, publicAddress(netip.MustParseAddr(tc.addr)))
			if tc.public {
				return
			}
			// The guarded client refuses it at dial time, before any packet.
			guarded := guardedClient(&http.Client{})
			host := netip.MustParseAddr(tc.addr)
			if host.Zone() != "" { // a URL spells the zone %25
				host = host.WithZone("")
			}
			u := "http://" + netip.AddrPortFrom(host, 80).String() + "/"
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
			require.NoError(t, err)
			_, err = guarded.Do(req)
			var pe *PrivateAddressError
			require.ErrorAs(t, err, &pe, u)
		})
	}
}

func TestWebFetchRejectsBadURLs(t *testing.T) {
	tool := WebFetch()
	for _, u := range []string{"", "file:///etc/passwd", "ftp://x/", "http://", "::"} {
		_, err := call(t, tool, WebFetchArgs{URL: u})
		require.ErrorContains(t, err, "not an http(s) URL", u)
	}
}
