package tools

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// LookPathOutside searches the directories of the PATH list path for the
// executable name, as exec.LookPath searches $PATH, skipping the entries
// that are relative or lie inside dir (symbolic links resolved), and any
// match whose symbolic links resolve into dir. It is how a check finds the
// toolchain (go, python, pytest, npm) of a project a model edits: a
// program planted in the project — a bin/go printing passing results,
// found first through a PATH entry such as direnv's PATH_add bin — is
// never taken for it.
//
// A name holding a path separator is taken as it is when it is absolute
// and outside dir, and refused otherwise. When nothing is found the
// error is an *exec.Error wrapping exec.ErrNotFound, as exec.LookPath's.
func LookPathOutside(path, dir, name string) (string, error) {
	notFound := &exec.Error{Name: name, Err: exec.ErrNotFound}
	in := newInsideDir(dir)
	if strings.ContainsRune(name, filepath.Separator) {
		if filepath.IsAbs(name) && executable(name) && !in.holds(name) {
			return name, nil
		}
		return "", notFound
	}
	if name == "" {
		return "", notFound
	}
	for _, entry := range filepath.SplitList(in.pathList(path)) {
		if p := filepath.Join(entry, name); executable(p) && !in.holds(p) {
			return p, nil
		}
	}
	return "", notFound
}

// executable reports whether p is a regular file someone may execute.
func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// PathListOutside returns the PATH list path without its entries that
// are empty, relative, or inside dir (symbolic links resolved): the PATH
// of a check's commands, so that a name they run is never a program of
// the project in dir.
func PathListOutside(path, dir string) string { return newInsideDir(dir).pathList(path) }

// insideDir tells the paths inside a directory, as written or with the
// symbolic links of both resolved; the directory is resolved once.
type insideDir struct {
	abs, real string
	bad       bool // the directory has no absolute form: everything is inside
}

func newInsideDir(dir string) insideDir {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return insideDir{bad: true}
	}
	abs = filepath.Clean(abs)
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		real = abs
	}
	return insideDir{abs: abs, real: real}
}

// pathList returns the PATH list path without its entries that are empty,
// relative, or inside the directory.
func (in insideDir) pathList(path string) string {
	var kept []string
	for _, entry := range filepath.SplitList(path) {
		if entry == "" || !filepath.IsAbs(entry) || in.holds(entry) {
			continue
		}
		kept = append(kept, entry)
	}
	return strings.Join(kept, string(filepath.ListSeparator))
}

// holds reports whether p lies inside the directory.
func (in insideDir) holds(p string) bool {
	if in.bad || within(in.abs, filepath.Clean(p)) {
		return true
	}
	realP, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		realP = p
	} else if err != nil {
		return true
	}
	return within(in.real, realP) || within(in.abs, realP)
}
