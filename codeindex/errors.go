package codeindex

import (
	"errors"
	"fmt"
	"time"
)

// ErrClosed is returned by the methods of an [Index] after Close.
var ErrClosed = errors.New("codeindex: index is closed")

// A LockedError reports an index folder that another [Index] holds open:
// one folder is opened by one Index at a time, until its Close.
type LockedError struct {
	Dir  string
	Wait time.Duration
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("codeindex: the index in %s is open elsewhere (another Index, in this process or another, has not been closed); gave up after %s", e.Dir, e.Wait)
}

// An OptionError reports an option given an unusable value.
type OptionError struct {
	Option string // the option's function name, such as "WithLimit"
	Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("codeindex: %s: %s", e.Option, e.Reason)
}

// A DimensionError reports a vector whose dimension differs from the index's.
type DimensionError struct {
	Want, Got int
}

func (e *DimensionError) Error() string {
	return fmt.Sprintf("codeindex: vector has dimension %d, index has %d", e.Got, e.Want)
}

// A CorruptError reports an index file that cannot be read back, or one
// written in a format this version does not know. Deleting the index folder
// and indexing again repairs it.
type CorruptError struct {
	File string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("codeindex: unreadable index file %s: %v", e.File, e.Err)
}

// Unwrap returns the underlying error.
func (e *CorruptError) Unwrap() error { return e.Err }
