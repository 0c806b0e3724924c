// Package sqlitedb holds the plumbing that the SQLite backends
// (checkpoint/sqlite and store/sqlite) share: the settings their options
// set and their defaults, a database file opened as one writer connection and
// a pool of read-only connections, versioned schema migrations, prepared
// statements, transactions retried while the database is busy, WAL
// checkpoints made off the writer's path (checkpointer.go), and the error
// types of Open, which the backends export under their own names.
//
// Errors are returned without a prefix; each backend adds its own.
package sqlitedb
