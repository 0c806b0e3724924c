//go:build !linux

package tools

import "os"

// openNoFollow returns nil: the sandbox needs Linux.
func openNoFollow(string) *os.File { return nil }
