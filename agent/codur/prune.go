package codur

import (
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
)

// VerificationHeader starts the text of every verification failure message
// the review appends (see [PruningPolicy]).
const VerificationHeader = "Verification failed"

// PruningPolicy says which messages of the conversation survive the
// pruning the review does before another iteration. The task (the first
// human message) is always kept; the zero value of a field takes its
// default (see [DefaultPruning]); a negative value keeps none of that kind.
//
// The original Codur kept only the last 4 verification errors and dropped
// the agents' own answers, which made agents repeat failed attempts; the
// defaults keep 8 errors and the last 3 answers, and the last 4 messages
// whatever they are.
type PruningPolicy struct {
	// KeepErrors is how many of the latest verification failures to keep.
	KeepErrors int `yaml:"keep_errors" json:"keep_errors"`
	// KeepAttempts is how many of the latest AI messages (the agents'
	// attempts) to keep.
	KeepAttempts int `yaml:"keep_attempts" json:"keep_attempts"`
	// KeepRecent is how many of the latest messages to keep whatever their
	// kind (tool results of the last attempt, say).
	KeepRecent int `yaml:"keep_recent" json:"keep_recent"`
}

// DefaultPruning returns the default policy: 8 errors, 3 attempts, the 4
// latest messages.
func DefaultPruning() PruningPolicy {
	return PruningPolicy{KeepErrors: 8, KeepAttempts: 3, KeepRecent: 4}
}

func (p PruningPolicy) withDefaults() PruningPolicy {
	d := DefaultPruning()
	if p.KeepErrors == 0 {
		p.KeepErrors = d.KeepErrors
	}
	if p.KeepAttempts == 0 {
		p.KeepAttempts = d.KeepAttempts
	}
	if p.KeepRecent == 0 {
		p.KeepRecent = d.KeepRecent
	}
	return p
}

// Prune returns the messages of msgs the policy keeps, in their order.
func (p PruningPolicy) Prune(msgs []state.Message) []state.Message {
	p = p.withDefaults()
	keep := make([]bool, len(msgs))
	task := -1
	for i, m := range msgs {
		if m.Role == llms.ChatMessageTypeHuman {
			task = i
			break
		}
	}
	if task >= 0 {
		keep[task] = true
	}
	errs, attempts := p.KeepErrors, p.KeepAttempts
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		switch {
		case len(msgs)-i <= p.KeepRecent:
			keep[i] = true
		case m.Role == llms.ChatMessageTypeHuman && strings.HasPrefix(m.Text(), VerificationHeader):
			if errs > 0 {
				keep[i] = true
			}
		case m.Role == llms.ChatMessageTypeAI && len(m.ToolCalls()) == 0:
			if attempts > 0 {
				keep[i] = true
			}
		}
		// Count the kinds whether the message was kept as recent or not.
		if i != task {
			switch {
			case m.Role == llms.ChatMessageTypeHuman && strings.HasPrefix(m.Text(), VerificationHeader):
				errs--
			case m.Role == llms.ChatMessageTypeAI && len(m.ToolCalls()) == 0:
				attempts--
			}
		}
	}
	out := make([]state.Message, 0, len(msgs))
	for i, m := range msgs {
		if keep[i] {
			out = append(out, m)
		}
	}
	return out
}
