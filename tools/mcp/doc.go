// Package mcp connects agents to Model Context Protocol servers: it turns
// the tools of an MCP server into [tools.Tool]s that any agent of this SDK
// (agent.NewReAct, retrai, the research agent) can call. It is built on
// the official go-sdk, github.com/modelcontextprotocol/go-sdk, imported
// here as sdk; a program needs that package only to write a server.
//
// # Connecting
//
// A [Session] is a connection to one server. [ConnectStdio] starts the
// server as a subprocess speaking over its standard input and output;
// [ConnectHTTP] connects over the streamable HTTP transport; [Connect]
// takes any transport of the go-sdk (an in-memory one, say):
//
//	fs, err := mcp.ConnectStdio(ctx, "npx", []string{"-y", "@modelcontextprotocol/server-filesystem", dir},
//		mcp.WithToolPrefix("fs__"))
//	...
//	defer fs.Close()
//	web, err := mcp.ConnectHTTP(ctx, "https://example.com/mcp",
//		mcp.WithHeader("Authorization", "Bearer "+token))
//
// [ServerConfig] holds the same settings in the shape of the "mcpServers"
// entries of common configuration files (command, args, env, cwd; or url
// and headers), for programs that read their servers from a file.
//
// A stdio server gets only a few variables of this process's environment
// (PATH, HOME, ...) plus those given with [WithEnv], so that API keys do not
// leak into it ([WithInheritEnv] passes them all); it runs in its own
// process group, and [Session.Close] closes its input, then sends SIGTERM,
// then SIGKILL to the group, so that what it started goes too. The end of
// its standard error is kept for the [*ExitError] a call returns when the
// server dies ([WithStderr] copies all of it elsewhere).
//
// # Tools
//
// [Session.Tools] lists the server's tools (following every page) and
// returns them as tools.Tool: the name (with the [WithToolPrefix] prefix,
// so that several servers' tools do not clash, and made acceptable to model
// providers: "files.read" becomes "files_read"), the description (cut to
// [WithOutputLimit], as it goes to the model with every call), and the
// server's input schema as Parameters. Two tools that end up with the same
// name, or an input schema that is not of type "object", make Tools fail
// rather than the agent. Handing them to an agent is all it takes:
//
//	ts, err := fs.Tools(ctx)
//	g, err := agent.NewReAct(model, append(ts, tools.Coding(ws)...))
//
// A call's result is text for the model, in one representation: text
// content as it is, other content described ("[image: image/png, 1024
// bytes]"), and structured content as JSON only when there is no content
// (a tool that returns structured content gives it as text too; sending
// both would double the result), cut to [WithOutputLimit] characters (default
// [tools.DefaultOutputLimit]; the first and last halves are kept around a
// "[... N chars truncated ...]" marker). Failures are told apart with errors.As and errors.Is:
//
//   - [*tools.ArgumentError]: the arguments are not a JSON object (the
//     call is not sent);
//   - [*ToolError]: the tool ran and failed; its text is the server's
//     message, which a [tools.ToolNode] shows to the model so it can
//     correct itself (a go-sdk server reports arguments that do not match
//     the schema this way too);
//   - [*RPCError]: the server answered with a protocol error (an unknown
//     tool, a missing resource, an internal error);
//   - [ErrConnectionClosed]: the session was closed, or the connection
//     lost (the call that finds it broken included); for a stdio server that died the error also holds an
//     [*ExitError] with its exit status and the end of its standard error;
//   - [*TimeoutError]: no answer within the call time limit
//     ([WithCallTimeout], default [DefaultCallTimeout]); the server is sent
//     a cancellation notice and the session stays usable;
//   - ctx.Err(): the call's context ended; the server is sent a
//     cancellation notice.
//
// [Session.ReadResource] reads a resource and [Session.ListResources]
// lists them.
//
// # Generic tools
//
// [GenericTools] returns list_mcp_tools, call_mcp_tool and
// read_mcp_resource over one or more sessions, picked by name
// ([WithName]; by default the server's own name): for agents that discover
// what the servers offer at run time instead of having every tool bound.
// The listing is cut to the sum of the listed servers' output limits.
//
// # Concurrency and limits
//
// A Session is safe for concurrent use; calls run concurrently over one
// connection.
//
// The go-sdk's stdio transport reads one message of at most 16 MiB
// (sdk.DefaultMaxLineLength): a larger reply, a tool result of more than
// about 16 MB say, is not read; the connection ends, the call fails with
// [ErrConnectionClosed], and so do the later calls of the session (connect
// again). The output limit applies only to what is read: a result up to
// that size is held in memory whole before it is cut. Over HTTP, a
// server-sent event is bounded to 16 MiB (sdk.DefaultMaxEventSize, which
// this package sets: the go-sdk's streamable client takes a zero limit as
// none) and a reply of type application/json to [MaxJSONReply] (16 MiB),
// with the same outcome.
//
// The connect functions return as soon as ctx ends or the connect time
// limit passes ([WithConnectTimeout], default [DefaultConnectTimeout]: a
// server that never answers the handshake fails with a [*TimeoutError]),
// even when the server does not answer (the go-sdk would wait up to 5 s
// to deliver its cancellation notice). A stdio server that fails to
// connect (it exits, writes something other than MCP on its standard
// output, or does not answer in time) is killed at once, and the error quotes the
// start of what it wrote and the end of its standard error. Close ends
// calls in progress (they fail with
// [ErrConnectionClosed]). Over HTTP, the go-sdk's Close then waits up to
// 5 s for the server to end the session, which a go-sdk server does only
// once its running tool handlers have returned; when it does not, Close
// returns that error (the session is closed all the same). Over stdio, a
// go-sdk server whose tool handler ignores its cancellation does not exit
// at the end of its input, so Close then takes [WithTerminateTimeout]
// before it sends SIGTERM.
//
// Not supported: sampling, elicitation and roots (requests from the server
// to the client), prompts, resource templates and subscriptions, and
// notifications that the tool list changed (call Tools again).
package mcp
