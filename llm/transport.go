package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// WrapTransport returns an [http.RoundTripper] for the HTTP client of a
// langchaingo provider. [New] installs it on every client it builds; use it
// when you construct a provider yourself and pass it to [FromLangchain]:
//
//	hc := &http.Client{Transport: llm.WrapTransport(http.DefaultTransport)}
//	oa, err := openai.New(openai.WithHTTPClient(hc), openai.WithModel("gpt-4o-mini"))
//	m := llm.FromLangchain(oa, "openai:gpt-4o-mini")
//
// It does three things:
//
//   - It enforces the stall timeout of the adapter's calls
//     ([WithStallTimeout]) and reports the first byte of their answers
//     ([ProgressFirstByte]).
//   - It lets the adapter see the HTTP status and Retry-After headers of a
//     failed call. langchaingo's providers turn HTTP errors into plain text
//     and drop the headers; without this transport the adapter parses the
//     status out of the error text and cannot honour Retry-After headers.
//   - It repairs OpenAI-style streamed tool calls (text/event-stream answers
//     of */chat/completions). langchaingo v0.1.14 ignores the "index" of
//     tool-call deltas, so interleaved parallel calls, servers that repeat
//     id/type in every delta, and deltas without arguments all produce
//     wrong calls. The transport assembles the calls by index (and by id
//     when a server sends every call with index 0, as Ollama does) and
//     hands each one to langchaingo whole, just before the chunk that
//     finishes the choice. Text deltas pass through unchanged and
//     immediately.
//   - It reads the JSON answer of a server that does not stream, given
//     a streaming call (one with a token sink), as a stream of one chunk:
//     langchaingo would find no event in it and return an empty answer.
//
// base nil means [http.DefaultTransport].
func WrapTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if t, ok := base.(*transport); ok {
		return t
	}
	return &transport{base: base}
}

type transport struct{ base http.RoundTripper }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	w := watchdogFrom(req.Context())
	stop := w.awaitHeaders()
	resp, err := t.base.RoundTrip(req)
	stop()
	if resp == nil {
		return resp, err
	}
	if obs, ok := req.Context().Value(obsKey{}).(*httpObservation); ok {
		obs.set(resp.StatusCode, resp.Header)
	}
	if w != nil && resp.Body != nil {
		resp.Body = &watchedBody{ReadCloser: resp.Body, w: w, ok: resp.StatusCode/100 == 2}
	}
	if resp.StatusCode != http.StatusOK || resp.Body == nil || !strings.HasSuffix(req.URL.Path, "/chat/completions") {
		return resp, err
	}
	if w != nil && w.stream {
		// A server that does not stream answers a streaming call with
		// JSON, sometimes labelled text/event-stream: the answer, in the
		// form the streaming client reads.
		jsonBody := isJSON(resp.Header)
		if !jsonBody && isEventStream(resp.Header) {
			resp.Body, jsonBody = peekJSONObject(resp.Body)
		}
		if jsonBody {
			body, jerr := jsonAsEventStream(resp.Body)
			if jerr != nil {
				if obs, ok := req.Context().Value(obsKey{}).(*httpObservation); ok {
					obs.fail(jerr) // the adapter reports it, not the client's rewording
				}
				return nil, jerr
			}
			resp.Body = body
			resp.Header.Set("Content-Type", "text/event-stream")
		}
	}
	if isEventStream(resp.Header) {
		resp.Body = newSSENormalizer(resp.Body)
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	return resp, err
}

// peekJSONObject reports whether body, past leading white space, starts
// with "{" (a JSON object, not an event stream), and returns the body to
// read in its place.
func peekJSONObject(body io.ReadCloser) (io.ReadCloser, bool) {
	br := bufio.NewReader(body)
	rc := struct {
		io.Reader
		io.Closer
	}{br, body}
	for {
		b, err := br.Peek(1)
		if err != nil {
			return rc, false
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = br.ReadByte()
			continue
		}
		return rc, b[0] == '{'
	}
}

