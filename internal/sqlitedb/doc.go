// Package sqlitedb holds the plumbing that the SQLite backends
// (checkpoint/sqlite and store/sqlite) share: a database file opened as one
// writer connection and a pool of read-only connections, versioned schema
// migrations, prepared statements, and transactions retried while the
// database is busy.
//
// Errors are returned without a prefix; each backend adds its own.
package sqlitedb
