package coder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/internal/modelcall"
	"github.com/agentgraph/agentgraph/agent/internal/modeljson"
	"github.com/agentgraph/agentgraph/agent/internal/prompt"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

// maxToolResultChars shortens the results events and prompts carry.
const maxToolResultChars = 2000

// maxFilesRead bounds the session's list of files read (the most recent
// are kept).
const maxFilesRead = 1000

// route is the "route" node.
func (a *Agent) route(ctx context.Context, s State) (State, error) {
	var out State
	out.Activity.Set("classify")
	req := s.Request.Get()
	if strings.TrimSpace(req) == "" {
		d := Decision{Intent: DefaultIntent, Source: SourceFallback, Reason: "the request is empty"}
		out.Route.Set(d)
		graph.StreamWriter(ctx)(IntentChosen{d})
		a.finish(ctx, &out, s, d.Intent, "Nothing to do: the request is empty.", OutcomeAnswered)
		return out, nil
	}
	d, ok := MatchPatterns(req, a.pats)
	if !ok || d.Confidence < a.cfg.minConfidence {
		var err error
		d, err = a.classify(ctx, req, d, ok)
		if err != nil {
			return State{}, err
		}
		if d.Source == SourceFallback {
			note(ctx, &out, "route", d.Reason)
		}
	}
	out.Route.Set(d)
	graph.StreamWriter(ctx)(IntentChosen{d})
	return out, nil
}

// chooseIntentTool is the name of the classifier's tool.
const chooseIntentTool = "choose_intent"

// classify asks the model for the intent of request. low is the best
// pattern match (ok false when none matched), used as the fallback when
// the model names no intent. It fails only when ctx is done.
func (a *Agent) classify(ctx context.Context, request string, low Decision, ok bool) (Decision, error) {
	names := make([]any, 0, len(a.intents))
	var lines strings.Builder
	for _, d := range a.intents {
		names = append(names, string(d.Intent))
		fmt.Fprintf(&lines, "- %s: %s\n", d.Intent, d.Description)
	}
	params, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"intent": map[string]any{"type": "string", "enum": names, "description": "The intent of the request."},
			"reason": map[string]any{"type": "string", "description": "Why, in a few words."},
		},
		"required": []string{"intent"},
	})
	tool := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name: chooseIntentTool, Description: "Choose the intent of the user's request.", Parameters: json.RawMessage(params)}}
	msgs := []state.Message{
		state.System(prompt.TruncateHead(prompt.Render(a.cfg.prompts.Classify, "intents", strings.TrimSpace(lines.String())), a.cfg.maxPromptChars/2)),
		state.Human(prompt.TruncateHead(request, a.cfg.maxPromptChars/2)),
	}
	resp, err := a.generate(ctx, msgs, llm.WithTools([]llms.Tool{tool}))
	fallback := func(reason string) Decision {
		if ok {
			return Decision{Intent: low.Intent, Confidence: low.Confidence, Source: SourceFallback, Pattern: low.Pattern,
				Reason: reason + fmt.Sprintf("; used the low-confidence pattern %s (%.2f)", low.Pattern, low.Confidence)}
		}
		return Decision{Intent: DefaultIntent, Source: SourceFallback, Reason: reason + "; used the default intent " + string(DefaultIntent)}
	}
	if err != nil {
		if ctx.Err() != nil {
			return Decision{}, ctx.Err()
		}
		return fallback(fmt.Sprintf("the model could not classify the request (%v)", err)), nil
	}
	answer, why := modelIntent(resp.Message)
	if _, known := a.byName[Intent(answer)]; known {
		return Decision{Intent: Intent(answer), Confidence: 1, Source: SourceModel,
			Reason: "the model classified the request as " + answer, ModelReason: prompt.TruncateHead(oneLine(why), maxModelReason)}, nil
	}
	shown := answer
	if shown == "" {
		shown = strings.TrimSpace(resp.Message.Text())
	}
	return fallback(fmt.Sprintf("the model answered %q, which is not an intent", prompt.TruncateHead(shown, 80))), nil
}

// maxModelReason bounds the model's reason kept in a Decision.
const maxModelReason = 200

// oneLine returns s with its control characters (newlines, terminal
// escapes) and runs of white space turned into single spaces: the model's
// reason is printed on one line of a terminal.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	}), " ")
}