func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// httpObservation is where the transport leaves the status and headers of
// the last HTTP response of one attempt; the adapter puts one on the
// attempt's context.
type httpObservation struct {
	mu     sync.Mutex
	status int
	header http.Header
	err    error // an answer the transport could not read (see fail)
}

type obsKey struct{}

func withObservation(ctx context.Context) (context.Context, *httpObservation) {
	obs := &httpObservation{}
	return context.WithValue(ctx, obsKey{}, obs), obs
}

func (o *httpObservation) set(status int, h http.Header) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.status = status
	o.header = h.Clone()
}

// fail records that the answer could not be read, for the adapter to
// report as the attempt's error (clients reword transport errors).
func (o *httpObservation) fail(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.err = err
}

// failure returns what fail recorded, or nil.
func (o *httpObservation) failure() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

func (o *httpObservation) get() (int, http.Header) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.status, o.header
}

// sseNormalizer rewrites an OpenAI chat-completions SSE stream so that every
// tool call reaches the client as one complete delta. It is a pull-based
// reader: no goroutine, nothing to leak.
type sseNormalizer struct {
	src     io.ReadCloser
	br      *bufio.Reader
	out     bytes.Buffer
	choices map[int]*pendingCalls
	err     error // sticky; io.EOF at the end
}

type pendingCalls struct {
	calls   []*pendingCall
	byIndex map[int]*pendingCall
}

type pendingCall struct {
	index int
	id    string
	name  string
	args  strings.Builder
}

type toolCallDelta struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments,omitempty"`
	} `json:"function"`
}

func newSSENormalizer(src io.ReadCloser) *sseNormalizer {
	return &sseNormalizer{src: src, br: bufio.NewReaderSize(src, 64<<10), choices: make(map[int]*pendingCalls)}
}

func (s *sseNormalizer) Close() error { return s.src.Close() }

func (s *sseNormalizer) Read(p []byte) (int, error) {
	for s.out.Len() == 0 && s.err == nil {
		line, err := s.br.ReadString('\n')
		if line != "" {
			s.line(line)
		}
		if err != nil {
			if err == io.EOF {
				s.flushAll()
			}
			s.err = err
		}
	}
	if s.out.Len() > 0 {
		return s.out.Read(p)
	}
	return 0, s.err
}

// line handles one line of the stream, newline included.
func (s *sseNormalizer) line(line string) {
	trimmed := strings.TrimRight(line, "\r\n")
	data, ok := strings.CutPrefix(trimmed, "data:")
	if !ok {
		s.out.WriteString(line)
		return
	}
	data = strings.TrimSpace(data)
	if data == "[DONE]" {
		s.flushAll()
		s.out.WriteString(line)
		return
	}
	rewritten, keep, ok := s.event([]byte(data))
	if !ok {
		s.out.WriteString(line)
		return
	}
	if keep {
		s.out.WriteString("data: ")
		s.out.Write(rewritten)
		s.out.WriteString("\n")
	}
}

