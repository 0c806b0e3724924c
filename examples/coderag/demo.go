package main

import (
	"embed"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/examples/internal/samplefs"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

// sampleFiles is the bundled sample project, a tiny Go module (its go.mod
// is stored as go.mod.sample, so that the go command does not take the
// folder for a module of its own in this repository).
//
//go:embed all:testdata/sample
var sampleFiles embed.FS

// sampleRoot is the folder of the sample in sampleFiles.
const sampleRoot = "testdata/sample"

// demoQuestion is the question the scripted model answers.
const demoQuestion = "How does checkout apply a coupon discount?"

// copySample writes the sample project into dir.
func copySample(dir string) error { return samplefs.Copy(sampleFiles, sampleRoot, dir) }

// demoModel returns the scripted model of the offline demo: the replies of
// the planner, the executor's three model calls, the refinery and the
// synthesizer, for demoQuestion on the sample. The executor's tool calls
// run for real; before its later replies the script checks that the real
// tool results hold what its canned text says, so that the demo fails
// rather than tells something the tools did not find.
func demoModel() *llm.Scripted {
	return llm.NewScripted(
		llm.Reply{Text: `["Find the code that applies the coupon discount at checkout, read it, and find who calls it"]`},
		llm.Reply{
			Text:      "I'll search the index for the checkout and the coupon discount.",
			ToolCalls: []llms.ToolCall{state.ToolCall("call_1", "search_codebase", `{"query":"checkout coupon discount","limit":5}`)},
		},
		llm.Reply{
			Text: "The search points at pricing/pricing.go; I'll read it and ask the call graph who calls pricing.Discount.",
			ToolCalls: []llms.ToolCall{
				state.ToolCall("call_2", "read_file", `{"path":"pricing/pricing.go"}`),
				state.ToolCall("call_3", "get_callers", `{"name":"pricing.Discount"}`),
			},
			Expect: toolResultsHold("pricing/pricing.go", "pricing.Discount"),
		},
		llm.Reply{
			Text: "pricing.Discount (pricing/pricing.go) maps the coupon code to a discount in cents: BOOKWORM10 takes 10 % off, " +
				"STUDENT takes 500 cents off orders of 2000 or more, no coupon gives nothing, any other code is ErrUnknownCoupon. " +
				"Its one caller, cart.Checkout in cart/cart.go, subtracts it from the subtotal and adds shipping on the rest.",
			Expect: toolResultsHold("func Discount(coupon string, subtotalCents int)", `"BOOKWORM10"`, "in cart.Checkout: calls pricing.Discount"),
		},
		llm.Reply{Text: `{"decision": "FINISH", "reason": "the discount rule and the checkout that applies it were found and read"}`},
		llm.Reply{Text: "## Coupon discounts at checkout\n\n" +
			"`cart.Checkout` (cart/cart.go) computes the subtotal with `cart.Subtotal`, asks `pricing.Discount` " +
			"(pricing/pricing.go) for the coupon's discount, subtracts it, and adds `pricing.Shipping` on the discounted amount.\n\n" +
			"- `BOOKWORM10`: 10 % off the subtotal\n" +
			"- `STUDENT`: 500 cents off orders of 2000 cents or more\n" +
			"- no coupon: no discount; an unknown code fails the checkout with `pricing.ErrUnknownCoupon`"},
	)
}

// toolResultsHold returns a check of the messages sent to the model: the
// tool results among them must contain every one of wants.
func toolResultsHold(wants ...string) func([]state.Message) error {
	return func(msgs []state.Message) error {
		var results strings.Builder
		for _, m := range msgs {
			for _, r := range m.ToolResults() {
				results.WriteString(r.Content)
				results.WriteByte('\n')
			}
		}
		for _, w := range wants {
			if !strings.Contains(results.String(), w) {
				return fmt.Errorf("the tool results do not contain %q: the scripted answer would not match them", w)
			}
		}
		return nil
	}
}
