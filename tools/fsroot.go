package tools

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
)

// openRegular opens the regular file name of root for reading and checks,
// on the opened file, that it is a regular file and, unless hardLinks, that
// it has a single link. p is the path as given to the tool, for errors.
// FIFOs and devices are opened without blocking and refused.
func openRegular(root *os.Root, name, p string, hardLinks bool) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, nil, rootError(p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := checkRegular(fi, p, hardLinks); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// errIsDir is wrapped by the errors about a directory where a file was
// expected.
var errIsDir = errors.New("is a directory")

// checkRegular refuses anything but a regular file and, unless hardLinks,
// a regular file with more than one link.
func checkRegular(fi fs.FileInfo, p string, hardLinks bool) error {
	switch {
	case fi.IsDir():
		return fmt.Errorf("%s %w", p, errIsDir)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", p)
	case !hardLinks && linkCount(fi) > 1:
		return &HardLinkError{Path: p, Links: linkCount(fi)}
	}
	return nil
}

// writeTarget is the file a write tool changes: its directory, opened as
// an os.Root confined to it, and its name there.
type writeTarget struct {
	dir  *os.Root
	name string
	rel  string // relative to the workspace root, for messages
}

// Close closes the target's directory.
func (t *writeTarget) Close() error { return t.dir.Close() }

// openWriteTarget resolves p for a write tool, refuses version-control
// metadata unless cfg allows it, optionally creates the parent directories
// and opens the parent directory.
func openWriteTarget(ws *Workspace, cfg *config, p string, mkdir bool) (*writeTarget, error) {
	rel, err := ws.rootPath(p)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return nil, fmt.Errorf("%s %w", p, errIsDir)
	}
	if !cfg.vcsWrites {
		if c, bad := vcsComponent(rel); bad {
			return nil, &ProtectedPathError{Path: p, Component: c}
		}
	}
	root, err := ws.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	dirRel, name := path.Split(rel)
	dirRel = path.Clean("./" + dirRel)
	if mkdir && dirRel != "." {
		if err := root.MkdirAll(dirRel, 0o755); err != nil {
			return nil, rootError(p, err)
		}
	}
	dir, err := root.OpenRoot(dirRel)
	if err != nil {
		return nil, rootError(p, err)
	}
	if !cfg.vcsWrites {
		if err := ws.checkWritableDir(dir, p); err != nil {
			dir.Close()
			return nil, err
		}
	}
	return &writeTarget{dir: dir, name: name, rel: rel}, nil
}

// read returns the content of the target, which must be a regular file of
// at most maxBytes bytes, and its permission bits.
func (t *writeTarget) read(p string, hardLinks bool, maxBytes int64) ([]byte, fs.FileInfo, error) {
	f, fi, err := openRegular(t.dir, t.name, p, hardLinks)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi.Size() > maxBytes {
		return nil, nil, fmt.Errorf("%s is %d bytes, over the %d MB limit", p, fi.Size(), maxBytes>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(data)) > maxBytes {
		return nil, nil, fmt.Errorf("%s is over the %d MB limit", p, maxBytes>>20)
	}
	return data, fi, nil
}

// write replaces the target's content with data through a temporary file
// in the same directory and a rename, so that readers never see a partial
// file and a symlink or hard link at the name is replaced rather than
// written through. An existing file keeps its mode; a new one gets 0644.
// It reports whether the file was created.
func (t *writeTarget) write(p string, data []byte, hardLinks bool) (created bool, err error) {
	mode := fs.FileMode(0o644)
	f, fi, err := openRegular(t.dir, t.name, p, hardLinks)
	switch {
	case err == nil:
		f.Close()
		mode = fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	case errors.Is(err, fs.ErrNotExist):
		created = true
	default:
		return false, err
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	tmpName := "." + t.name + ".tmp-" + hex.EncodeToString(suffix[:])
	tmp, err := t.dir.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, rootError(p, err)
	}
	defer func() {
		if err != nil {
			_ = t.dir.Remove(tmpName)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		_ = tmp.Close()
		return false, err
	}
	// Chmod on the open file, not on its name, which could be swapped.
	if err = tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return false, err
	}
	if err = tmp.Sync(); err != nil {
		_ = tmp.Close()
		return false, err
	}
	if err = tmp.Close(); err != nil {
		return false, err
	}
	if err = t.dir.Rename(tmpName, t.name); err != nil {
		return false, rootError(p, err)
	}
	return created, nil
}
