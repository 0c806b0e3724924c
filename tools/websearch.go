package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

const (
	// defaultSearchResults is web_search's default max_results.
	defaultSearchResults = 5
	// maxSearchResults bounds web_search's max_results.
	maxSearchResults = 20
	// maxSearchPageBytes bounds the size of a result page that is read.
	maxSearchPageBytes = 2 << 20
	// searchUserAgent is sent with search requests; DuckDuckGo rejects
	// some non-browser agents.
	searchUserAgent = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"
)

// WebSearchArgs are the arguments of the web_search tool.
type WebSearchArgs struct {
	// Query is the search query.
	Query string `json:"query" jsonschema:"required" jsonschema_description:"Search query."`
	// MaxResults bounds the number of results; 0 means 5.
	MaxResults int `json:"max_results,omitempty" jsonschema:"minimum=1,maximum=20,default=5" jsonschema_description:"Maximum number of results. Default: 5."`
}

// searchResult is one web search hit.
type searchResult struct {
	Title, URL, Snippet string
}

// WebSearch returns the web_search tool, which searches the web with
// DuckDuckGo and returns titles, URLs and snippets.
//
// It queries DuckDuckGo's HTML endpoint (WithSearchURL) and falls back to the
// lite endpoint (WithLiteSearchURL) when the first fails, answers with a
// status other than 200 or yields no results. Every request is bounded by
// WithHTTPTimeout (default 15 s), so an offline machine gets an error
// quickly. It needs no workspace.
func WebSearch(opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"web_search",
		"Search the web (DuckDuckGo) and return the top results with title, URL and snippet. "+
			"Use it for documentation, error messages and recent information.",
		func(ctx context.Context, args WebSearchArgs) (string, error) {
			return webSearch(ctx, cfg, args)
		},
	)
}

func webSearch(ctx context.Context, cfg *config, args WebSearchArgs) (string, error) {
	query := strings.TrimSpace(args.Query)
	if query == "" {
		return "", errors.New("web_search: query is empty")
	}
	limit := args.MaxResults
	switch {
	case limit < 0:
		return "", fmt.Errorf("web_search: max_results must be positive, got %d", limit)
	case limit == 0:
		limit = defaultSearchResults
	case limit > maxSearchResults:
		limit = maxSearchResults
	}
	endpoints := []struct{ name, url string }{
		{"html", cfg.searchURL},
		{"lite", cfg.liteSearchURL},
	}
	var errs []error
	tried := 0
	var results []searchResult
	for _, ep := range endpoints {
		if ep.url == "" {
			continue
		}
		tried++
		res, err := fetchSearch(ctx, cfg, ep.url, query)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return "", ctxErr
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s endpoint: %w", ep.name, err))
			continue
		}
		if len(res) > 0 {
			results = res
			break
		}
	}
	if tried == 0 {
		return "", errors.New("web_search: no search endpoint configured")
	}
	if results == nil && len(errs) == tried {
		return "", fmt.Errorf("web_search: search failed (is the network reachable?): %w", errors.Join(errs...))
	}
	if len(results) == 0 {
		return fmt.Sprintf("No results found for %q.\n", query), nil
	}
	var b strings.Builder
	for i, r := range results[:min(limit, len(results))] {
		fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, r.Title, r.URL)
		if r.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", r.Snippet)
		}
	}
	return b.String(), nil
}

// fetchSearch queries one endpoint and parses the result page.
func fetchSearch(ctx context.Context, cfg *config, endpoint, query string) ([]searchResult, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("bad endpoint URL: %w", err)
	}
	q := u.Query()
	q.Set("q", query)
	u.RawQuery = q.Encode()

	reqCtx, cancel := context.WithTimeout(ctx, cfg.httpTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", searchUserAgent)
	req.Header.Set("Accept", "text/html")
	req.Header.Set("Accept-Language", "en-US,en;q=0.8")
	resp, err := cfg.httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("unexpected HTTP status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchPageBytes))
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	results, err := parseSearchPage(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse response: %w", err)
	}
	return results, nil
}

// parseSearchPage extracts results from DuckDuckGo's HTML page (links of
// class result__a, snippets of class result__snippet) or lite page (classes
// result-link and result-snippet), in document order. A snippet belongs to
// the link before it; links to DuckDuckGo itself (ads) and links that are not
// http(s) are skipped together with their snippets. It fails when r does or
// when the page is nested deeper than the HTML parser allows.
func parseSearchPage(r io.Reader) ([]searchResult, error) {
	doc, err := html.Parse(r)
	if err != nil {
		return nil, err
	}
	var results []searchResult
	cur := -1 // index of the result snippets attach to
	walk(doc, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return true
		}
		classes := strings.Fields(attr(n, "class"))
		switch {
		case slices.Contains(classes, "result__a") || slices.Contains(classes, "result-link"):
			link := unwrapDDG(attr(n, "href"))
			if link == "" || isDDGInternal(link) {
				cur = -1
				return false
			}
			title := nodeText(n)
			if title == "" {
				title = link
			}
			results = append(results, searchResult{Title: title, URL: link})
			cur = len(results) - 1
			return false
		case slices.Contains(classes, "result__snippet") || slices.Contains(classes, "result-snippet"):
			if cur >= 0 && results[cur].Snippet == "" {
				results[cur].Snippet = nodeText(n)
			}
			return false
		}
		return true
	})
	return results, nil
}

// walk visits the nodes beneath root in document order, descending into a
// node's children only when visit returns true. It does not recurse, so a
// deeply nested page cannot exhaust the stack.
func walk(root *html.Node, visit func(*html.Node) bool) {
	n := root.FirstChild
	for n != nil {
		if visit(n) && n.FirstChild != nil {
			n = n.FirstChild
			continue
		}
		for n != root && n.NextSibling == nil {
			n = n.Parent
		}
		if n == root {
			return
		}
		n = n.NextSibling
	}
}

// attr returns the value of n's attribute key (lower case), or "".
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

// nodeText returns the text a reader sees in n: its text nodes, entities
// decoded, without scripts, styles, templates and comments, a line break
// counting as a space, with whitespace collapsed.
func nodeText(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		switch c.Type {
		case html.TextNode:
			b.WriteString(c.Data)
		case html.ElementNode:
			switch c.DataAtom {
			case atom.Script, atom.Style, atom.Template, atom.Noscript:
				return false
			case atom.Br:
				b.WriteByte(' ')
			}
		}
		return true
	})
	return strings.Join(strings.Fields(b.String()), " ")
}

// unwrapDDG returns the target of a DuckDuckGo redirect link
// ("//duckduckgo.com/l/?uddg=<url>&rut=..."), or href itself.
func unwrapDDG(href string) string {
	href = strings.TrimSpace(href)
	if strings.HasPrefix(href, "//") {
		href = "https:" + href
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if target := u.Query().Get("uddg"); target != "" {
		return target
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return ""
	}
	return href
}

// isDDGInternal reports links to DuckDuckGo itself, such as ads (y.js).
func isDDGInternal(link string) bool {
	u, err := url.Parse(link)
	if err != nil {
		return true
	}
	host := strings.ToLower(u.Hostname())
	return host == "duckduckgo.com" || strings.HasSuffix(host, ".duckduckgo.com")
}
