package tools

// Coding returns all coding tools for ws: bash_exec, file_read, file_list,
// file_write, file_patch, grep, run_tests, web_search, git_status, git_diff
// and git_log. opts apply to every tool that uses them.
func Coding(ws *Workspace, opts ...Option) []Tool {
	return []Tool{
		BashExec(ws, opts...),
		FileRead(ws, opts...),
		FileList(ws, opts...),
		FileWrite(ws, opts...),
		FilePatch(ws, opts...),
		Grep(ws, opts...),
		RunTestsTool(ws, opts...),
		WebSearch(opts...),
		GitStatus(ws, opts...),
		GitDiff(ws, opts...),
		GitLog(ws, opts...),
	}
}
