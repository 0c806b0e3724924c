package codur

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentgraph/agentgraph/tools"
)

// The formats [Detector.Detect] recognises, as reported in [ToolRound].
const (
	// FormatNative: the model's own tool calls (not a text format).
	FormatNative = "native"
	// FormatFenced: a JSON object or a tool(args) line inside a fenced
	// code block (```json … ```, ```tool … ```).
	FormatFenced = "fenced"
	// FormatTagged: a JSON object inside <tool_call>…</tool_call> tags.
	FormatTagged = "tagged"
	// FormatJSON: a JSON object in the text, such as
	// {"tool": "file_read", "args": {"path": "main.py"}}.
	FormatJSON = "json"
	// FormatCall: a line such as file_read(path="main.py").
	FormatCall = "call"
	// FormatExtracted: calls the planner model extracted from an answer
	// that describes them in words (see [WithToolCallExtraction]).
	FormatExtracted = "extracted"
)

// ToolAliases maps the tool names agents often use (those of the Python
// Codur, of other agents) to the names of this SDK's tools.
var ToolAliases = map[string]string{
	"read_file":         "file_read",
	"write_file":        "file_write",
	"append_file":       "file_append",
	"delete_file":       "file_delete",
	"copy_file":         "file_copy",
	"move_file":         "file_move",
	"rename_file":       "file_move",
	"list_files":        "file_list",
	"list_dirs":         "file_list",
	"file_tree":         "file_list",
	"search_files":      "file_find",
	"find_files":        "file_find",
	"grep_files":        "grep",
	"replace_in_file":   "file_replace",
	"edit_file":         "file_patch",
	"read_json":         "json_read",
	"write_json":        "json_write",
	"read_yaml":         "yaml_read",
	"write_yaml":        "yaml_write",
	"read_ini":          "ini_read",
	"write_ini":         "ini_write",
	"duckduckgo_search": "web_search",
	"fetch_webpage":     "web_fetch",
	"fetch_url":         "web_fetch",
	"git_stage_files":   "git_stage",
	"git_add":           "git_stage",
	"bash":              "bash_exec",
	"shell":             "bash_exec",
}

// argAliases maps argument names agents use to the names of the tools'
// parameters; a name is renamed only when the tool has the target
// parameter and not the name itself.
var argAliases = map[string][]string{
	"file":        {"path", "source"},
	"filename":    {"path", "source"},
	"file_path":   {"path", "source"},
	"filepath":    {"path", "source"},
	"src":         {"source"},
	"from":        {"source"},
	"dst":         {"destination"},
	"dest":        {"destination"},
	"to":          {"destination"},
	"target":      {"destination"},
	"text":        {"content", "new"},
	"contents":    {"content"},
	"data":        {"content", "value"},
	"old_text":    {"old"},
	"new_text":    {"new"},
	"search":      {"old"},
	"replacement": {"new"},
	"directory":   {"dir", "path"},
	"query":       {"pattern", "query"},
	"cmd":         {"command"},
}

// Detector finds tool calls in the text of an agent that does not make
// native tool calls. It only reports calls of the tools it knows, under
// their names (aliases resolved, see [ToolAliases]), with arguments
// renamed to the tools' parameters where agents use other names.
type Detector struct {
	params map[string][]string // tool name -> parameter names, required first
}

// NewDetector returns a Detector for ts.
func NewDetector(ts []tools.Tool) *Detector {
	d := &Detector{params: map[string][]string{}}
	for _, t := range ts {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		_ = json.Unmarshal(t.Parameters(), &schema)
		names := slices.Clone(schema.Required)
		var rest []string
		for p := range schema.Properties {
			if !slices.Contains(names, p) {
				rest = append(rest, p)
			}
		}
		slices.Sort(rest)
		d.params[t.Name()] = append(names, rest...)
	}
	return d
}

// Resolve returns the name of the known tool name designates (itself or
// an alias), or false.
func (d *Detector) Resolve(name string) (string, bool) {
	name = strings.TrimSpace(name)
	if _, ok := d.params[name]; ok {
		return name, true
	}
	if canon, ok := ToolAliases[strings.ToLower(name)]; ok {
		if _, ok := d.params[canon]; ok {
			return canon, true
		}
	}
	return "", false
}

var (
	// fenceRe matches a fenced block, its label and its body.
	fenceRe = regexp.MustCompile("(?s)```([A-Za-z0-9_+#.-]*)[ \t]*\n(.*?)```")
	// openFenceRe finds the opening of a labelled fence.
	openFenceRe = regexp.MustCompile("```([A-Za-z0-9_+#.-]+)")
	taggedRe    = regexp.MustCompile(`(?s)<tool_call>(.*?)</tool_call>`)
	// callRe matches a tool(args) line that is not indented (a bullet or
	// quote mark may start it): an indented call is code.
	callRe = regexp.MustCompile(`(?m)^(?:[>*-][ \t]*)*` + "`?" + `([A-Za-z_][A-Za-z0-9_]*)\((.*)\)` + "`?" + `[ \t.;]*$`)
)

