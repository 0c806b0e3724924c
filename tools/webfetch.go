package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxFetchBytes bounds the page web_fetch reads.
const maxFetchBytes = 2 << 20

// WebFetchArgs are the arguments of the web_fetch tool.
type WebFetchArgs struct {
	// URL is the page to fetch, http or https.
	URL string `json:"url" jsonschema:"required" jsonschema_description:"The http(s) URL of the page."`
}

// PrivateAddressError is returned by web_fetch for a URL whose host is a
// loopback, private, link-local, shared (CGNAT), reserved or otherwise
// not globally reachable address, as listed by the IANA special-purpose
// address registries (checked on the address actually dialled, after DNS
// and redirects).
type PrivateAddressError struct {
	// Address is the address that was refused.
	Address string
}

// Error implements error.
func (e *PrivateAddressError) Error() string {
	return fmt.Sprintf("web_fetch: %s is not a public address", e.Address)
}

// WebFetch returns the web_fetch tool, which fetches a web page and
// returns its title and text (HTML without scripts and styles, one line a
// block), or the body of a text, JSON or XML response, cut to the output
// limit (WithOutputLimit). Pages over 2 MB are cut.
//
// A model can be tricked into fetching internal services (cloud metadata
// endpoints, a database's HTTP port), so connections to every address that
// is not globally reachable unicast — loopback, private, link-local, shared
// 100.64.0.0/10, benchmarking, documentation, reserved, multicast,
// unspecified, IPv6 outside 2000::/3, and IPv4 addresses of these kinds
// embedded in IPv4-mapped, NAT64 or 6to4 IPv6 addresses — are refused with
// *PrivateAddressError, on the address dialled (a DNS name resolving to
// one, or a redirect to one, is refused too). The guard is set on the
// client's transport when it is an *http.Transport (the default); a client
// of WithHTTPClient with another RoundTripper is used as it is.
func WebFetch(opts ...Option) Tool {
	cfg := newConfig(opts)
	client := guardedClient(cfg.httpClient)
	return New(
		"web_fetch",
		"Fetch a web page (http or https) and return its text.",
		func(ctx context.Context, args WebFetchArgs) (string, error) {
			return webFetch(ctx, cfg, client, args.URL)
		},
	)
}

// guardedClient returns a copy of c whose transport refuses non-public
// addresses, or c itself when its transport is not an *http.Transport.
func guardedClient(c *http.Client) *http.Client {
	var base *http.Transport
	switch t := c.Transport.(type) {
	case nil:
		base = http.DefaultTransport.(*http.Transport)
	case *http.Transport:
		base = t
	default:
		return c
	}
	tr := base.Clone()
	dialer := &net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &PrivateAddressError{Address: address}
		}
		if a := ap.Addr(); !publicAddress(a) {
			return &PrivateAddressError{Address: a.String()}
		}
		return nil
	}}
	tr.DialContext = dialer.DialContext
	tr.Proxy = nil // a proxy would dial the address for us, unchecked
	cc := *c
	cc.Transport = tr
	return &cc
}

// nonPublic4 and nonPublic6 are the blocks of the IANA IPv4 and IPv6
// special-purpose address registries that are not globally reachable, plus
// the deprecated and reserved blocks a public web server is never on.
var (
	nonPublic4 = prefixes(
		"0.0.0.0/8",       // "this network"
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // shared address space (CGNAT; cloud metadata such as 100.100.100.200)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link local (cloud metadata 169.254.169.254)
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation (TEST-NET-1)
		"192.88.99.0/24",  // deprecated 6to4 relay anycast
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation (TEST-NET-2)
		"203.0.113.0/24",  // documentation (TEST-NET-3)
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, and the limited broadcast address
	)
	nonPublic6 = prefixes(
		"64:ff9b:1::/48", // local-use IPv4/IPv6 translation
		"2001::/23",      // IETF protocol assignments (Teredo, ORCHID, benchmarking…)
		"2001:db8::/32",  // documentation
		"3fff::/20",      // documentation
	)
	global6 = netip.MustParsePrefix("2000::/3") // the only IPv6 block IANA allocates for global unicast
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4  = netip.MustParsePrefix("2002::/16")
)

