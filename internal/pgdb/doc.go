// Package pgdb holds the plumbing that the PostgreSQL backends
// (checkpoint/postgres and store/postgres) share: opening a connection pool
// and running versioned schema migrations under an advisory lock.
//
// Errors are returned without a prefix; each backend adds its own.
package pgdb
