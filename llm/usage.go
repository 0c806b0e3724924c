package llm

import (
	"context"
	"maps"
	"sync"
)

// Usage counts the tokens of one or more model calls.
type Usage struct {
	// PromptTokens are the input tokens, cached ones included (for
	// Anthropic: input + cache-creation + cache-read tokens).
	PromptTokens int `json:"prompt_tokens"`
	// CompletionTokens are the output tokens, reasoning tokens included.
	CompletionTokens int `json:"completion_tokens"`
	// TotalTokens is what the provider reported as total, or the sum of
	// the two above when it reported none.
	TotalTokens int `json:"total_tokens"`
}

// Add returns u + v, field by field.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		TotalTokens:      u.TotalTokens + v.TotalTokens,
	}
}

// IsZero reports whether u counts no tokens.
func (u Usage) IsZero() bool { return u == Usage{} }

// UsageTotals is what a [Meter] has accumulated.
type UsageTotals struct {
	// Calls is the number of successful Generate calls recorded.
	Calls int `json:"calls"`
	// Usage is the sum of their usage.
	Usage Usage `json:"usage"`
}

// Meter accumulates token usage across calls, for example over one graph
// run. Attach it to a model with [WithMeter] or to a context with
// [ContextWithMeter]; a call is recorded once per distinct meter even if
// the same meter is attached both ways.
//
// A zero Meter is ready to use. A Meter is safe for concurrent use.
type Meter struct {
	mu      sync.Mutex
	total   UsageTotals
	byModel map[string]UsageTotals
}

// Record adds one call's usage under the given model name.
func (m *Meter) Record(model string, u Usage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.total.Calls++
	m.total.Usage = m.total.Usage.Add(u)
	if m.byModel == nil {
		m.byModel = make(map[string]UsageTotals)
	}
	t := m.byModel[model]
	t.Calls++
	t.Usage = t.Usage.Add(u)
	m.byModel[model] = t
}

// Totals returns the totals over all models.
func (m *Meter) Totals() UsageTotals {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total
}

// ByModel returns the totals per model name (a copy).
func (m *Meter) ByModel() map[string]UsageTotals {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.byModel)
}

// Reset clears the meter.
func (m *Meter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.total = UsageTotals{}
	m.byModel = nil
}

type meterKey struct{}

// ContextWithMeter returns a context that makes every [Model] of this
// package (the adapter and [Scripted]) record the usage of calls made with
// it into m, in addition to any meter attached with [WithMeter]. Nested
// calls accumulate meters: a meter attached by an outer caller keeps
// counting.
func ContextWithMeter(ctx context.Context, m *Meter) context.Context {
	if m == nil {
		return ctx
	}
	prev := metersFromContext(ctx)
	for _, p := range prev {
		if p == m {
			return ctx
		}
	}
	all := make([]*Meter, 0, len(prev)+1)
	all = append(all, prev...)
	all = append(all, m)
	return context.WithValue(ctx, meterKey{}, all)
}

// MetersFromContext returns the meters attached to ctx with
// [ContextWithMeter], outermost first. Model implementations outside this
// package use it to account their usage.
func MetersFromContext(ctx context.Context) []*Meter {
	return append([]*Meter(nil), metersFromContext(ctx)...)
}

func metersFromContext(ctx context.Context) []*Meter {
	ms, _ := ctx.Value(meterKey{}).([]*Meter)
	return ms
}

// recordUsage records u under name into own (if non-nil) and every meter
// on ctx, each distinct meter once.
func recordUsage(ctx context.Context, own *Meter, name string, u Usage) {
	if own != nil {
		own.Record(name, u)
	}
	for _, m := range metersFromContext(ctx) {
		if m != own {
			m.Record(name, u)
		}
	}
}
