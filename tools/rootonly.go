package tools

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// SandboxUID and SandboxGID are the user and group ids commands run as in
// the sandbox when this process runs as root: ids of no one in
// particular, mapped in the command's own user namespace to root, the
// owner of the workspace. (Run as another user, commands keep that
// user's ids.)
const (
	SandboxUID = 1000
	SandboxGID = 1000
)

// rootOnly is a path that is not readable by everyone, masked in the
// sandbox when commands run as host root.
type rootOnly struct {
	path string
	dir  bool
}

// rootOnlyScans caches, per scanned path, the entries below it that only
// their owner or group may read (*sync.OnceValue of []rootOnly).
var rootOnlyScans sync.Map

// rootOnlyIn returns the entries of the tree at p that are not readable
// by everyone: regular files and other non-directories without the
// world-read bit, and directories without world read and search (whose
// contents are then not listed). Symlinks are not followed, but p itself
// is resolved: the entries are named below p as given. A tree is scanned
// once per process.
func rootOnlyIn(p string) []rootOnly {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil
	}
	found, ok := fromScannedAncestor(real)
	if !ok {
		v, _ := rootOnlyScans.LoadOrStore(real, sync.OnceValue(func() []rootOnly { return scanRootOnly(real) }))
		found = v.(func() []rootOnly)()
	}
	if real == p {
		return found
	}
	out := make([]rootOnly, len(found))
	for i, r := range found {
		out[i] = rootOnly{path: p + strings.TrimPrefix(r.path, real), dir: r.dir}
	}
	return out
}

// fromScannedAncestor returns the entries below real that the scan of a
// tree holding it found (GOROOT below /usr, say), waiting for that scan if
// it is under way, so that no tree is walked twice; ok is false when no
// such scan was started, or when it hid a directory holding real, whose
// contents it did not list.
func fromScannedAncestor(real string) (found []rootOnly, ok bool) {
	var scan func() []rootOnly
	rootOnlyScans.Range(func(k, v any) bool {
		if root := k.(string); root != real && within(root, real) {
			scan = v.(func() []rootOnly)
			return false
		}
		return true
	})
	if scan == nil {
		return nil, false
	}
	for _, r := range scan() {
		switch {
		case r.dir && within(r.path, real):
			return nil, false
		case within(real, r.path):
			found = append(found, r)
		}
	}
	return found, true
}

// scanRootOnly walks the tree at root for rootOnlyIn.
func scanRootOnly(root string) []rootOnly {
	var found []rootOnly
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != root {
				// Unreadable to this process: hide it.
				found = append(found, rootOnly{path: p, dir: true})
				return fs.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		perm := fi.Mode().Perm()
		switch {
		case d.IsDir() && perm&0o005 != 0o005:
			found = append(found, rootOnly{path: p, dir: true})
			return fs.SkipDir
		case !d.IsDir() && perm&0o004 == 0:
			found = append(found, rootOnly{path: p})
		}
		return nil
	})
	return found
}

// maskArgs returns bwrap's options hiding the entries of the trees that
// everyone may not read: an empty read-only directory over such a
// directory, /dev/null over anything else. A directory holding one of
// keep (where the workspace or another writable path is bound later) is
// left visible.
func maskArgs(trees, keep []string) []string {
	var a []string
	seen := map[string]bool{}
	for _, t := range trees {
		for _, r := range rootOnlyIn(t) {
			if seen[r.path] {
				continue
			}
			seen[r.path] = true
			if !r.dir {
				a = append(a, "--ro-bind", os.DevNull, r.path)
				continue
			}
			holds := false
			for _, k := range keep {
				holds = holds || within(r.path, k)
			}
			if !holds {
				a = append(a, "--tmpfs", r.path, "--remount-ro", r.path)
			}
		}
	}
	return a
}
