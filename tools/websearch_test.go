package tools

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// ddgHTMLPage is shaped like https://html.duckduckgo.com/html/ results,
// including an ad that must be skipped.
const ddgHTMLPage = `<!DOCTYPE html>
<html><head><title>golang at DuckDuckGo</title></head>
<body>
<div class="serp__results"><div id="links" class="results">
  <div class="result results_links results_links_deep result--ad ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="https://duckduckgo.com/y.js?ad_domain=example.com&amp;ad_provider=bing">Buy Go Stuff</a>
      </h2>
      <a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=example.com">Ad snippet</a>
    </div>
  </div>
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fgo.dev%2F&amp;rut=abc123">The <b>Go</b> Programming Language</a>
      </h2>
      <div class="result__extras"><div class="result__extras__url">
        <a class="result__url" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fgo.dev%2F&amp;rut=abc123">go.dev</a>
      </div></div>
      <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fgo.dev%2F&amp;rut=abc123"><b>Go</b> is an open source programming language that makes it simple to build <b>secure</b>, scalable systems.</a>
      <div class="clear"></div>
    </div>
  </div>
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fen.wikipedia.org%2Fwiki%2FGo_(programming_language)%3Fa%3D1%26b%3D2&amp;rut=def">Go (programming language) - Wikipedia</a>
      </h2>
      <a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">Go is a statically typed, compiled high-level programming language designed at Google &amp; friends.</a>
    </div>
  </div>
</div></div>
</body></html>`

// ddgLitePage is shaped like https://lite.duckduckgo.com/lite/ results.
const ddgLitePage = `<html><body>
<form action="/lite/" method="post"><input class="query" type="text" size="40" name="q" value="golang"></form>
<table border="0">
  <tr>
    <td valign="top">1.&nbsp;</td>
    <td>
      <a rel="nofollow" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fgo.dev%2Fdoc%2F&amp;rut=x1" class='result-link'>Documentation - The Go Programming Language</a>
    </td>
  </tr>
  <tr>
    <td>&nbsp;&nbsp;&nbsp;</td>
    <td class='result-snippet'>
      The Go programming language is an open source project to make programmers more <b>productive</b>.
    </td>
  </tr>
  <tr>
    <td>&nbsp;&nbsp;&nbsp;</td>
    <td><span class='link-text'>go.dev/doc/</span></td>
  </tr>
  <tr><td>&nbsp;</td><td>&nbsp;</td></tr>
  <tr>
    <td valign="top">2.&nbsp;</td>
    <td>
      <a rel="nofollow" href="https://pkg.go.dev/" class='result-link'>Go Packages</a>
    </td>
  </tr>
  <tr>
    <td>&nbsp;&nbsp;&nbsp;</td>
    <td class='result-snippet'>Discover packages.</td>
  </tr>
</table>
</body></html>`

const wantHTMLResults = `1. The Go Programming Language
   https://go.dev/
   Go is an open source programming language that makes it simple to build secure, scalable systems.
2. Go (programming language) - Wikipedia
   https://en.wikipedia.org/wiki/Go_(programming_language)?a=1&b=2
   Go is a statically typed, compiled high-level programming language designed at Google & friends.
`

const wantLiteResults = `1. Documentation - The Go Programming Language
   https://go.dev/doc/
   The Go programming language is an open source project to make programmers more productive.
2. Go Packages
   https://pkg.go.dev/
   Discover packages.
`

// pageServer serves body with status and records the q parameter.
func pageServer(t *testing.T, status int, body string, hits *atomic.Int32, query *atomic.Value) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits != nil {
			hits.Add(1)
		}
		if query != nil {
			query.Store(r.URL.Query().Get("q"))
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// closedURL returns a URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr + "/html/"
}

func TestWebSearchParsesHTMLPage(t *testing.T) {
	t.Parallel()
	var query atomic.Value
	var liteHits atomic.Int32
	html := pageServer(t, http.StatusOK, ddgHTMLPage, nil, &query)
	lite := pageServer(t, http.StatusOK, ddgLitePage, &liteHits, nil)
	tool := WebSearch(WithSearchURL(html.URL+"/html/"), WithLiteSearchURL(lite.URL+"/lite/"))

	out, err := call(t, tool, WebSearchArgs{Query: "golang & friends"})
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(wantHTMLResults, out))
	require.Equal(t, "golang & friends", query.Load())
	require.Zero(t, liteHits.Load(), "the lite endpoint is only a fallback")
}

