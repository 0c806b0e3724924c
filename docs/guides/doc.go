// Package guides checks the guides in this directory: each guide's Go code
// is quoted from a program under docs/guides/<guide>/ that go test runs,
// and the README's package table names every package of the repository.
// It has no code of its own.
package guides
