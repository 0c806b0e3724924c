// Package pgdb holds the plumbing that the PostgreSQL backends
// (checkpoint/postgres, store/postgres and server/postgres) share: the
// settings their options set and their defaults, opening a connection
// pool, running versioned schema migrations under an advisory lock, the
// error types of Open, which the backends export under their own names,
// and [JSONB] and [Text], which store the character U+0000 (which
// PostgreSQL's text and jsonb cannot hold) as U+FFFD where refusing the
// value would fail a write nothing can correct.
//
// Errors are returned without a prefix; each backend adds its own.
package pgdb