func TestWebSearchFallsBackToLitePage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
	}{
		{"server error", http.StatusServiceUnavailable, "oops"},
		{"rate limited with 202", http.StatusAccepted, ddgHTMLPage},
		{"empty page", http.StatusOK, ""},
		{"page without results", http.StatusOK, "<html><body>No results.</body></html>"},
		{"page nested too deep to parse", http.StatusOK, strings.Repeat("<div>", 1000) + ddgHTMLPage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			html := pageServer(t, tt.status, tt.body, nil, nil)
			lite := pageServer(t, http.StatusOK, ddgLitePage, nil, nil)
			tool := WebSearch(WithSearchURL(html.URL), WithLiteSearchURL(lite.URL))
			out, err := call(t, tool, WebSearchArgs{Query: "golang"})
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(wantLiteResults, out))
		})
	}
}

func TestWebSearchFallsBackWhenHTMLEndpointUnreachable(t *testing.T) {
	t.Parallel()
	lite := pageServer(t, http.StatusOK, ddgLitePage, nil, nil)
	tool := WebSearch(WithSearchURL(closedURL(t)), WithLiteSearchURL(lite.URL))
	out, err := call(t, tool, WebSearchArgs{Query: "golang", MaxResults: 1})
	require.NoError(t, err)
	require.Equal(t, "1. Documentation - The Go Programming Language\n   https://go.dev/doc/\n"+
		"   The Go programming language is an open source project to make programmers more productive.\n", out)
}