// event takes the tool-call deltas out of one chunk. It returns the chunk to
// forward (keep false: drop it, it carried nothing else) and ok false when
// the chunk is not one it understands (it is then forwarded verbatim).
func (s *sseNormalizer) event(data []byte) (out []byte, keep, ok bool) {
	if !bytes.Contains(data, []byte(`"tool_calls"`)) && !bytes.Contains(data, []byte(`"finish_reason"`)) {
		return nil, false, false
	}
	var chunk map[string]json.RawMessage
	if json.Unmarshal(data, &chunk) != nil {
		return nil, false, false
	}
	var choices []map[string]json.RawMessage
	if raw, has := chunk["choices"]; !has || json.Unmarshal(raw, &choices) != nil {
		return nil, false, false
	}
	type parsed struct {
		index    int
		delta    map[string]json.RawMessage
		calls    []toolCallDelta
		finished bool
	}
	ps := make([]parsed, len(choices))
	changed := false
	for i, c := range choices {
		p := parsed{}
		if raw, has := c["index"]; has {
			if json.Unmarshal(raw, &p.index) != nil {
				return nil, false, false
			}
		}
		if raw, has := c["delta"]; has && !isNull(raw) {
			if json.Unmarshal(raw, &p.delta) != nil {
				return nil, false, false
			}
		}
		if raw, has := p.delta["tool_calls"]; has {
			if !isNull(raw) && json.Unmarshal(raw, &p.calls) != nil {
				return nil, false, false
			}
			changed = true
		}
		if raw, has := c["finish_reason"]; has && !isNull(raw) && string(raw) != `""` {
			p.finished = true
		}
		ps[i] = p
	}

	// Everything parsed: now it is safe to change state.
	for _, p := range ps {
		for _, d := range p.calls {
			s.add(p.index, d)
		}
	}
	for _, p := range ps {
		if p.finished {
			s.flush(p.index)
		}
	}
	if !changed {
		return nil, false, false
	}
	kept := choices[:0]
	for i, c := range choices {
		p := ps[i]
		delete(p.delta, "tool_calls")
		if len(p.delta) == 0 && !p.finished {
			continue
		}
		d, _ := json.Marshal(p.delta)
		c["delta"] = d
		kept = append(kept, c)
	}
	usage, hasUsage := chunk["usage"]
	if len(kept) == 0 && (!hasUsage || isNull(usage)) {
		return nil, false, true
	}
	raw, err := json.Marshal(kept)
	if err != nil {
		return nil, false, false
	}
	chunk["choices"] = raw
	out, err = json.Marshal(chunk)
	if err != nil {
		return nil, false, false
	}
	return out, true, true
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func (s *sseNormalizer) add(choice int, d toolCallDelta) {
	pc := s.choices[choice]
	if pc == nil {
		pc = &pendingCalls{byIndex: make(map[int]*pendingCall)}
		s.choices[choice] = pc
	}
	var cur *pendingCall
	idx := 0
	if d.Index != nil {
		idx = *d.Index
		cur = pc.byIndex[idx]
	} else if n := len(pc.calls); n > 0 {
		// No index at all: continue the last call unless this delta
		// names another one.
		last := pc.calls[n-1]
		if (d.ID == "" || d.ID == last.id) && (d.Function.Name == "" || d.Function.Name == last.name) {
			cur, idx = last, last.index
		} else {
			idx = last.index + 1
		}
	}
	if cur == nil || (d.ID != "" && cur.id != "" && d.ID != cur.id) {
		cur = &pendingCall{index: idx, id: d.ID}
		pc.calls = append(pc.calls, cur)
		pc.byIndex[idx] = cur
	}
	if cur.id == "" {
		cur.id = d.ID
	}
	if cur.name == "" {
		cur.name = d.Function.Name
	}
	cur.args.WriteString(d.Function.Arguments)
}

// flush writes the pending calls of one choice as a single SSE event.
func (s *sseNormalizer) flush(choice int) {
	pc := s.choices[choice]
	if pc == nil || len(pc.calls) == 0 {
		return
	}
	delete(s.choices, choice)
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		Index    int    `json:"index"`
		ID       string `json:"id,omitempty"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	calls := make([]call, len(pc.calls))
	for i, c := range pc.calls {
		calls[i] = call{Index: i, ID: c.id, Type: "function", Function: fn{Name: c.name, Arguments: c.args.String()}}
	}
	ev := map[string]any{
		"choices": []any{map[string]any{
			"index": choice,
			"delta": map[string]any{"role": "assistant", "tool_calls": calls},
		}},
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	s.out.WriteString("data: ")
	s.out.Write(b)
	s.out.WriteString("\n\n")
}

func (s *sseNormalizer) flushAll() {
	keys := make([]int, 0, len(s.choices))
	for k := range s.choices {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s.flush(k)
	}
}
