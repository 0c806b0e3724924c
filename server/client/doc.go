// Package client calls a graph deployed behind the LangGraph Server API —
// this module's package server, LangGraph Platform, or LangGraph's own JS
// server — from Go, as the official Python and JS SDKs do, and makes such
// a graph a node of a local graph ([RemoteGraph], [Node]).
//
//	c, err := client.New("http://localhost:2024", client.WithAPIKey(key))
//	th, err := c.Threads.Create(ctx, client.ThreadCreate{})
//	for p, err := range c.Runs.Stream(ctx, th.ThreadID, "agent", client.RunRequest{
//		Input:      map[string]any{"topic": "cats"},
//		StreamMode: []client.StreamMode{client.ModeUpdates, client.ModeCustom},
//	}) {
//		if err != nil { … }
//		fmt.Println(p.Event, string(p.Data))
//	}
//
// # Groups
//
// The methods are grouped as the SDKs group them: [Client.Assistants]
// (search, get, graph, schemas), [Client.Threads] (create, search, get,
// update, copy, delete, state, history, state updates), [Client.Runs]
// (create, stream, wait, join, join as a stream, cancel, list, get,
// delete) and [Client.Store] (put, get, delete, search, namespaces).
// Crons are not served by package server nor by LangGraph's JS server, and
// are not in this package. Every method takes a context first; a server's
// non-2xx answer is an [*APIError] carrying the status, the server's
// message and the body; a run that failed is a [*RunError].
//
// State travels as JSON: inputs are encoded with encoding/json, states
// and values come back as [encoding/json.RawMessage] for the caller to
// decode into its own types.
//
// # Streams
//
// [Runs.Stream] and [Runs.JoinStream] return an iter.Seq2[Part, error].
// The server-sent events are parsed as the HTML specification says (CR,
// LF or CRLF line ends, several data lines joined, comment lines —
// heartbeats — skipped, "id" and "retry" fields), each line and event
// bounded by [WithMaxEventBytes]. Breaking out of the loop or cancelling
// the context closes the connection. A stream whose server names a
// Location to resume from (package server does for runs created with
// StreamResumable) survives a dropped connection: the client reconnects
// there with the Last-Event-ID of the last event it yielded, so that no
// event is lost or repeated ([WithReconnects]).
//
// # Interrupts
//
// A run that paused at an interrupt ends "successfully": [Runs.Wait]
// returns values holding "__interrupt__" (read them with [Interrupts]),
// and the thread's status is "interrupted". Resume it with a run whose
// [RunRequest.Command] carries the answer in Resume.
//
// # Remote graphs
//
// [RemoteGraph] is a deployed graph used by thread as a local compiled
// graph is (Invoke, Stream, Resume, GetState, History, UpdateState); a
// paused run is an [*Interrupted]. [Node] makes it a node of a local
// graph, as LangGraph's RemoteGraph is: the remote run goes on the local
// run's thread id, an interrupt in it pauses the local run with the
// remote question ([graph.Interrupt]), and resuming the local run answers
// the remote one.
//
// The tests run the same calls of every group against package server and
// against LangGraph's own JS server (server/testdata/ref) and compare the
// answers; see the guide docs/guides/remote-graph.md.
package client
