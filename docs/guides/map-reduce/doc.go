// Package mapreduce holds the code of the guide "Map-reduce with Send"
// (docs/guides/map-reduce.md), as examples that go test runs.
package mapreduce
