package coder

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Prompts are the texts the agent sends to the model. Each is a template
// whose placeholders, in braces, are replaced before the call; unknown
// placeholders are left as they are. [DefaultPrompts] returns the agent's
// own; replace any of them with [WithPrompts] (empty fields keep the
// default).
type Prompts struct {
	// Classify is the system message of the model classifier, which must
	// call the choose_intent tool (or answer {"intent": "…"}).
	// Placeholders: {intents} (one line per intent: name: description).
	Classify string
	// PickFiles is the system message that asks the model which files to
	// read for a question or an edit when the request names none the
	// agent could find; it must answer with a JSON array of paths.
	// Placeholders: {listing}.
	PickFiles string
	// Read is the system message of the read node, which answers a
	// question from the files. Placeholders: {preferences}, {history},
	// {files}.
	Read string
	// Edit is the system message of the edit node, which must call
	// file_patch or file_write (or answer with the JSON of [EditPlan]).
	// Placeholders: {preferences}, {files}, {listing}, {attempts}, {hint}.
	Edit string
	// DifferentApproach is {hint} of the Edit prompt after repeated
	// failed attempts. Placeholders: {failed}.
	DifferentApproach string
	// Command is the system message that turns a run_command request
	// into a shell command when the request does not spell one out; the
	// model must answer {"command": "…"}.
	Command string
}

// DefaultPrompts returns the agent's default prompts.
func DefaultPrompts() Prompts {
	return Prompts{
		Classify: `You route requests for a coding assistant working in a software project. Classify the user's request into exactly one of these intents:

{intents}

Call the choose_intent tool with the intent and, in a few words, why. If you cannot call tools, answer with a JSON object and nothing else: {"intent": "<one of the intents>", "reason": "<why>"}.`,
		PickFiles: `You help a coding assistant decide which files of a project to read for a request: to answer a question, or to make a change. These are the project's files:

{listing}

Answer with a JSON array of at most 5 paths from this list, the most relevant first, and nothing else. Answer [] if no file is relevant.`,
		Read: `You are a coding assistant answering questions about a software project. Answer from the files below; cite file paths and line numbers. If the files do not contain the answer, say so.

User preferences:
{preferences}

Earlier in this conversation:
{history}

Files:
{files}`,
		Edit: `You are a coding assistant that edits a software project. Make the change the user asks for with the tools:
- file_patch replaces old_text (copied exactly from the file, whitespace included; it must occur exactly once) with new_text;
- file_write replaces a whole file or creates one.
Paths are relative to the project root. Make all the edits needed in one answer, then say in one sentence what you changed. If you cannot call tools, answer with a JSON object and nothing else:
{"edits": [{"path": "...", "old_text": "...", "new_text": "..."} or {"path": "...", "content": "..."}], "summary": "..."}

User preferences:
{preferences}

Project files:
{listing}

Current contents of the relevant files:
{files}
{attempts}{hint}`,
		DifferentApproach: `The previous {failed} attempts failed. Do not repeat them: step back, re-read the failure and the code, and try a different approach.`,
		Command:           `You turn a user's request into one shell command to run with bash in the project's root directory. Answer with a JSON object and nothing else: {"command": "..."}. Answer {"command": ""} if the request asks for no command.`,
	}
}

// withDefaults returns p with its empty fields set to the defaults.
func (p Prompts) withDefaults() Prompts {
	d := DefaultPrompts()
	for _, f := range []struct {
		dst *string
		def string
	}{
		{&p.Classify, d.Classify},
		{&p.PickFiles, d.PickFiles},
		{&p.Read, d.Read},
		{&p.Edit, d.Edit},
		{&p.DifferentApproach, d.DifferentApproach},
		{&p.Command, d.Command},
	} {
		if strings.TrimSpace(*f.dst) == "" {
			*f.dst = f.def
		}
	}
	return p
}

// truncateMiddle keeps the head and the tail of s (n runes in all).
func truncateMiddle(s string, n int) string {
	total := utf8.RuneCountInString(s)
	if n <= 0 || total <= n {
		return s
	}
	keep := n
	var marker string
	for range 3 {
		marker = fmt.Sprintf("\n… [%d characters truncated] …\n", total-keep)
		keep = n - utf8.RuneCountInString(marker)
	}
	r := []rune(s)
	if keep < 2 {
		return string(r[:n])
	}
	head := keep / 2
	return string(r[:head]) + marker + string(r[total-(keep-head):])
}
