package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/sqlsaver"
	"github.com/agentgraph/agentgraph/internal/sqlitedb"
)

// CorruptFileError reports a database file that is damaged or is not a
// SQLite database: SQLite says so ("database disk image is malformed",
// "file is not a database"), or the file exists with zero length, which
// SQLite would take for a new, empty database although it can only be a
// truncated one. [Open] returns it; a read that meets the damage returns
// a [*checkpoint.CorruptError] naming the checkpoint it was reading, which
// wraps it. It matches [checkpoint.ErrCorrupt] (with [errors.Is]), as do
// the errors of the Saver's other operations that meet the damage.
type CorruptFileError struct {
	// Path is the database file.
	Path string
	// Err is SQLite's error, or what is wrong with the file.
	Err error
}

// Error names the file and the reason.
func (e *CorruptFileError) Error() string {
	return fmt.Sprintf("checkpoint/sqlite: database file %s is damaged or not a SQLite database: %v", e.Path, e.Err)
}

// Unwrap returns the underlying error.
func (e *CorruptFileError) Unwrap() error { return e.Err }

// Is reports whether target is [checkpoint.ErrCorrupt].
func (e *CorruptFileError) Is(target error) bool { return target == checkpoint.ErrCorrupt }

// fileError returns err, with a damaged database file reported as a
// [*CorruptFileError].
func fileError(err error) error {
	if c, ok := errors.AsType[*sqlitedb.CorruptError](err); ok {
		return &CorruptFileError{Path: c.Path, Err: c.Err}
	}
	return err
}

// corruptFile returns err, or for a damaged database file a
// [*checkpoint.CorruptError] naming ref, the checkpoint being read, that
// wraps a [*CorruptFileError].
func corruptFile(ref checkpoint.Ref, err error) error {
	if _, ok := errors.AsType[*sqlitedb.CorruptError](err); !ok {
		return err
	}
	return sqlsaver.CorruptRef(ref, fileError(err))
}

// scanError returns the error of scanning a row of t's (what it holds):
// one that does not convert, as SQLite does not enforce column types, is
// a [*checkpoint.CorruptError] naming t; the context's error stays as is.
func scanError(t *checkpoint.Tuple, what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return sqlsaver.Corrupt(t, fmt.Errorf("%s: %w", what, err))
}
