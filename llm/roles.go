package llm

import "github.com/tmc/langchaingo/llms"

// Role is the role of a message (state.Message's Role field), so that code
// reading a conversation need not import langchaingo:
//
//	for _, m := range s.Messages.List() {
//		if m.Role == llm.RoleAI && len(m.ToolCalls()) > 0 { … }
//	}
//
// Build messages with state.Human, state.AI, state.System and state.Tool.
type Role = llms.ChatMessageType

// The roles of messages.
const (
	// RoleSystem is a system prompt.
	RoleSystem Role = llms.ChatMessageTypeSystem
	// RoleHuman is the user's message.
	RoleHuman Role = llms.ChatMessageTypeHuman
	// RoleAI is the model's message (text and tool calls).
	RoleAI Role = llms.ChatMessageTypeAI
	// RoleTool is the result of a tool call.
	RoleTool Role = llms.ChatMessageTypeTool
	// RoleGeneric is a message of a role of its own (rarely used).
	RoleGeneric Role = llms.ChatMessageTypeGeneric
)
