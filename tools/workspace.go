package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// OutsideWorkspaceError is returned when a path resolves to a location
// outside the workspace root.
type OutsideWorkspaceError struct {
	// Path is the path as it was given.
	Path string
}

// Error implements error.
func (e *OutsideWorkspaceError) Error() string {
	return fmt.Sprintf("path %q is outside the workspace", e.Path)
}

// ProtectedPathError is returned when a write tool is asked to change
// version-control metadata, such as a file under .git; see WithVCSWrites.
type ProtectedPathError struct {
	// Path is the path as it was given.
	Path string
	// Component is the metadata name found in the path, such as ".git".
	Component string
}

// Error implements error.
func (e *ProtectedPathError) Error() string {
	return fmt.Sprintf("path %q is inside version-control metadata (%s); writing it is not allowed", e.Path, e.Component)
}

// HardLinkError is returned when a file tool is asked to use a regular
// file with more than one hard link, which may be a link to a file outside
// the workspace; see WithHardLinks.
type HardLinkError struct {
	// Path is the path as it was given.
	Path string
	// Links is the file's link count.
	Links uint64
}

// Error implements error.
func (e *HardLinkError) Error() string {
	return fmt.Sprintf("%s has %d hard links and may be a link to a file outside the workspace; refusing to use it", e.Path, e.Links)
}

// vcsMetadataNames are the names of version-control metadata, compared
// case-insensitively.
var vcsMetadataNames = []string{".git", ".hg", ".svn", ".jj", ".bzr"}

// vcsComponent returns the first component of the slash-separated path rel
// that names version-control metadata.
func vcsComponent(rel string) (string, bool) {
	for c := range strings.SplitSeq(rel, "/") {
		for _, name := range vcsMetadataNames {
			if strings.EqualFold(c, name) {
				return c, true
			}
		}
	}
	return "", false
}

// Workspace confines file access to a root directory.
//
// The root is made absolute and its symlinks are resolved when the
// Workspace is created. The file tools check paths with Resolve for their
// messages and errors, and then do all their I/O through an os.Root opened
// on the root, so that a symlink swapped in after the check cannot lead
// outside. A Workspace is immutable and safe for concurrent use.
type Workspace struct {
	root string
}

// NewWorkspace returns a Workspace rooted at the directory root.
func NewWorkspace(root string) (*Workspace, error) {
	if root == "" {
		return nil, errors.New("workspace: empty root")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace: %s is not a directory", root)
	}
	return &Workspace{root: real}, nil
}

// Root returns the absolute, symlink-free root directory.
func (w *Workspace) Root() string { return w.root }

// Resolve maps p to an absolute, symlink-free path inside the workspace.
//
// Relative paths are taken relative to the root; absolute paths are accepted
// only if they end up inside the root. Every existing component is resolved
// (symlinks included, also dangling ones), so p does not need to exist yet:
// the part below the deepest existing ancestor is appended as is. An empty p
// means the root itself.
//
// Resolve returns *OutsideWorkspaceError if the result would leave the root,
// whether through "..", an absolute path, or a symlink such as
// /proc/self/root. It checks the file system at the time of the call; a
// symlink swapped in afterwards is not detected.
func (w *Workspace) Resolve(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("invalid path %q: contains a NUL byte", p)
	}
	var abs string
	if filepath.IsAbs(p) {
		abs = filepath.Clean(p)
	} else {
		abs = filepath.Join(w.root, p)
	}
	resolved, err := resolvePath(abs)
	if err != nil {
		return "", fmt.Errorf("resolve %q: %w", p, err)
	}
	if !within(w.root, resolved) {
		return "", &OutsideWorkspaceError{Path: p}
	}
	return resolved, nil
}

// rel returns the slash-separated path of abs relative to the root, "." for
// the root itself. abs must come from Resolve.
func (w *Workspace) rel(abs string) string {
	r, err := filepath.Rel(w.root, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(r)
}

// within reports whether p is root or below it. Both must be clean and
// absolute.
func within(root, p string) bool {
	if root == string(filepath.Separator) {
		return true
	}
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// maxSymlinks bounds symlink expansion, like the kernel's ELOOP limit.
const maxSymlinks = 255

// resolvePath resolves the symlinks of every existing component of the
// clean absolute path abs. Components that do not exist are kept literally.
func resolvePath(abs string) (string, error) {
	sep := string(filepath.Separator)
	resolved := sep
	rest := strings.TrimPrefix(abs, sep)
	links := 0
	for rest != "" {
		var comp string
		comp, rest, _ = strings.Cut(rest, sep)
		switch comp {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, comp)
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				resolved = next
				continue
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		links++
		if links > maxSymlinks {
			return "", fmt.Errorf("too many levels of symbolic links at %s", next)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			resolved = sep
			target = strings.TrimPrefix(target, sep)
		}
		// The link target replaces the link; resolved stays at the link's
		// directory for relative targets.
		if rest == "" {
			rest = target
		} else {
			rest = target + sep + rest
		}
	}
	return resolved, nil
}

// rootPath converts p, a path given to a tool, to the slash-separated path
// relative to the root that the tools open through an os.Root; "." is the
// root itself. Symlinks existing at the time of the call are resolved, so
// that the path names what the model meant even if it goes through an
// absolute symlink (which os.Root does not follow).
func (w *Workspace) rootPath(p string) (string, error) {
	abs, err := w.Resolve(p)
	if err != nil {
		return "", err
	}
	return w.rel(abs), nil
}

// openRoot opens the workspace root for confined access.
func (w *Workspace) openRoot() (*os.Root, error) {
	root, err := os.OpenRoot(w.root)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	return root, nil
}

// rootError turns an os.Root error about a path escaping the root into
// *OutsideWorkspaceError for the given path p, and returns other errors
// unchanged.
func rootError(p string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent" {
		return &OutsideWorkspaceError{Path: p}
	}
	return err
}

// checkWritableDir refuses writes in dir, an open directory of the
// workspace given to a tool as part of p, if it lies in version-control
// metadata. It checks where the opened directory really is (on Linux,
// through /proc/self/fd), so that a directory swapped for a symlink into
// .git after the path was checked is still caught.
func (w *Workspace) checkWritableDir(dir *os.Root, p string) error {
	f, err := dir.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	real, ok := openedPath(f)
	if !ok {
		return nil
	}
	if !within(w.root, real) {
		return &OutsideWorkspaceError{Path: p}
	}
	if c, bad := vcsComponent(w.rel(real)); bad {
		return &ProtectedPathError{Path: p, Component: c}
	}
	return nil
}
