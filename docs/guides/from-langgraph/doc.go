// Package fromlanggraph holds the Go side of the guide "From LangGraph to
// agentgraph" (docs/guides/from-langgraph.md), as an example that go test
// runs.
package fromlanggraph
