package client_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server/client"
)

// flakyRun serves a run's stream of n events, dropping the connection
// after every `drop` events it wrote (a proxy or a network hiccup), and
// records the Last-Event-ID of each reconnection.
type flakyRun struct {
	n, drop  int
	location string // the Location header, "" for a non-resumable stream

	mu       sync.Mutex
	lastIDs  []string
	requests []string
}

func (f *flakyRun) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	from := 0
	if r.Method == "GET" {
		last := r.Header.Get("Last-Event-ID")
		f.lastIDs = append(f.lastIDs, last)
		n, err := strconv.Atoi(last)
		if err != nil {
			f.mu.Unlock()
			http.Error(w, "bad Last-Event-ID", http.StatusBadRequest)
			return
		}
		from = n + 1
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	if f.location != "" {
		w.Header().Set("Location", f.location)
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	written := 0
	for i := from; i < f.n; i++ {
		if written == f.drop {
			_ = rc.Flush()
			panic(http.ErrAbortHandler) // cuts the chunked body: no terminating chunk
		}
		fmt.Fprintf(w, ": heartbeat\n\nevent: values\ndata: {\"i\":%d}\nid: %d\n\n", i, i)
		written++
	}
	fmt.Fprint(w, "event: end\ndata: null\n\n")
}

func newFlaky(t *testing.T, f *flakyRun, opts ...client.Option) *client.Client {
	t.Helper()
	hs := httptest.NewServer(f)
	t.Cleanup(hs.Close)
	c, err := client.New(hs.URL, append([]client.Option{client.WithHTTPClient(hs.Client()), client.WithReconnects(3, time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	return c
}

func TestStreamReconnectsWithLastEventIDAndLosesNoEvent(t *testing.T) {
	f := &flakyRun{n: 7, drop: 3, location: "/threads/t/runs/r/stream"}
	c := newFlaky(t, f)
	parts, err := collect(t, c.Runs.Stream(t.Context(), "t", "agent", client.RunRequest{StreamResumable: true}))
	require.NoError(t, err)
	var ids []string
	for _, p := range parts {
		ids = append(ids, p.ID)
	}
	require.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6"}, ids, "every event once, in order")
	require.Equal(t, []string{"2", "5"}, f.lastIDs)
	require.Equal(t, []string{"POST /threads/t/runs/stream", "GET /threads/t/runs/r/stream", "GET /threads/t/runs/r/stream"}, f.requests)
}

func TestStreamKeepsReconnectingWhileItMakesProgress(t *testing.T) {
	f := &flakyRun{n: 10, drop: 1, location: "/threads/t/runs/r/stream"}
	c := newFlaky(t, f)
	parts, err := collect(t, c.Runs.Stream(t.Context(), "t", "agent", client.RunRequest{}))
	require.NoError(t, err)
	require.Len(t, parts, 10, "ten drops, each after an event: more than three reconnections in all")
}

func TestStreamWithoutLocationDoesNotReconnect(t *testing.T) {
	f := &flakyRun{n: 5, drop: 2}
	c := newFlaky(t, f)
	parts, err := collect(t, c.Runs.Stream(t.Context(), "t", "agent", client.RunRequest{}))
	require.Error(t, err, "a dropped connection is an error, not a silent end")
	require.Len(t, parts, 2)
	require.Len(t, f.requests, 1)
}

func TestStreamGivesUpAfterItsReconnects(t *testing.T) {
	f := &flakyRun{n: 100, drop: 0, location: "/threads/t/runs/r/stream"}
	c := newFlaky(t, f)
	parts, err := collect(t, c.Runs.Stream(t.Context(), "t", "agent", client.RunRequest{}))
	require.Error(t, err)
	require.Empty(t, parts)
	require.Len(t, f.requests, 4, "the first connection and three reconnections, none of which made progress")
	require.Equal(t, []string{"-1", "-1", "-1"}, f.lastIDs, "no event seen: from the start")
}

func TestStreamReconnectsOnlyToItsOwnServer(t *testing.T) {
	f := &flakyRun{n: 4, drop: 2, location: "http://attacker.example/threads/t/runs/r/stream"}
	c := newFlaky(t, f)
	parts, err := collect(t, c.Runs.Stream(t.Context(), "t", "agent", client.RunRequest{}))
	require.NoError(t, err)
	require.Len(t, parts, 4)
	require.Equal(t, "GET /threads/t/runs/r/stream", f.requests[1], "the path only, on the client's own server")
}

func TestBreakingOutOfAStreamClosesTheConnection(t *testing.T) {
	gone := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: metadata\ndata: {}\nid: 0\n\n")
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done() // a run that never ends
		close(gone)
	}))
	t.Cleanup(hs.Close)
	c, err := client.New(hs.URL, client.WithHTTPClient(hs.Client()))
	require.NoError(t, err)
	for p, err := range c.Runs.Stream(t.Context(), "", "agent", client.RunRequest{}) {
		require.NoError(t, err)
		require.Equal(t, "metadata", p.Event)
		break
	}
	<-gone // the server saw the client go: the test would hang otherwise
}

func TestStreamRefusesAnAnswerThatIsNotAnEventStream(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>login</html>")
	}))
	t.Cleanup(hs.Close)
	c, err := client.New(hs.URL, client.WithHTTPClient(hs.Client()))
	require.NoError(t, err)
	_, err = collect(t, c.Runs.Stream(t.Context(), "", "agent", client.RunRequest{}))
	require.ErrorContains(t, err, "not an event stream")
}

