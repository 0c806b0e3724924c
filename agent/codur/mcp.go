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

// MCPTools connects to the configuration's MCP servers (stdio servers run
// in dir) and returns their tools, each named "<server>__<tool>", plus the
// generic list_mcp_tools, call_mcp_tool and read_mcp_resource over all of
// them. Close the sessions with the returned function when done. With no
// server configured it returns no tools and a no-op close.
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
	for _, name := range sortedKeys(c.MCPServers) {
		srv := c.MCPServers[name]
		opts := []mcp.Option{mcp.WithName(name), mcp.WithToolPrefix(name + "__")}
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
		if err != nil {
			_ = closeAll()
			return nil, nil, fmt.Errorf("codur: MCP server %s: %w", name, err)
		}
		sessions = append(sessions, s)
		st, err := s.Tools(ctx)
		if err != nil {
			_ = closeAll()
			return nil, nil, fmt.Errorf("codur: MCP server %s: %w", name, err)
		}
		ts = append(ts, st...)
	}
	if len(sessions) == 0 {
		return nil, func() error { return nil }, nil
	}
	generic, err := mcp.GenericTools(sessions...)
	if err != nil {
		_ = closeAll()
		return nil, nil, fmt.Errorf("codur: %w", err)
	}
	return append(ts, generic...), closeAll, nil
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
