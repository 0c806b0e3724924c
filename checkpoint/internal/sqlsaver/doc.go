// Package sqlsaver holds the part of the SQL checkpoint savers
// (checkpoint/sqlite and checkpoint/postgres) that does not depend on the
// database: the JSON columns of a checkpoint row, the channel values
// rebuilt from paths of blobs, the metadata filter of List, and List's
// iteration.
//
// Errors are returned without a prefix; each saver adds its own.
package sqlsaver