// Mentions reports whether text names one of the known tools (or an
// alias of one) as a word: an answer that may describe a call the patterns
// did not find.
func (d *Detector) Mentions(text string) bool {
	if len(text) > maxDetectChars {
		text = text[:maxDetectChars]
	}
	for _, w := range wordRe.FindAllString(text, -1) {
		if _, ok := d.Resolve(w); ok && strings.Contains(w, "_") {
			return true
		}
	}
	return false
}

var wordRe = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// Bounds of the detection, so that a huge or hostile answer cannot make
// it slow: only the first maxDetectChars bytes are read, and at most
// maxJSONStarts positions are tried as the start of a JSON value.
const (
	maxDetectChars = 256 << 10
	maxJSONStarts  = 2000
)

// Detect returns the tool calls of text and the format they were found
// in, trying fenced blocks, then tagged calls, then JSON objects in the
// text, then tool(args) lines; nil when it finds none. Only the first
// 256 KB of text are read.
//
// Code shown is not a call: only untagged fences and fences labelled
// json or tool are read, the blocks of other languages (```python …) are
// ignored by every format, and a tool(args) line counts only when it is
// not indented.
func (d *Detector) Detect(text string) ([]ToolCall, string) {
	if len(text) > maxDetectChars {
		text = text[:maxDetectChars]
	}
	if calls := d.fenced(text); len(calls) > 0 {
		return calls, FormatFenced
	}
	text = withoutCodeFences(text)
	var tagged []ToolCall
	for _, m := range taggedRe.FindAllStringSubmatch(text, -1) {
		tagged = append(tagged, d.fromJSON(m[1])...)
	}
	if len(tagged) > 0 {
		return tagged, FormatTagged
	}
	if calls := d.fromJSON(text); len(calls) > 0 {
		return calls, FormatJSON
	}
	if calls := d.fromCallLines(text); len(calls) > 0 {
		return calls, FormatCall
	}
	return nil, ""
}

// callFence reports whether a fence labelled label may hold tool calls.
func callFence(label string) bool {
	switch strings.ToLower(label) {
	case "", "json", "tool", "tool_call", "tool_code":
		return true
	}
	return false
}

// withoutCodeFences drops the fenced blocks of other languages from text,
// and everything after a labelled fence that is not closed.
func withoutCodeFences(text string) string {
	text = fenceRe.ReplaceAllStringFunc(text, func(m string) string {
		if callFence(fenceRe.FindStringSubmatch(m)[1]) {
			return m
		}
		return "\n"
	})
	for _, loc := range openFenceRe.FindAllStringSubmatchIndex(text, -1) {
		if !callFence(text[loc[2]:loc[3]]) {
			return text[:loc[0]]
		}
	}
	return text
}

func (d *Detector) fenced(text string) []ToolCall {
	var calls []ToolCall
	for _, m := range fenceRe.FindAllStringSubmatch(text, -1) {
		if !callFence(m[1]) {
			continue
		}
		body := m[2]
		if c := d.fromJSON(body); len(c) > 0 {
			calls = append(calls, c...)
			continue
		}
		calls = append(calls, d.fromCallLines(body)...)
	}
	return calls
}

// fromJSON returns the calls of the JSON objects in text, in order.
func (d *Detector) fromJSON(text string) []ToolCall {
	var calls []ToolCall
	starts := 0
	for i := 0; i < len(text); i++ {
		if text[i] != '{' && text[i] != '[' {
			continue
		}
		if starts++; starts > maxJSONStarts {
			break
		}
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			continue
		}
		if c := d.fromValue(v); len(c) > 0 {
			calls = append(calls, c...)
			i += int(dec.InputOffset()) - 1
		}
	}
	return calls
}

// fromValue reads calls from a decoded JSON value: a call object, a list
// of them, or an object with "tool_calls".
func (d *Detector) fromValue(v any) []ToolCall {
	switch t := v.(type) {
	case []any:
		var calls []ToolCall
		for _, e := range t {
			calls = append(calls, d.fromValue(e)...)
		}
		return calls
	case map[string]any:
		if list, ok := t["tool_calls"].([]any); ok {
			return d.fromValue(list)
		}
		if fn, ok := t["function"].(map[string]any); ok {
			return d.fromValue(fn)
		}
		var name string
		for _, k := range []string{"tool", "name", "tool_name", "function"} {
			if s, ok := t[k].(string); ok {
				name = s
				break
			}
		}
		canon, ok := d.Resolve(name)
		if !ok {
			return nil
		}
		var args any = map[string]any{}
		for _, k := range []string{"args", "arguments", "parameters", "input"} {
			if a, ok := t[k]; ok {
				args = a
				break
			}
		}
		if s, ok := args.(string); ok {
			var parsed any
			if err := json.Unmarshal([]byte(s), &parsed); err == nil {
				args = parsed
			}
		}
		obj, ok := args.(map[string]any)
		if !ok {
			return nil
		}
		return []ToolCall{d.call(canon, obj)}
	}
	return nil
}

