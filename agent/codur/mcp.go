package codur

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/agentgraph/agentgraph/tools"
	"github.com/agentgraph/agentgraph/tools/mcp"
)

// MCPServersError reports the MCP servers that could not be reached:
// [Config.MCPTools] returns it beside the tools of the others.
type MCPServersError struct {
	// Failed maps a server's name to why it failed.
	Failed map[string]error
}

// Error implements error.
func (e *MCPServersError) Error() string {
	var parts []string
	for _, name := range sortedKeys(e.Failed) {
		parts = append(parts, fmt.Sprintf("MCP server %s: %v", name, e.Failed[name]))
	}
	return "codur: " + strings.Join(parts, "; ") + " (the run goes on without its tools)"
}

// Unwrap returns the servers' errors.
func (e *MCPServersError) Unwrap() []error {
	var errs []error
	for _, name := range sortedKeys(e.Failed) {
		errs = append(errs, e.Failed[name])
	}
	return errs
}

// MCPTools connects to the configuration's MCP servers (stdio servers run
// in dir) and returns their tools, each named "<server>__<tool>", plus the
// generic list_mcp_tools, call_mcp_tool and read_mcp_resource over all of
// them. Close the sessions with the returned function when done. With no
// server configured it returns no tools and a no-op close.
//
// Each server has connect_timeout (default mcp.DefaultConnectTimeout,
// 30 s) to start and answer the handshake, and call_timeout (default
// mcp.DefaultCallTimeout, 5 min) for each request, its tool listing
// included. A server that fails is left out: the tools of the others are
// returned, with a usable close, and with an [*MCPServersError] naming
// each server that failed and why.
// Any other error comes with no tools.
func (c Config) MCPTools(ctx context.Context, dir string) ([]tools.Tool, func() error, error) {
	var sessions []*mcp.Session
	closeAll := func() error {
		var errs []error
		for _, s := range sessions {
			errs = append(errs, s.Close())
		}
		return errors.Join(errs...)
	}
	var ts []tools.Tool
	failed := map[string]error{}
	for _, name := range sortedKeys(c.MCPServers) {
		srv := c.MCPServers[name]
		opts := []mcp.Option{mcp.WithName(name), mcp.WithToolPrefix(name + "__"),
			mcp.WithConnectTimeout(srv.ConnectTimeout), mcp.WithCallTimeout(srv.CallTimeout)}
		var s *mcp.Session
		var err error
		if srv.URL != "" {
			for _, k := range sortedKeys(srv.Headers) {
				v, herr := expandHeader(srv.Headers[k])
				if herr != nil {
					_ = closeAll()
					return nil, nil, fmt.Errorf("codur: MCP server %s: header %s: %w", name, k, herr)
				}
				opts = append(opts, mcp.WithHeader(k, v))
			}
			s, err = mcp.ConnectHTTP(ctx, srv.URL, opts...)
		} else {
			opts = append(opts, mcp.WithDir(dir), mcp.WithEnv(cliEnv(srv.Env)...))
			s, err = mcp.ConnectStdio(ctx, srv.Command, srv.Args, opts...)
		}
		if ctx.Err() != nil {
			if s != nil {
				_ = s.Close()
			}
			_ = closeAll()
			return nil, nil, ctx.Err()
		}
		if err != nil {
			failed[name] = err
			continue
		}
		st, err := s.Tools(ctx)
		if err != nil {
			_ = s.Close()
			if ctx.Err() != nil {
				_ = closeAll()
				return nil, nil, ctx.Err()
			}
			failed[name] = err
			continue
		}
		sessions = append(sessions, s)
		ts = append(ts, st...)
	}
	var partial error
	if len(failed) > 0 {
		partial = &MCPServersError{Failed: failed}
	}
	if len(sessions) == 0 {
		return nil, func() error { return nil }, partial
	}
	generic, err := mcp.GenericTools(sessions...)
	if err != nil {
		_ = closeAll()
		return nil, nil, fmt.Errorf("codur: %w", err)
	}
	return append(ts, generic...), closeAll, partial
}

// headerVar is a ${NAME} reference in a header's value.
var headerVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandHeader replaces each ${NAME} in v with this process's variable
// NAME; any other "$" is kept as written (a token may hold one). A NAME
// that is not set is an error rather than an empty credential.
func expandHeader(v string) (string, error) {
	var missing []string
	out := headerVar.ReplaceAllStringFunc(v, func(ref string) string {
		name := ref[2 : len(ref)-1]
		val, ok := os.LookupEnv(name)
		if !ok {
			missing = append(missing, name)
		}
		return val
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("variable %s is not set", strings.Join(missing, ", "))
	}
	return out, nil
}
