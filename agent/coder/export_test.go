package coder

import "time"

// SetRacyWindow sets how long after a change a file's metadata is not
// trusted, for the tests of the session's file cache; it returns a
// function restoring it.
func SetRacyWindow(d time.Duration) (restore func()) {
	old := racyWindow
	racyWindow = d
	return func() { racyWindow = old }
}