func prefixes(ss ...string) []netip.Prefix {
	ps := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		ps[i] = netip.MustParsePrefix(s)
	}
	return ps
}

// publicAddress reports whether a is a globally reachable unicast address.
// An IPv4 address embedded in an IPv6 one (IPv4-mapped ::ffff:0:0/96, the
// NAT64 64:ff9b::/96 and 6to4 2002::/16) is judged as that IPv4 address,
// since the packet ends up there; every other IPv6 address outside
// 2000::/3 (ULA, link local, multicast, loopback, ::/8…) is not public.
func publicAddress(a netip.Addr) bool {
	a = a.WithZone("") // a zoned address would match no prefix
	if a.Is4In6() {
		a = a.Unmap()
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return publicAddress(netip.AddrFrom4([4]byte(b[12:16])))
		case sixTo4.Contains(a):
			return publicAddress(netip.AddrFrom4([4]byte(b[2:6])))
		case !global6.Contains(a):
			return false
		}
		return !inAny(nonPublic6, a)
	}
	return a.Is4() && !inAny(nonPublic4, a)
}

func inAny(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func webFetch(ctx context.Context, cfg *config, client *http.Client, raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("web_fetch: %q is not an http(s) URL", raw)
	}
	reqCtx, cancel := context.WithTimeout(ctx, cfg.httpTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("web_fetch: %w", err)
	}
	req.Header.Set("User-Agent", searchUserAgent)
	req.Header.Set("Accept", "text/html, text/plain;q=0.9, */*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		var pe *PrivateAddressError
		if errors.As(err, &pe) {
			return "", pe
		}
		return "", fmt.Errorf("web_fetch: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxFetchBytes))
	if err != nil {
		return "", fmt.Errorf("web_fetch: read %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("web_fetch: %s answered %s", u, resp.Status)
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var text string
	switch {
	case mediaType == "text/html" || mediaType == "application/xhtml+xml" || (mediaType == "" && bytes.Contains(bytes.ToLower(body[:min(len(body), 512)]), []byte("<html"))):
		text, err = pageText(body)
		if err != nil {
			return "", fmt.Errorf("web_fetch: parse %s: %w", u, err)
		}
	case strings.HasPrefix(mediaType, "text/") || strings.HasSuffix(mediaType, "json") || strings.HasSuffix(mediaType, "xml") || mediaType == "":
		if looksBinary(body) {
			return "", fmt.Errorf("web_fetch: %s is binary (%s)", u, mediaType)
		}
		text = string(body)
	default:
		return "", fmt.Errorf("web_fetch: %s is %s, not text", u, mediaType)
	}
	return Truncate(text, cfg.outputLimit), nil
}

// pageText returns the title and the text of an HTML page, a line per
// block element, without scripts, styles and templates.
func pageText(body []byte) (string, error) {
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	var line strings.Builder
	flush := func() {
		if t := strings.Join(strings.Fields(line.String()), " "); t != "" {
			b.WriteString(t)
			b.WriteByte('\n')
		}
		line.Reset()
	}
	walk(doc, func(n *html.Node) bool {
		switch n.Type {
		case html.TextNode:
			line.WriteString(n.Data)
			line.WriteByte(' ')
		case html.ElementNode:
			switch n.DataAtom {
			case atom.Script, atom.Style, atom.Template, atom.Noscript, atom.Head:
				if n.DataAtom == atom.Head {
					for c := n.FirstChild; c != nil; c = c.NextSibling {
						if c.DataAtom == atom.Title {
							b.WriteString("# " + nodeText(c) + "\n\n")
						}
					}
				}
				return false
			case atom.P, atom.Div, atom.Br, atom.Li, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6,
				atom.Tr, atom.Pre, atom.Section, atom.Article, atom.Header, atom.Footer, atom.Blockquote:
				flush()
			}
		}
		return true
	})
	flush()
	return strings.TrimRight(b.String(), "\n"), nil
}
