// Package tools provides the tools an LLM coding agent calls, and the small
// abstraction they share.
//
// # Tools
//
// A Tool has a name, a description, a JSON-schema object describing its
// arguments, and a Call method taking the JSON arguments the model produced.
// New builds a Tool from a typed Go function; the schema is derived from the
// argument struct's `json` and `jsonschema` tags, and arguments are decoded
// strictly (unknown fields are rejected) into that struct, with decoding
// problems reported as *ArgumentError:
//
//	type greetArgs struct {
//		Name string `json:"name" jsonschema:"required,description=Who to greet"`
//	}
//	greet := tools.New("greet", "Greet someone.",
//		func(ctx context.Context, a greetArgs) (string, error) {
//			return "hello " + a.Name, nil
//		})
//	out, err := greet.Call(ctx, json.RawMessage(`{"name":"Ada"}`))
//
// A Set registers tools under unique names and dispatches calls by name.
//
// # Workspace
//
// The coding tools act on a Workspace, a root directory. Workspace.Resolve
// maps the paths the model gives (relative to the root, or absolute) to real
// paths and refuses, with *OutsideWorkspaceError, any path that leaves the
// root through "..", an absolute path or a symlink.
//
// # Coding tools
//
// Coding returns them all; each also has its own constructor:
//
//   - bash_exec (BashExec): run a command with bash -c in the root, with a
//     timeout that kills the whole process group.
//   - file_read, file_list, file_write, file_patch (FileRead, FileList,
//     FileWrite, FilePatch): read with line numbers, list a tree, write
//     atomically, replace a unique snippet.
//   - grep (Grep): regular-expression search honouring .gitignore.
//   - run_tests (RunTestsTool): run go, pytest, cargo, npm or bun tests and
//     report the result as JSON; RunTests is the same as a Go API.
//   - web_search (WebSearch): DuckDuckGo search, HTML endpoint with the lite
//     endpoint as fallback.
//   - git_status, git_diff, git_log (GitStatus, GitDiff, GitLog).
//
// Settings such as timeouts and output limits are passed as Option values
// (WithTimeout, WithOutputLimit, ...). Every constructor accepts the same
// options and uses those that apply to it.
//
// Tools return the text shown to the model. Failed commands and failing
// tests are normal results; an error means the call itself could not be
// carried out, and a done context surfaces as ctx.Err().
//
// # Running a model's tool calls
//
// [ToolNode] runs the tool calls of the last AI message concurrently and
// returns one tool message per call, in call order. An unknown tool, bad
// arguments, a tool error, a panic or a timeout becomes a tool message the
// model can read (or, with WithFailOnError, fails the node). [Node] adapts
// a ToolNode into a graph node over any state with a Messages field,
// [Condition] routes to it while the model asks for tools, and
// [Definitions] describes tools to a model.
//
// Only the file tools and grep are confined to the workspace: bash_exec,
// run_tests and the git tools run processes in the root that can reach
// anything the agent's process can.
package tools
