package codur

import (
	"github.com/agentgraph/agentgraph/tools"
	"github.com/agentgraph/agentgraph/tools/structured"
)

// DefaultTools returns Codur's tools on the workspace ws: the coding tools
// of package tools (file_read, file_write, file_patch, file_list, grep,
// bash_exec, run_tests, web_search, git_status, git_diff, git_log), the
// other file operations (file_append, file_delete, file_copy, file_move,
// file_find, file_replace), the structured-data tools (json_read,
// json_write, yaml_read, yaml_write, ini_read, ini_write), git_stage,
// git_commit and web_fetch. Add MCP tools with [Config.MCPTools].
func DefaultTools(ws *tools.Workspace, opts ...tools.Option) []tools.Tool {
	ts := tools.Coding(ws, opts...)
	ts = append(ts, tools.FileOps(ws, opts...)...)
	ts = append(ts, structured.Tools(ws, opts...)...)
	return append(ts, tools.GitStage(ws, opts...), tools.GitCommit(ws, opts...), tools.WebFetch(opts...))
}