func TestWebSearchUnreachableEndpointsFailFast(t *testing.T) {
	t.Parallel()
	tool := WebSearch(WithSearchURL(closedURL(t)), WithLiteSearchURL(closedURL(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := tool.Call(ctx, []byte(`{"query":"golang"}`))
	require.ErrorContains(t, err, "search failed (is the network reachable?)")
	require.ErrorContains(t, err, "html endpoint")
	require.ErrorContains(t, err, "lite endpoint")
	require.ErrorContains(t, err, "connection refused")
	require.NoError(t, ctx.Err(), "must fail before the test's own deadline")
}

func TestWebSearchHTTPTimeoutBoundsHangingServer(t *testing.T) {
	t.Parallel()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	tool := WebSearch(WithSearchURL(hang.URL), WithLiteSearchURL(""), WithHTTPTimeout(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := tool.Call(ctx, []byte(`{"query":"golang"}`))
	require.ErrorContains(t, err, "html endpoint")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, ctx.Err(), "must fail before the test's own deadline")
}

func TestWebSearchReportsNoResults(t *testing.T) {
	t.Parallel()
	empty := pageServer(t, http.StatusOK, "<html></html>", nil, nil)
	tool := WebSearch(WithSearchURL(empty.URL), WithLiteSearchURL(empty.URL))
	out, err := call(t, tool, WebSearchArgs{Query: "zzzz"})
	require.NoError(t, err)
	require.Equal(t, "No results found for \"zzzz\".\n", out)
}

func TestWebSearchRejectsInvalidArguments(t *testing.T) {
	t.Parallel()
	tool := WebSearch(WithSearchURL(closedURL(t)), WithLiteSearchURL(""))
	for _, args := range []WebSearchArgs{{Query: " "}, {Query: "x", MaxResults: -1}} {
		_, err := call(t, tool, args)
		require.Error(t, err)
	}
}

func TestWebSearchCancelledContext(t *testing.T) {
	t.Parallel()
	srv := pageServer(t, http.StatusOK, ddgHTMLPage, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := WebSearch(WithSearchURL(srv.URL)).Call(ctx, []byte(`{"query":"x"}`))
	require.ErrorIs(t, err, context.Canceled)
}

func TestWebSearchReadsOddHTML(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, page, want string
	}{
		{
			name: "nested tags in a title join without spaces",
			page: `<a class="result__a" href="https://a.example/"><span><b>Go</b>lang <i>and <u>you</u></i></span></a>`,
			want: "1. Golang and you\n   https://a.example/\n",
		},
		{
			name: "entities are decoded in titles, snippets and URLs",
			page: `<a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fa.example%2F%3Fx%3D1&amp;rut=r">A &amp; B &lt;c&gt; &#39;d&#39; &eacute;</a>` +
				`<div class="result__snippet">1&nbsp;&lt;&nbsp;2 &#x26; &quot;q&quot;</div>`,
			want: "1. A & B <c> 'd' é\n   https://a.example/?x=1\n   1 < 2 & \"q\"\n",
		},
		{
			name: "scripts, styles and comments are not text",
			page: `<a class="result__a" href="https://a.example/">Real<!-- <b>hidden</b> --><script>var s = "</a>";</script><style>b{}</style> title</a>`,
			want: "1. Real title\n   https://a.example/\n",
		},
		{
			name: "a line break separates words",
			page: `<a class="result__a" href="https://a.example/">T</a><div class="result__snippet">one<br>two</div>`,
			want: "1. T\n   https://a.example/\n   one two\n",
		},
		{
			name: "a link without href is skipped with its snippet",
			page: `<a class="result__a" href="https://a.example/">A</a><div class="result__snippet">about A</div>` +
				`<a class="result__a">no href</a><div class="result__snippet">orphan</div>`,
			want: "1. A\n   https://a.example/\n   about A\n",
		},
		{
			name: "a link that is not http is skipped",
			page: `<a class="result__a" href="javascript:alert(1)">evil</a><a class="result__a" href="ftp://a.example/">ftp</a>`,
			want: "No results found for \"q\".\n",
		},
		{
			name: "a redirect to DuckDuckGo itself is skipped",
			page: `<a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fduckduckgo.com%2Fy.js%3Fad%3D1">ad</a>` +
				`<div class="result__snippet">ad text</div>`,
			want: "No results found for \"q\".\n",
		},
		{
			name: "an empty title falls back to the URL",
			page: `<a class="result__a" href="https://a.example/"><img src="x.png"></a>`,
			want: "1. https://a.example/\n   https://a.example/\n",
		},
		{
			name: "upper-case tags and unquoted attributes are read",
			page: `<A HREF=https://a.example/ CLASS=result__a>Upper</A><DIV CLASS='x result__snippet'>Snip</DIV>`,
			want: "1. Upper\n   https://a.example/\n   Snip\n",
		},
		{
			name: "class names match whole words only",
			page: `<a class="result__a_not" href="https://a.example/">near miss</a>`,
			want: "No results found for \"q\".\n",
		},
		{
			name: "an unclosed link ends at the next link",
			page: `<a class="result__a" href="https://a.example/">First<a class="result__a" href="https://b.example/">Second`,
			want: "1. First\n   https://a.example/\n2. Second\n   https://b.example/\n",
		},
		{
			name: "only the first snippet after a link is kept",
			page: `<div class="result__snippet">before any link</div><a class="result__a" href="https://a.example/">A</a>` +
				`<div class="result__snippet">first</div><div class="result__snippet">second</div>`,
			want: "1. A\n   https://a.example/\n   first\n",
		},
		{
			name: "unclosed table cells of the lite page end at the row",
			page: `<table><tr><td><a class="result-link" href="https://a.example/">A</a><tr><td class="result-snippet">cell text<tr><td>link text</table>`,
			want: "1. A\n   https://a.example/\n   cell text\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := pageServer(t, http.StatusOK, tt.page, nil, nil)
			tool := WebSearch(WithSearchURL(srv.URL), WithLiteSearchURL(""))
			out, err := call(t, tool, WebSearchArgs{Query: "q"})
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tt.want, out))
		})
	}
}

func TestUnwrapDDG(t *testing.T) {
	t.Parallel()
	tests := []struct {
		href, want string
	}{
		{"//duckduckgo.com/l/?uddg=https%3A%2F%2Fgo.dev%2F&rut=abc", "https://go.dev/"},
		{"https://duckduckgo.com/l/?uddg=https%3A%2F%2Fa.b%2Fc%3Fd%3De", "https://a.b/c?d=e"},
		{"/l/?uddg=http%3A%2F%2Fx.y%2F", "http://x.y/"},
		{"https://example.com/page", "https://example.com/page"},
		{"javascript:alert(1)", ""},
		{"/relative", ""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, unwrapDDG(tt.href), tt.href)
	}
}
