package coder

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

// Intent names what a request asks for; each intent has a node of the
// graph it is routed to.
type Intent string

// The built-in intents.
const (
	// IntentRead answers a question about the code: plan_read picks the
	// files, read loads them and asks the model.
	IntentRead Intent = "read"
	// IntentEdit changes files, then runs the auto-fix loop.
	IntentEdit Intent = "edit"
	// IntentRunCommand runs a shell command in the workspace.
	IntentRunCommand Intent = "run_command"
	// IntentProfile saves a preference of the user's.
	IntentProfile Intent = "profile"
)

// DefaultIntent is where a request goes when neither a pattern nor the
// model names a registered intent.
const DefaultIntent = IntentRead

// Sources of a [Decision].
const (
	// SourcePattern: a pattern matched with enough confidence.
	SourcePattern = "pattern"
	// SourceModel: the model named a registered intent.
	SourceModel = "model"
	// SourceFallback: neither did; the decision is the fallback.
	SourceFallback = "fallback"
)

// Decision is the route node's choice and why it was made.
type Decision struct {
	// Intent is the intent chosen.
	Intent Intent `json:"intent"`
	// Confidence is the matching pattern's confidence, 1 for the model's
	// answer, 0 for a fallback.
	Confidence float64 `json:"confidence"`
	// Source is SourcePattern, SourceModel or SourceFallback.
	Source string `json:"source"`
	// Pattern names the pattern that matched (SourcePattern), or the
	// low-confidence one a fallback used.
	Pattern string `json:"pattern,omitempty"`
	// Reason explains the decision in a sentence, e.g. why a model answer
	// was not used.
	Reason string `json:"reason,omitempty"`
	// ModelReason is the reason the model gave with its choice
	// (SourceModel), if any.
	ModelReason string `json:"model_reason,omitempty"`
}

// Why returns a short explanation for display: "pattern run-command
// (0.90)", "model" (with the model's reason when it gave one: "model:
// the user asks to change a file"), or "fallback: …".
func (d Decision) Why() string {
	switch d.Source {
	case SourcePattern:
		return fmt.Sprintf("pattern %s (%.2f)", d.Pattern, d.Confidence)
	case SourceModel:
		if d.ModelReason != "" {
			return "model: " + d.ModelReason
		}
		return "model"
	}
	return "fallback: " + d.Reason
}

// Pattern is a fast-path routing rule: a request matching Regexp has the
// intent Intent with confidence Confidence (0 to 1).
type Pattern struct {
	// Name identifies the pattern in decisions and events.
	Name string
	// Intent is the intent it votes for.
	Intent Intent
	// Regexp is matched against the request, trimmed and lower-cased.
	Regexp *regexp.Regexp
	// Confidence is how sure a match is.
	Confidence float64
}

// NewPattern returns a pattern for intent that matches the regular
// expression expr; it panics if expr does not compile (like
// regexp.MustCompile, for tables of patterns).
func NewPattern(name string, intent Intent, expr string, confidence float64) Pattern {
	return Pattern{Name: name, Intent: intent, Regexp: regexp.MustCompile(expr), Confidence: confidence}
}

// DefaultMinConfidence is the confidence a pattern needs to decide alone.
const DefaultMinConfidence = 0.7

// command words of requests that are shell commands typed as they are.
const commandWords = `go|npm|npx|yarn|pnpm|make|pytest|python3?|pip3?|cargo|rustc|git|ls|cat|grep|rg|find|echo|pwd|node|bun|deno|docker|kubectl|bash|sh|tree|wc|head|tail|du|df`

