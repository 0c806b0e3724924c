package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// remoteTool is a tool of an MCP server, as a tools.Tool.
type remoteTool struct {
	s    *Session
	info ToolInfo
	name string
}

func (t *remoteTool) Name() string { return t.name }

func (t *remoteTool) Description() string {
	if t.info.Description == "" {
		return t.info.Title
	}
	return t.info.Description
}

// Parameters returns a copy of the server's input schema.
func (t *remoteTool) Parameters() json.RawMessage { return bytes.Clone(t.info.InputSchema) }

func (t *remoteTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return t.s.callTool(ctx, t.name, t.info.Name, args)
}

// resultText renders a tool result for a model, in one representation:
// its content when it has any (the MCP specification has a tool that
// returns structured content give it as text content too), else its
// structured content as JSON.
func resultText(content []sdk.Content, structured any) string {
	parts := make([]string, 0, len(content))
	for _, c := range content {
		switch c := c.(type) {
		case nil:
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s%s]", c.URI, describeName(c.Name, c.MIMEType)))
		case *sdk.EmbeddedResource:
			if c.Resource != nil {
				parts = append(parts, resourceText(c.Resource))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	if len(parts) == 0 && structured != nil {
		if b, err := json.Marshal(structured); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

// resourceText renders a resource's contents: its text, or a description
// of a binary one.
func resourceText(c *sdk.ResourceContents) string {
	if c.Blob != nil {
		return fmt.Sprintf("[blob: %s, %s, %d bytes]", c.URI, orUnknown(c.MIMEType), len(c.Blob))
	}
	return c.Text
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

func describeName(name, mime string) string {
	var extra []string
	if name != "" {
		extra = append(extra, name)
	}
	if mime != "" {
		extra = append(extra, mime)
	}
	if len(extra) == 0 {
		return ""
	}
	return " (" + strings.Join(extra, ", ") + ")"
}
