// Package remotegraph holds the code of the guide "Call a deployed graph
// from Go" (docs/guides/remote-graph.md), as examples that go test runs.
package remotegraph
