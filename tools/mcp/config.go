package mcp

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// ServerConfig says how to reach an MCP server, in the shape of the
// "mcpServers" entries of common configuration files: a command for a
// stdio server, or a URL for a streamable HTTP one.
type ServerConfig struct {
	// Command starts a stdio server (see [ConnectStdio]).
	Command string `json:"command,omitempty" yaml:"command,omitempty"`
	// Args are the command's arguments.
	Args []string `json:"args,omitempty" yaml:"args,omitempty"`
	// Env adds variables to the server's environment (see [WithEnv]).
	Env map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	// Dir is the server's working directory (see [WithDir]).
	Dir string `json:"cwd,omitempty" yaml:"cwd,omitempty"`
	// URL is the endpoint of a streamable HTTP server (see [ConnectHTTP]).
	URL string `json:"url,omitempty" yaml:"url,omitempty"`
	// Headers are sent with every HTTP request to the server (see
	// [WithHeader]).
	Headers map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
}

// Connect connects to the server c describes and names the session name
// (see [WithName]); opts come after the settings of c, so they override
// them. Exactly one of Command and URL must be set.
func (c ServerConfig) Connect(ctx context.Context, name string, opts ...Option) (*Session, error) {
	var base []Option
	if name != "" {
		base = append(base, WithName(name))
	}
	switch {
	case c.Command != "" && c.URL != "":
		return nil, fmt.Errorf("mcp: server %s: both command and url are set", name)
	case c.Command != "":
		if len(c.Headers) > 0 {
			return nil, fmt.Errorf("mcp: server %s: headers are set for a stdio server", name)
		}
		if len(c.Env) > 0 {
			env := make([]string, 0, len(c.Env))
			for _, k := range slices.Sorted(maps.Keys(c.Env)) {
				env = append(env, k+"="+c.Env[k])
			}
			base = append(base, WithEnv(env...))
		}
		if c.Dir != "" {
			base = append(base, WithDir(c.Dir))
		}
		return ConnectStdio(ctx, c.Command, slices.Clone(c.Args), append(base, opts...)...)
	case c.URL != "":
		if len(c.Args) > 0 || len(c.Env) > 0 || c.Dir != "" {
			return nil, fmt.Errorf("mcp: server %s: args, env or cwd are set for an HTTP server", name)
		}
		for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
			base = append(base, WithHeader(k, c.Headers[k]))
		}
		return ConnectHTTP(ctx, c.URL, append(base, opts...)...)
	default:
		return nil, fmt.Errorf("mcp: server %s: neither command nor url is set", name)
	}
}