// modelIntent extracts the intent from the classifier's answer, and the
// reason it gave if any: the arguments of a choose_intent call, the
// "intent" and "reason" of a JSON object in the text, or the text itself
// when it is one word.
func modelIntent(m state.Message) (intent, reason string) {
	type answer struct {
		Intent *string `json:"intent"`
		Reason string  `json:"reason"`
	}
	for _, c := range m.ToolCalls() {
		if c.FunctionCall == nil || c.FunctionCall.Name != chooseIntentTool {
			continue
		}
		var args answer
		if json.Unmarshal([]byte(c.FunctionCall.Arguments), &args) == nil && args.Intent != nil {
			return strings.TrimSpace(*args.Intent), strings.TrimSpace(args.Reason)
		}
	}
	text := strings.TrimSpace(m.Text())
	if v, err := modeljson.Parse[answer](text); err == nil && v.Intent != nil {
		return strings.TrimSpace(*v.Intent), strings.TrimSpace(v.Reason)
	}
	word := strings.ToLower(strings.Trim(text, " \t\n`'\".:"))
	if word != "" && !strings.ContainsAny(word, " \t\n") {
		return word, ""
	}
	return "", ""
}

// generate calls the model from a node and reports the call.
func (a *Agent) generate(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
	all := append(a.cfg.callOpts[:len(a.cfg.callOpts):len(a.cfg.callOpts)], opts...)
	return modelcall.Generate(ctx, a.model, a.cfg.modelName, maxToolResultChars, msgs, all...)
}

// finish ends a request with answer: it sets the answer and the outcome,
// adds the exchange to the session's history (with the request's files,
// s.Files) and reports it.
func (a *Agent) finish(ctx context.Context, out *State, s State, intent Intent, answer, outcome string) {
	a.finishFiles(ctx, out, s, s.Files.Get(), intent, answer, outcome)
}

// finishFiles is finish with the files the request worked on.
func (a *Agent) finishFiles(ctx context.Context, out *State, s State, files []string, intent Intent, answer, outcome string) {
	out.Answer.Set(answer)
	out.Outcome.Set(outcome)
	hist := append(s.History.Get(), Exchange{Question: prompt.TruncateHead(s.Request.Get(), 2000),
		Answer: prompt.TruncateHead(answer, 4000), Intent: intent, Files: files})
	if len(hist) > a.cfg.historyLimit {
		hist = hist[len(hist)-a.cfg.historyLimit:]
	}
	out.History.Set(hist)
	graph.StreamWriter(ctx)(Finished{Intent: intent, Outcome: outcome})
}

// profile is the "profile" node: it saves the preference the request
// states.
func (a *Agent) profile(ctx context.Context, s State) (State, error) {
	var out State
	out.Activity.Set("save preference")
	pref := preferenceText(s.Request.Get())
	p, err := a.mem.AddPreference(ctx, pref)
	if err != nil {
		return State{}, err
	}
	note(ctx, &out, "memory", "saved preference: "+p.Text)
	a.finish(ctx, &out, s, IntentProfile, "Noted. I will remember: "+p.Text, OutcomeRemembered)
	return out, nil
}

var preferenceLead = regexp.MustCompile(`(?i)^\s*(please\s+)?(remember|note|keep in mind)\s*(that\s+|:\s*)?`)

// preferenceText is the preference a profile request states: the request
// without its "remember that" lead, first letter capitalised.
func preferenceText(req string) string {
	t := strings.TrimSpace(preferenceLead.ReplaceAllString(req, ""))
	t = strings.TrimRight(t, " .!")
	if t == "" {
		t = strings.TrimSpace(req)
	}
	if t != "" {
		t = strings.ToUpper(t[:1]) + t[1:]
	}
	return t
}

