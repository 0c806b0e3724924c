// Package tools provides the tools an LLM coding agent calls, and the small
// abstraction they share.
//
// Start here — what most programs use, whatever their tools:
//
//   - [Tool], the interface, and [New], which makes one from a typed Go
//     function (its JSON Schema from the argument struct).
//   - [ToolNode], which runs a model message's tool calls, with [Node],
//     [SendCondition] and [Condition] to put it in a graph (package agent
//     does this for you), and [Definitions] to show tools to a model.
//   - [Set], tools by name.
//
// The rest of the package is the coding tools (files, bash, git, tests,
// web) and their confinement, below.
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
//   - bash_exec (BashExec): run a command with bash -c in the root, in a
//     sandbox where the machine has one, with a timeout; every process the
//     command started is killed when it ends.
//   - file_read, file_list, file_write, file_patch (FileRead, FileList,
//     FileWrite, FilePatch): read with line numbers, list a tree, write
//     atomically, replace a unique snippet.
//   - grep (Grep): regular-expression search honouring .gitignore.
//   - run_tests (RunTestsTool): run go, pytest, cargo, npm or bun tests and
//     report the result as JSON, in the sandbox like bash_exec; RunTests
//     is the same as a Go API.
//   - web_search (WebSearch): DuckDuckGo search, HTML endpoint with the lite
//     endpoint as fallback.
//   - git_status, git_diff, git_log (GitStatus, GitDiff, GitLog).
//
// More tools, not in Coding, each with its own constructor:
//
//   - file_append, file_delete, file_copy, file_move, file_find,
//     file_replace (FileAppend, FileDelete, FileCopy, FileMove, FileFind,
//     FileReplace; FileOps returns them all): confined like the file tools.
//   - git_stage, git_commit (GitStage, GitCommit).
//   - web_fetch (WebFetch): a page as text; private and loopback addresses
//     are refused (*PrivateAddressError).
//
// RunCommand runs any program the way bash_exec runs a command — for an
// agent that starts programs on a model's behalf: an external coding CLI,
// the program a model wrote — and WithGoCaches lets sandboxed go reuse
// this machine's toolchain and module cache, read-only. Build caches (Go's
// GOCACHE, pip's, npm's) persist in a writable directory outside the
// workspace (WithCacheDir; by default DefaultCacheDir, shared by this
// user's commands); this machine's own Go build cache is never writable
// to them.
//
// Package tools/structured reads and writes JSON, YAML and INI files
// (confined the same way), and package tools/mcp turns the tools of MCP
// servers into Tools.
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
// [CallHooks] attached to a context with [ContextWithCallHooks] see every
// call a ToolNode makes with it and its outcome; package telemetry traces
// tool calls this way.
//
// [SendCondition] routes like Condition but sends one task per tool call
// (a graph.Send whose state carries an AI message with that one call), as
// LangGraph's ReAct agent does: each call's result is saved as the task's
// pending write when it finishes, so a run resumed after a crash runs only
// the calls that had not finished. The tool messages still come back in
// call order (the graph merges Sends in the order they were sent).
//
// # Security model
//
// The tools are meant for a model that may be wrong or manipulated (by a
// prompt injection in a file or a web page), working on a repository that
// may be hostile. What is confined, and how:
//
// File tools (file_read, file_list, file_write, file_patch, grep). Every
// path is checked with Resolve, for the error the model sees, and then all
// I/O goes through an os.Root opened on the workspace root, which opens
// each path component relative to the directory opened before it (openat
// with O_NOFOLLOW) and checks every symlink it meets: a directory swapped
// for a symlink to the outside between the check and the use is refused
// too (there is no check-then-use gap). Walks
// (file_list, grep) open each directory through the root as well. On top
// of that:
//
//   - Writes (file_write, file_patch, and the directories file_write
//     creates) into version-control metadata are refused with
//     *ProtectedPathError: .git, .hg, .svn, .jj and .bzr, in any letter
//     case, at any depth (nested repositories and submodules too), and a
//     .git file (a gitdir link). Writing .git/config or .git/hooks would
//     otherwise let the model make git run any program. On Linux the
//     directory actually opened is checked too, so a symlink into .git
//     swapped in after the check is caught. WithVCSWrites(true) allows such
//     writes. Reading them is allowed.
//   - A regular file with more than one hard link may be a link to a file
//     outside the workspace (a hard link cannot be seen as such from its
//     name). file_read, file_patch and file_write refuse it with
//     *HardLinkError, checked on the opened file, and grep skips it;
//     WithHardLinks(true) allows it. file_write and file_patch replace a
//     file by renaming a new one over it, so even then they never write
//     through a link.
//   - FIFOs and devices are opened without blocking and refused.
//
// Git tools (git_status, git_diff, git_log). git runs with every setting
// through which a repository's configuration can make it run a program
// overridden on the command line (core.fsmonitor, core.hooksPath, pagers,
// editors, diff.external, signature programs, credential helpers,
// transports), with every filter and diff driver the repository defines
// disabled, without system or global configuration, with a scrubbed
// environment and an empty HOME, and with submodules' work trees left
// alone. A repository whose configuration sets core.worktree is refused
// with *UnsafeRepositoryError.
//
// bash_exec, run_tests and RunCommand. Where bubblewrap (the bwrap
// command) works, commands, test runs and programs run in a
// sandbox, SandboxStatus says whether it does, and WithSandbox can require
// it or turn it off. In the sandbox the workspace is the only writable
// directory besides a private /tmp (1 GiB where bwrap can bound it) and
// HOME and the build caches (see WithCacheDir), and the workspace's version-control metadata (.git, .hg, ... at
// its root) is read-only unless WithVCSWrites allows writing it; /usr,
// /bin, /lib*, /etc and /opt are read-only, and so are /proc/sys,
// /proc/sysrq-trigger, /proc/irq and /proc/bus; the rest of the file system, home directories
// included, is absent; /etc/shadow and host keys are masked; there is no
// network (WithNetwork allows it); the kernel's keyrings are out of reach
// (a seccomp filter, on amd64 and arm64); the command has no
// capabilities, its own pid, IPC and UTS namespaces, and dies with this
// process. Sandboxed or
// not, the command gets an environment by allowlist (PATH without the
// workspace's entries, locale, terminal, the toolchains' variables, and
// WithEnv's; secret-looking variables such as OPENAI_API_KEY never pass
// unless WithEnv names them exactly), the values of this process's other
// variables are redacted from its output (NewRedactor), and
// every process it started is killed when it exits, times out or is
// cancelled, background jobs and setsid daemons included: in the sandbox
// by its pid namespace, outside it by a cgroup where this process may
// create one (as root), else by an environment marker that a process which
// both leaves the process group and clears its environment escapes
// (SandboxStatus().ProcessTree says which). WithCommandAllow and
// WithCommandDeny steer the model away from commands; they are a
// convenience, not a boundary.
//
// Run by root, sandboxed commands run as SandboxUID in a user namespace
// of their own, and the files of the directories they see that not
// everyone may read are hidden from them (see BashExec for the rule and
// its limits).
//
// What is not confined:
//
//   - Without the sandbox, bash_exec commands can read and write anything
//     this process can, use the network, and read this process's
//     environment (API keys included) through /proc. Use
//     WithSandbox(SandboxRequired) where that matters.
//   - run_tests runs the workspace's tests, code the model may have
//     written, in the same sandbox (see RunTests), and so do the goals'
//     test checks, which go through RunTestsRecorded; without the sandbox
//     they run unconfined, with bash_exec's environment by allowlist. The
//     goals' other commands (make test, builds, linters, a shell command
//     goal, an eval harness) run unconfined, with this process's
//     environment less its secret-looking variables (ScrubEnv); their
//     output goes through a Redactor before a model reads it.
//   - Inside the sandbox the command can still read the workspace, the
//     system directories and /etc (passwd, hosts, ...), and with WithNetwork
//     send them anywhere. bubblewrap shares the kernel: it is not a virtual
//     machine. WithNetwork shares this machine's network namespace: the
//     command reaches its loopback services and abstract Unix sockets too.
//   - Limits (WithLimits, DefaultLimits) bound a command's processes and
//     memory through cgroup v1 pids and memory hierarchies where this
//     process may make cgroups (as root), else only when set explicitly,
//     as rlimits; and the size of each file it writes (RLIMIT_FSIZE, through
//     the prlimit program where installed). Nothing bounds the total it
//     writes into the workspace: many files each below the limit add up.
//   - os.Root does not stop at mount points or bind mounts inside the
//     workspace, and the file tools follow symlinks that stay inside it.
//   - web_search sends the model's queries to the search engine.
package tools
