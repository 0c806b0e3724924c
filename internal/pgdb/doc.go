// Package pgdb holds the plumbing that the PostgreSQL backends
// (checkpoint/postgres and store/postgres) share: the settings their options
// set and their defaults, opening a connection pool, running versioned
// schema migrations under an advisory lock, and the error types of Open,
// which the backends export under their own names.
//
// Errors are returned without a prefix; each backend adds its own.
package pgdb