// refuse ends a request that names paths outside the workspace.
func (a *Agent) refuse(ctx context.Context, out *State, s State, node string, intent Intent, outside []string) {
	msg := fmt.Sprintf("I can't do that: %s %s outside the workspace %s, and I only read and change files inside it.",
		strings.Join(outside, ", "), plural(len(outside), "is", "are"), a.ws.Root())
	setLastError(out, msg)
	note(ctx, out, "refused", msg)
	graph.StreamWriter(ctx)(ToolAction{Tool: "workspace", Target: strings.Join(outside, ", "), OK: false, Result: "outside the workspace"})
	a.finish(ctx, out, s, intent, msg, OutcomeRefused)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// planRead is the "plan_read" node: it picks the files to read.
func (a *Agent) planRead(ctx context.Context, s State) (State, error) {
	var out State
	out.Activity.Set("pick files")
	req := s.Request.Get()
	m := a.mentions(req)
	if len(m.outside) > 0 {
		a.refuse(ctx, &out, s, PlanReadNode, IntentRead, m.outside)
		return out, nil
	}
	files, err := a.chooseFiles(ctx, &out, s, m.existing)
	if err != nil {
		return State{}, err
	}
	out.Files.Set(files)
	return out, nil
}

// chooseFiles returns the files a request works on, at most maxFiles:
// named, the files it names; then those a search for its identifiers
// finds; else the files of the request it refers back to; else — the
// request names no file the agent could find — those the model picks
// from the listing, so that it sees them before answering or editing. It
// fails only when ctx is done; notes go on out.
func (a *Agent) chooseFiles(ctx context.Context, out *State, s State, named []string) ([]string, error) {
	req := s.Request.Get()
	files := named
	if len(files) < a.cfg.maxFiles {
		files = unique(files, a.search(ctx, identifiers(req), a.cfg.maxFiles))
	}
	if len(files) == 0 {
		files = previousFiles(ctx, out, s)
	}
	if len(files) == 0 {
		picked, err := a.pickFiles(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			note(ctx, out, "error", "picking files: "+err.Error())
		}
		files = picked
	}
	return files[:min(len(files), a.cfg.maxFiles)], nil
}

// previousFiles returns, for a request that refers to what came before
// ("and what does it return?"), the files of the latest earlier request
// that worked on files (a request in between, such as a preference, has
// none).
func previousFiles(ctx context.Context, out *State, s State) []string {
	if !followUp.MatchString(s.Request.Get()) {
		return nil
	}
	h := s.History.Get()
	var files []string
	for i := len(h) - 1; i >= 0 && files == nil; i-- {
		files = h[i].Files
	}
	if len(files) == 0 {
		return nil
	}
	note(ctx, out, "memory", "a follow-up: the files of the previous request, "+strings.Join(files, ", "))
	graph.StreamWriter(ctx)(MemoryHit{Memory: MemoryHistory, Detail: "files of the previous request: " + strings.Join(files, ", "), Count: len(files)})
	return files
}

// errEmptyAnswer is the error of a model call that answered nothing.
var errEmptyAnswer = errors.New("the model's answer was empty")

// refersToConversation reports whether a request refers to the
// conversation before it (a follow-up, or a question about what was said),
// so that its answer depends on the session's history.
func refersToConversation(req string) bool {
	return followUp.MatchString(req) || aboutConversation.MatchString(req)
}

// aboutConversation matches requests about the conversation itself.
var aboutConversation = regexp.MustCompile(`(?i)\b(before|earlier|again|previous(ly)?|last time|you said|you told|i asked|i said|we discussed|remind me|so far)\b`)

// followUp matches requests that refer to what came before.
var followUp = regexp.MustCompile(`(?i)^\s*(and|also|then|so)\b|\b(it|its|that|these|those|they|them|the same|above|previous)\b`)

// pickFiles asks the model which files of the listing to read; paths
// outside the workspace or not in it are dropped.
func (a *Agent) pickFiles(ctx context.Context, req string) ([]string, error) {
	list := a.listing()
	if len(list) == 0 {
		return nil, nil
	}
	msgs := []state.Message{
		state.System(prompt.TruncateHead(prompt.Render(a.cfg.prompts.PickFiles, "listing", strings.Join(list, "\n")), a.cfg.maxPromptChars/2)),
		state.Human(prompt.TruncateHead(req, a.cfg.maxPromptChars/2)),
	}
	resp, err := a.generate(ctx, msgs)
	if err != nil {
		return nil, err
	}
	paths, err := modeljson.Parse[[]string](resp.Message.Text())
	if err != nil {
		return nil, fmt.Errorf("the model's choice of files: %w", err)
	}
	var out []string
	for _, p := range paths {
		p = strings.TrimPrefix(strings.TrimSpace(p), "./")
		if slices.Contains(list, p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// callTool runs one of the agent's tools and reports the action.
func (a *Agent) callTool(ctx context.Context, t interface {
	Name() string
	Call(ctx context.Context, args json.RawMessage) (string, error)
}, target string, args any) (string, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return "", err
	}
	res, err := t.Call(ctx, raw)
	ev := ToolAction{Tool: t.Name(), Target: target, OK: err == nil, Result: truncateMiddle(res, maxToolResultChars)}
	if err != nil {
		ev.Result = truncateMiddle(err.Error(), maxToolResultChars)
	}
	graph.StreamWriter(ctx)(ev)
	return res, err
}

// readFiles loads files, from the session's cache when a file's size and
// time are those cached, else with the file_read tool (caching it in out).
// It returns the contents by path; files that cannot be read are left out,
// reported in feedback and returned in failed, with why.
func (a *Agent) readFiles(ctx context.Context, s State, out *State, node string, files []string, useCache bool) (got map[string]CachedFile, failed map[string]string) {
	got, failed = map[string]CachedFile{}, map[string]string{}
	cache := s.FileCache.Get()
	order := 0
	for _, c := range cache {
		order = max(order, c.Order)
	}
	var added []string
	for _, f := range files {
		setCurrentFile(out, f)
		stat, statErr := a.fileStat(f)
		if c, ok := cache[f]; useCache && ok && statErr == nil && stat != "" && c.Stat == stat {
			got[f] = c
			graph.StreamWriter(ctx)(MemoryHit{Memory: MemoryFileCache, Detail: f, Count: 1})
			continue
		}
		// From line 1: a file over file_read's 200 KB limit gives its
		// beginning (and a note that it goes on) instead of an error.
		content, err := a.callTool(ctx, a.fileRead, f, map[string]any{"path": f, "start_line": 1})
		if err != nil {
			if ctx.Err() != nil {
				return got, failed
			}
			failed[f] = err.Error()
			setLastError(out, err.Error())
			note(ctx, out, "tool", "file_read "+f+": "+err.Error())
			continue
		}
		hash := hashText(content)
		if whole, err := a.largeFileHash(f); err == nil && whole != "" {
			hash = whole // Content is only the beginning of the file
		}
		order++
		c := CachedFile{Content: content, Hash: hash, Stat: stat, Order: order}
		got[f] = c
		out.FileCache.Put(f, c)
		added = append(added, f)
	}
	// Evict the oldest entries beyond the cache's size.
	if n := len(cache) + len(added) - a.cfg.fileCacheSize; n > 0 {
		type entry struct {
			path  string
			order int
		}
		var all []entry
		for p, c := range cache {
			if !slices.Contains(added, p) {
				all = append(all, entry{p, c.Order})
			}
		}
		sort.Slice(all, func(i, j int) bool { return all[i].order < all[j].order })
		for _, e := range all[:min(n, len(all))] {
			out.FileCache.Delete(e.path)
		}
	}
	read := s.FilesRead.Get()
	var newly []string
	for _, f := range files {
		if _, ok := got[f]; ok && !slices.Contains(read, f) {
			newly = append(newly, f)
		}
	}
	if len(newly) > 0 {
		all := append(read, newly...)
		out.FilesRead.Set(all[max(len(all)-maxFilesRead, 0):])
	}
	return got, failed
}

// filesSection renders files for a prompt within budget characters,
// giving each file an equal share of what the shorter ones leave and
// keeping the beginning of each.
func filesSection(files []string, contents map[string]CachedFile, budget int) string {
	type part struct {
		path, text string
	}
	var parts []part
	for _, f := range files {
		if c, ok := contents[f]; ok {
			parts = append(parts, part{f, c.Content})
		}
	}
	if len(parts) == 0 {
		return "(no files)"
	}
	header := func(p string) string { return "--- " + p + "\n" }
	idx := make([]int, len(parts))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return len(parts[idx[i]].text) < len(parts[idx[j]].text) })
	left := budget
	shown := make([]string, len(parts))
	for k, i := range idx {
		share := left / (len(parts) - k)
		body := prompt.TruncateHead(parts[i].text, max(share-len(header(parts[i].path)), 0))
		if share-len(header(parts[i].path)) <= 0 {
			body = "[omitted: the prompt is full]\n"
		}
		shown[i] = header(parts[i].path) + body
		left -= len(shown[i])
	}
	return strings.Join(shown, "\n")
}

// preferencesSection recalls the preferences relevant to request and
// reports them.
func (a *Agent) preferencesSection(ctx context.Context, out *State, node, request string) (section string, texts []string) {
	prefs, err := a.mem.RecallPreferences(ctx, request, a.cfg.recall)
	if err != nil {
		note(ctx, out, "memory", err.Error())
		return "(none)", nil
	}
	if len(prefs) == 0 {
		return "(none)", nil
	}
	texts = make([]string, len(prefs))
	for i, p := range prefs {
		texts[i] = p.Text
	}
	graph.StreamWriter(ctx)(MemoryHit{Memory: MemoryPreferences, Detail: strings.Join(texts, "; "), Count: len(prefs)})
	return "- " + strings.Join(texts, "\n- "), texts
}

// read is the "read" node: it loads the files and answers the question.
func (a *Agent) read(ctx context.Context, s State) (State, error) {
	var out State
	out.Activity.Set("load files")
	req := s.Request.Get()
	files := s.Files.Get()
	contents, failed := a.readFiles(ctx, s, &out, ReadNode, files, true)
	if err := ctx.Err(); err != nil {
		return State{}, err
	}
	if len(files) > 0 && len(contents) == 0 {
		// Not one of the files the question is about could be read: say
		// so rather than let the model answer without them.
		var b strings.Builder
		b.WriteString("I could not read the files this question is about, so I cannot answer it:")
		for _, f := range files {
			fmt.Fprintf(&b, "\n- %s: %s", f, failed[f])
		}
		a.finishFiles(ctx, &out, s, nil, IntentRead, b.String(), OutcomeError)
		return out, nil
	}
	hashes := map[string]string{}
	var readFiles []string
	for _, f := range files {
		if c, ok := contents[f]; ok {
			hashes[f] = c.Hash
			readFiles = append(readFiles, f)
		}
	}
	prefs, prefTexts := a.preferencesSection(ctx, &out, ReadNode, req)
	key := QueryKey(req, hashes, prefTexts...)
	// An answer to a request that refers to the conversation depends on
	// the session's history, which the key does not hold: it is neither
	// served from the cache nor cached, so that it never reaches another
	// session.
	cacheable := len(readFiles) > 0 && !refersToConversation(req)
	if cacheable {
		out.Activity.Set("query cache")
		hit, err := a.mem.LookupAnswer(ctx, key)
		if err != nil {
			note(ctx, &out, "memory", err.Error())
		}
		if hit != nil {
			graph.StreamWriter(ctx)(MemoryHit{Memory: MemoryQueryCache, Detail: strings.Join(readFiles, ", "), Count: 1})
			a.mem.LogMemory(ctx, "cache_hit", req)
			out.Cached.Set(true)
			a.finishFiles(ctx, &out, s, readFiles, IntentRead, hit.Answer, OutcomeAnswered)
			return out, nil
		}
	}

	out.Activity.Set("answer")
	history := "(none)"
	if h := s.History.Get(); len(h) > 0 {
		var b strings.Builder
		for _, e := range h {
			fmt.Fprintf(&b, "Q: %s\nA: %s\n", e.Question, prompt.TruncateHead(e.Answer, 1000))
		}
		history = b.String()
		graph.StreamWriter(ctx)(MemoryHit{Memory: MemoryHistory, Count: len(h)})
	}
	question := prompt.TruncateHead(req, a.cfg.maxPromptChars/4)
	base := prompt.Render(a.cfg.prompts.Read, "preferences", prefs, "history", history, "files", "")
	budget := a.cfg.maxPromptChars - len([]rune(base)) - len([]rune(question))
	system := prompt.Render(a.cfg.prompts.Read, "preferences", prefs, "history", history,
		"files", filesSection(readFiles, contents, max(budget, 0)))
	system = prompt.TruncateHead(system, a.cfg.maxPromptChars-len([]rune(question)))
	resp, err := a.generate(ctx, []state.Message{state.System(system), state.Human(question)})
	if err != nil {
		return State{}, err
	}
	answer := strings.TrimSpace(resp.Message.Text())
	if answer == "" {
		// Not an answer: HandleErrors runs the node again, then tells the
		// user (it is never cached).
		return State{}, errEmptyAnswer
	}
	if cacheable {
		if err := a.mem.CacheAnswer(ctx, key, req, answer, readFiles); err != nil {
			note(ctx, &out, "memory", err.Error())
		}
	}
	a.finishFiles(ctx, &out, s, readFiles, IntentRead, answer, OutcomeAnswered)
	return out, nil
}

// custom returns the node of a custom intent.
func (a *Agent) custom(d IntentDef) graph.NodeFunc[State] {
	return func(ctx context.Context, s State) (State, error) {
		answer, err := d.Run(ctx, s)
		if err != nil {
			return State{}, err
		}
		var out State
		a.finish(ctx, &out, s, d.Intent, answer, OutcomeAnswered)
		return out, nil
	}
}

// Commands of run_command.
var (
	backtickCmd = regexp.MustCompile("`([^`]+)`")
	promptCmd   = regexp.MustCompile(`^\s*\$\s*(.+)$`)
	runLead     = regexp.MustCompile(`(?i)^\s*(please\s+)?(can you\s+|could you\s+)?(run|execute|exec|launch|start)\s+(the\s+command\s+)?`)
	testsReq    = regexp.MustCompile(`(?i)^\s*(please\s+)?(run|execute)?\s*(the\s+|all\s+(the\s+)?)?(unit\s+)?tests?(\s+suite)?\s*(please)?[.!]?\s*$|^\s*(please\s+)?test\s+(it|the project|the code|everything|all)\s*[.!]?\s*$`)
	cmdStartRe  = regexp.MustCompile(`^(\./|/|` + commandWords + `)\b`)
)

// commandOf returns the shell command a request spells out, or "".
func commandOf(req string) string {
	if m := backtickCmd.FindStringSubmatch(req); m != nil {
		return strings.TrimSpace(m[1])
	}
	if m := promptCmd.FindStringSubmatch(req); m != nil {
		return strings.TrimSpace(m[1])
	}
	cmd := strings.TrimSpace(runLead.ReplaceAllString(req, ""))
	if cmd == "" {
		return ""
	}
	first := strings.Fields(cmd)[0]
	if cmdStartRe.MatchString(cmd) || strings.ContainsAny(first, "./") {
		return cmd
	}
	if _, err := exec.LookPath(first); err == nil {
		return cmd
	}
	return ""
}

// runCommand is the "run_command" node.
func (a *Agent) runCommand(ctx context.Context, s State) (State, error) {
	var out State
	req := s.Request.Get()
	if testsReq.MatchString(req) {
		out.Activity.Set("run tests")
		res, ok, err := a.runTests(ctx, s, 0, nil) // a plain run: no baseline to hold it to
		if err != nil {
			return State{}, err
		}
		if ok {
			out.Tests.Set(&res)
			outcome := OutcomeCommand
			if res.TimedOut {
				outcome = OutcomeTimedOut
			}
			a.finish(ctx, &out, s, IntentRunCommand, testSummary(res), outcome)
			return out, nil
		}
	}
	out.Activity.Set("command")
	cmd := commandOf(req)
	if cmd == "" {
		var err error
		cmd, err = a.commandFromModel(ctx, req)
		if err != nil {
			return State{}, err
		}
	}
	if cmd == "" {
		a.finish(ctx, &out, s, IntentRunCommand, "I could not tell which command to run; spell it out, e.g. run `go test ./...`.", OutcomeAnswered)
		return out, nil
	}
	out.Activity.Set("run")
	res, err := a.callTool(ctx, a.bash, cmd, map[string]any{"command": cmd})
	if err != nil {
		if ctx.Err() != nil {
			return State{}, ctx.Err()
		}
		setLastError(&out, err.Error())
		note(ctx, &out, "tool", cmd+": "+err.Error())
		a.finish(ctx, &out, s, IntentRunCommand, fmt.Sprintf("$ %s\nThe command was not run: %v", cmd, err), OutcomeCommand)
		return out, nil
	}
	note(ctx, &out, "tool", cmd+": "+firstLine(res))
	outcome := OutcomeCommand
	if bashTimedOut.MatchString(res) {
		outcome = OutcomeTimedOut
	}
	a.finish(ctx, &out, s, IntentRunCommand, "$ "+cmd+"\n"+res, outcome)
	return out, nil
}

// bashTimedOut matches the first line of the result of bash_exec for a
// command killed at its time limit.
var bashTimedOut = regexp.MustCompile(`\Aexit code: -?\d+ \(timed out after `)

// commandFromModel asks the model for the command of a request.
func (a *Agent) commandFromModel(ctx context.Context, req string) (string, error) {
	resp, err := a.generate(ctx, []state.Message{
		state.System(a.cfg.prompts.Command),
		state.Human(prompt.TruncateHead(req, a.cfg.maxPromptChars/2)),
	})
	if err != nil {
		return "", err
	}
	v, err := modeljson.Parse[struct {
		Command string `json:"command"`
	}](resp.Message.Text())
	if err != nil {
		return "", nil
	}
	return strings.TrimSpace(v.Command), nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