// call builds a call of tool with args, renaming aliased arguments.
func (d *Detector) call(tool string, args map[string]any) ToolCall {
	params := d.params[tool]
	out := make(map[string]any, len(args))
	for k, v := range args {
		name := k
		if !slices.Contains(params, k) {
			for _, cand := range argAliases[strings.ToLower(k)] {
				if _, taken := args[cand]; slices.Contains(params, cand) && !taken {
					name = cand
					break
				}
			}
		}
		out[name] = v
	}
	b, _ := json.Marshal(out)
	return ToolCall{Tool: tool, Args: string(b)}
}

// fromCallLines returns the calls of lines such as
// file_read(path="main.py"), file_read("main.py") or
// file_read({"path": "main.py"}) naming a known tool.
func (d *Detector) fromCallLines(text string) []ToolCall {
	var calls []ToolCall
	for _, m := range callRe.FindAllStringSubmatch(text, -1) {
		canon, ok := d.Resolve(m[1])
		if !ok {
			continue
		}
		args, ok := parseCallArgs(m[2], d.params[canon])
		if !ok {
			continue
		}
		calls = append(calls, d.call(canon, args))
	}
	return calls
}

// parseCallArgs parses the argument list of a tool(args) line: a JSON
// object, or comma-separated values, each a keyword argument (name=value,
// name: value) or a positional one given to the next parameter of params.
// Values are JSON literals or Python-style strings in single or double
// quotes.
func parseCallArgs(s string, params []string) (map[string]any, bool) {
	s = strings.TrimSpace(s)
	args := map[string]any{}
	if s == "" {
		return args, true
	}
	if strings.HasPrefix(s, "{") {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&args); err == nil && dec.InputOffset() == int64(len(s)) {
			return args, true
		}
	}
	pos := 0
	for len(s) > 0 {
		name := ""
		if m := kwRe.FindStringSubmatch(s); m != nil {
			name = m[1]
			s = s[len(m[0]):]
		}
		val, rest, ok := parseValue(s)
		if !ok {
			return nil, false
		}
		if name == "" {
			if pos >= len(params) {
				return nil, false
			}
			name = params[pos]
			pos++
		}
		args[name] = val
		s = strings.TrimSpace(rest)
		if s == "" {
			break
		}
		if s[0] != ',' {
			return nil, false
		}
		s = strings.TrimSpace(s[1:])
	}
	return args, true
}

var kwRe = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*`)

// parseValue parses one value at the start of s and returns the rest.
func parseValue(s string) (any, string, bool) {
	if s == "" {
		return nil, "", false
	}
	switch q := s[0]; q {
	case '"', '\'':
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				default:
					b.WriteByte(s[i])
				}
				continue
			}
			if c == q {
				return b.String(), s[i+1:], true
			}
			b.WriteByte(c)
		}
		return nil, "", false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil {
		return v, s[dec.InputOffset():], true
	}
	// A bare word: up to the next comma.
	end := strings.IndexByte(s, ',')
	if end < 0 {
		end = len(s)
	}
	word := strings.TrimSpace(s[:end])
	if word == "" {
		return nil, "", false
	}
	if n, err := strconv.ParseFloat(word, 64); err == nil {
		return n, s[end:], true
	}
	return word, s[end:], true
}

// jsonObjectWith returns the first JSON object of text that has the key,
// decoded into T; text may wrap it in prose or code fences.
func jsonObjectWith[T any](text, key string) (T, bool) {
	var zero T
	if len(text) > maxDetectChars {
		text = text[:maxDetectChars]
	}
	starts := 0
	for i := 0; i < len(text); i++ {
		if text[i] != '{' {
			continue
		}
		if starts++; starts > maxJSONStarts {
			break
		}
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		var raw map[string]json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			continue
		}
		if _, ok := raw[key]; !ok {
			continue
		}
		var v T
		obj := text[i : i+int(dec.InputOffset())]
		if err := json.NewDecoder(bytes.NewReader([]byte(obj))).Decode(&v); err != nil {
			continue
		}
		return v, true
	}
	return zero, false
}
