// Package streaming holds the code of the guide "Streaming"
// (docs/guides/streaming.md), as examples that go test runs.
package streaming
