//go:build !linux

package tools

import "os"

// seccompFile returns nil: the sandbox needs Linux.
func seccompFile() *os.File { return nil }