// DefaultPatterns returns the built-in fast-path patterns, for the
// built-in intents. Requests are lower-cased and trimmed before matching.
func DefaultPatterns() []Pattern {
	return []Pattern{
		// profile
		NewPattern("remember-preference", IntentProfile, `^(please\s+)?(remember|note|keep in mind)\b.*\b(i|we)\s+(prefer|like|want|use|always|never|hate|dislike)\b`, 0.95),
		NewPattern("remember-that", IntentProfile, `^(please\s+)?(remember|note|keep in mind)\s+(that\s+)?(i|we|my|our)\b`, 0.9),
		NewPattern("i-prefer", IntentProfile, `^(i|we)\s+(prefer|like|always want|always use|never use|want you to always|would like you to always)\b`, 0.85),
		NewPattern("my-preference", IntentProfile, `^(my|our)\s+(preference|preferred|style|convention)s?\b`, 0.85),
		NewPattern("from-now-on", IntentProfile, `^(from now on|going forward|in (the )?future)\b`, 0.85),
		NewPattern("always-never", IntentProfile, `^(always|never)\s+(use|add|write|include|put|prefer|format|indent)\b`, 0.8),

		// run_command
		NewPattern("run-command", IntentRunCommand, `^(please\s+)?(can you\s+)?(run|execute|exec|launch|start)\s+\S`, 0.9),
		NewPattern("shell-prompt", IntentRunCommand, "^\\$\\s*\\S", 0.95),
		NewPattern("backticked-command", IntentRunCommand, "^(please\\s+)?(run|execute)?\\s*`[^`]+`\\s*$", 0.95),
		NewPattern("command-line", IntentRunCommand, `^(git|ls|pytest|npm|npx|yarn|pnpm|cargo|pip3?|python3?|node|bun|deno|docker|kubectl|rg|grep|pwd|wc|du|df|rustc|tsc|eslint|ruff|mypy)(\s+\S+)*$`, 0.85),
		NewPattern("go-command", IntentRunCommand, `^go\s+(build|test|run|vet|mod|get|install|fmt|generate|version|env|list|doc|work|tool|clean)\b`, 0.9),
		NewPattern("make-target", IntentRunCommand, `^make(\s+[\w.-]+)?$`, 0.9),
		NewPattern("file-command", IntentRunCommand, `^(find|cat|head|tail|echo|tree|ls|wc)\s+\S*[-./*"'=]`, 0.85),
		NewPattern("build-test", IntentRunCommand, `^(please\s+)?(build|compile|test|lint|install)\s+(it|the project|the code|everything|the tests|all|the package|the module)\b`, 0.8),

		// edit
		NewPattern("fix", IntentEdit, `^(please\s+)?(can you\s+|could you\s+)?(fix|repair|correct|patch|debug)\b`, 0.9),
		NewPattern("change-verb", IntentEdit, `^(please\s+)?(can you\s+|could you\s+)?(add|implement|refactor|rename|change|update|modify|remove|delete|replace|rewrite|create|write|make|move|extract|convert|optimi[sz]e|improve|clean up|simplify|insert|append|introduce|generate)\b`, 0.85),
		NewPattern("fix-it", IntentEdit, `\b(fix|repair|correct)\s+(it|this|that|them)\b`, 0.8),
		NewPattern("fix-anywhere", IntentEdit, `\b(fix|refactor|implement|rename)\b`, 0.65),
		// A compound request whose later clause asks for a change ("why
		// does it fail? fix it", "run the tests and fix any failures") is
		// an edit, whatever its first words.
		NewPattern("edit-clause", IntentEdit, `([?.!;,]\s*|\b(and|then)\s+)(please\s+)?(fix|repair|correct|rename|refactor|implement|add|change|update|modify|remove|delete|replace|rewrite)\s+(it|this|that|them|one|the|a|an|any|all|every|its|their)\b`, 0.93),

		// read
		NewPattern("what-does", IntentRead, `^((and|also|so|then)\s+)?(what|how)\s+(does|do|did|is|are|was|were)\b`, 0.9),
		NewPattern("question-word", IntentRead, `^((and|also|so|then)\s+)?(what|how|why|where|which|who|when|whats|what's|is there|are there)\b`, 0.85),
		NewPattern("explain", IntentRead, `^(please\s+)?(can you\s+|could you\s+)?(explain|describe|summari[sz]e|show|tell me|find|list|locate|walk me through|review|read|look at|give me an overview|document)\b`, 0.85),
		NewPattern("yes-no-question", IntentRead, `^(does|do|is|are|can|could|should|will|would|has|have)\b.*\?$`, 0.75),
		NewPattern("question-mark", IntentRead, `\?$`, 0.6),
		// Words the run_command and profile patterns would take.
		NewPattern("read-first", IntentRead, `^(please\s+)?((start|begin)\s+(by\s+)?(reading|looking at|explaining|going through)|run\s+(me\s+)?through)\b`, 0.92),
		NewPattern("wish-to-know", IntentRead, `^(i|we)\s+(would\s+|'d\s+)?(like|want|need)\s+to\s+(understand|know|see|learn|find out|read)\b`, 0.9),
	}
}

// MatchPatterns returns the decision of the best-matching pattern (the
// highest confidence, the first in order among equals) and true, or false
// when none matches. The decision may be below the minimum confidence.
func MatchPatterns(request string, patterns []Pattern) (Decision, bool) {
	text := normalizeRequest(request)
	var best *Pattern
	for i := range patterns {
		p := &patterns[i]
		if p.Regexp == nil || !p.Regexp.MatchString(text) {
			continue
		}
		if best == nil || p.Confidence > best.Confidence {
			best = p
		}
	}
	if best == nil {
		return Decision{}, false
	}
	return Decision{Intent: best.Intent, Confidence: best.Confidence, Source: SourcePattern, Pattern: best.Name,
		Reason: fmt.Sprintf("the request matches the pattern %s", best.Name)}, true
}

// normalizeRequest trims and lower-cases a request and folds its runs of
// space into one.
func normalizeRequest(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// IntentDef registers an intent: its route entry (the intent, the node it
// goes to and its description for the model classifier), its node and its
// patterns. See [WithIntent].
type IntentDef struct {
	// Intent names it; it is also the name of its node. It must not be
	// one of the graph's node names.
	Intent Intent
	// Description tells the model classifier what requests it is for.
	Description string
	// Patterns are its fast-path patterns (their Intent is set to
	// Intent).
	Patterns []Pattern
	// Run is the node: it returns the answer to the user. The node goes
	// to END. Built-in intents have no Run (their nodes are the agent's
	// own).
	Run func(ctx context.Context, s State) (string, error)
}

// Builtins returns the route entries of the built-in intents, with their
// patterns.
func Builtins() []IntentDef {
	byIntent := map[Intent][]Pattern{}
	for _, p := range DefaultPatterns() {
		byIntent[p.Intent] = append(byIntent[p.Intent], p)
	}
	return []IntentDef{
		{Intent: IntentRead, Patterns: byIntent[IntentRead],
			Description: "a question about the code: what something does, how it works, where it is; answered by reading files"},
		{Intent: IntentEdit, Patterns: byIntent[IntentEdit],
			Description: "a change to the code: fix a bug, add or refactor something, write or delete a file"},
		{Intent: IntentRunCommand, Patterns: byIntent[IntentRunCommand],
			Description: "run a shell command or program in the workspace (build, run tests, list files, git …)"},
		{Intent: IntentProfile, Patterns: byIntent[IntentProfile],
			Description: "the user states a preference or convention to remember for later requests"},
	}
}
