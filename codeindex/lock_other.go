//go:build !unix

package codeindex

import "os"

// tryLock takes no lock where the platform has no flock(2): there, only
// the keyword index's own lock keeps a second Index out, after Open has
// looked at the folder.
func tryLock(*os.File) error { return nil }
