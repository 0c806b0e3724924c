//go:build !unix

package codur

import "io/fs"

// linkCount is 1 where links cannot be counted.
func linkCount(fs.FileInfo) uint64 { return 1 }