// cuttingProxy forwards to package server, and cuts the first run stream
// it forwards after `after` events, as a proxy or a network could.
type cuttingProxy struct {
	backend string
	hc      *http.Client
	after   int

	mu   sync.Mutex
	cut  bool
	seen []string // Last-Event-ID of every request, "" when none
}

func (p *cuttingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.backend+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	res, err := p.hc.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	p.mu.Lock()
	p.seen = append(p.seen, r.Header.Get("Last-Event-ID"))
	cutThis := !p.cut && strings.HasSuffix(r.URL.Path, "/stream") && r.Method == "POST"
	p.cut = p.cut || cutThis
	p.mu.Unlock()
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		_, _ = io.Copy(w, res.Body)
		return
	}
	rc := http.NewResponseController(w)
	sc := bufio.NewScanner(res.Body)
	events := 0
	for sc.Scan() {
		fmt.Fprintln(w, sc.Text())
		if sc.Text() == "" {
			events++
			_ = rc.Flush()
			if cutThis && events == p.after {
				panic(http.ErrAbortHandler)
			}
		}
	}
}

func TestStreamOfPackageServerSurvivesACutConnection(t *testing.T) {
	e := newEnv(t)
	want, err := collect(t, e.c.Runs.Stream(t.Context(), "", "agent", client.RunRequest{
		Input: map[string]any{"topic": "cut"}, StreamMode: []client.StreamMode{client.ModeValues, client.ModeUpdates},
	}))
	require.NoError(t, err)

	p := &cuttingProxy{backend: e.srv.URL, hc: e.srv.Client(), after: 3}
	hs := httptest.NewServer(p)
	t.Cleanup(hs.Close)
	c, err := client.New(hs.URL, client.WithAPIKey(token), client.WithReconnects(3, time.Millisecond))
	require.NoError(t, err)
	th, err := c.Threads.Create(t.Context(), client.ThreadCreate{})
	require.NoError(t, err)
	got, err := collect(t, c.Runs.Stream(t.Context(), th.ThreadID, "agent", client.RunRequest{
		Input: map[string]any{"topic": "cut"}, StreamMode: []client.StreamMode{client.ModeValues, client.ModeUpdates}, StreamResumable: true,
	}))
	require.NoError(t, err)
	require.True(t, p.cut)
	require.Equal(t, []string{"", "", "2"}, p.seen, "create the thread, the stream, then its resumption after event 2")
	require.Equal(t, events(want), events(got), "every event once")
	for i, part := range got {
		require.Equal(t, strconv.Itoa(i), part.ID)
	}
}

func TestJoinStreamReconnectsAfterItsOwnLastEventIDWhenNoEventCame(t *testing.T) {
	f := &flakyRun{n: 10, drop: 0, location: "/threads/t/runs/r/stream"}
	c := newFlaky(t, f)
	parts, err := collect(t, c.Runs.JoinStream(t.Context(), "t", "r", client.JoinOptions{LastEventID: "4"}))
	require.Error(t, err)
	require.Empty(t, parts)
	require.Equal(t, []string{"4", "4", "4", "4"}, f.lastIDs, "never from the start: the joiner asked for the events after 4")
}

func TestJoinStreamReconnectsAfterTheLastEventItYielded(t *testing.T) {
	f := &flakyRun{n: 10, drop: 2, location: "/threads/t/runs/r/stream"}
	c := newFlaky(t, f)
	parts, err := collect(t, c.Runs.JoinStream(t.Context(), "t", "r", client.JoinOptions{LastEventID: "4"}))
	require.NoError(t, err)
	require.Equal(t, []string{"5", "6", "7", "8", "9"}, ids(parts))
	require.Equal(t, []string{"4", "6", "8"}, f.lastIDs)
}

func ids(parts []client.Part) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p.ID)
	}
	return out
}

func TestAnAnswerLargerThanTheBoundIsAnError(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"assistant_id":"%s"}`, strings.Repeat("a", 4096))
	}))
	t.Cleanup(hs.Close)
	c, err := client.New(hs.URL, client.WithHTTPClient(hs.Client()), client.WithMaxResponseBytes(1024))
	require.NoError(t, err)
	_, err = c.Assistants.Get(t.Context(), "agent")
	require.ErrorContains(t, err, "larger than 1024 bytes")
}

func TestARedirectToAnotherHostGetsNoCredentials(t *testing.T) {
	leaked := make(chan string, 1)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked <- r.Header.Get("X-Api-Key") + r.Header.Get("Authorization")
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(evil.Close)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, evil.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(hs.Close)
	for _, opts := range [][]client.Option{
		{client.WithAPIKey("key")},
		{client.WithAPIKey("key"), client.WithHTTPClient(&http.Client{})},
	} {
		c, err := client.New(hs.URL, opts...)
		require.NoError(t, err)
		_, err = c.Assistants.Get(t.Context(), "agent")
		var ae *client.APIError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, http.StatusTemporaryRedirect, ae.Status)
	}
	select {
	case got := <-leaked:
		t.Fatalf("the other host was called, with credentials %q", got)
	default:
	}
}
