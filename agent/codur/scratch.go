package codur

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Bounds of a scratch copy of the workspace.
const (
	maxCopyFiles = 2000
	maxCopyBytes = 50 << 20
)

// ErrWorkspaceTooLarge is returned when the program cannot be run in a
// scratch copy: the workspace, and the program's own directory too, hold
// more than 2000 files or 50 MB.
var ErrWorkspaceTooLarge = errors.New("codur: workspace too large for a scratch copy")

// vcsDirs are not copied: version control, installed dependencies and
// caches (a virtual environment is used through its absolute paths).
var vcsDirs = map[string]struct{}{
	".git": {}, ".hg": {}, ".svn": {}, ".jj": {}, ".bzr": {}, "node_modules": {},
	".venv": {}, "venv": {}, "__pycache__": {}, ".mypy_cache": {}, ".pytest_cache": {}, ".ruff_cache": {}, ".tox": {},
}

// scratch is a temporary copy of a verifier's directory the program runs
// in, so that its runs — and the repair candidates — never touch the
// user's files, and so that it does not find the expected output there.
type scratch struct {
	// Dir is the copy.
	Dir string
	// Partial reports a copy of the program's own directory only (the
	// workspace was too large to copy whole).
	Partial bool
}

// newScratch copies v.Dir into a new temporary directory, without the
// expected output files (expected.txt, v.ExpectedFile and v.Protected): the whole tree
// when it is within the bounds, else the regular files of the program's
// own directory, at the same place. It fails with ErrWorkspaceTooLarge
// when neither fits. The caller removes the copy with Close.
func newScratch(v *Verifier) (*scratch, error) {
	hidden := map[string]struct{}{"expected.txt": {}}
	for _, p := range v.protected() {
		hidden[p] = struct{}{}
	}
	for _, partial := range []bool{false, true} {
		if partial && v.Program == "" {
			break
		}
		tmp, err := os.MkdirTemp("", "codur-run-")
		if err != nil {
			return nil, fmt.Errorf("codur: scratch copy: %w", err)
		}
		if partial {
			err = copyDirFiles(v.Dir, filepath.Dir(filepath.Clean(v.Program)), tmp, hidden)
		} else {
			err = copyTree(v.Dir, tmp, hidden)
		}
		if err == nil {
			return &scratch{Dir: tmp, Partial: partial}, nil
		}
		os.RemoveAll(tmp)
		if !errors.Is(err, ErrWorkspaceTooLarge) {
			return nil, fmt.Errorf("codur: scratch copy: %w", err)
		}
	}
	return nil, ErrWorkspaceTooLarge
}

// Close removes the copy.
func (s *scratch) Close() error { return os.RemoveAll(s.Dir) }

// budget counts what a copy took.
type budget struct {
	files int
	bytes int64
}

func (b *budget) take(size int64) error {
	b.files++
	b.bytes += size
	if b.files > maxCopyFiles || b.bytes > maxCopyBytes {
		return ErrWorkspaceTooLarge
	}
	return nil
}

// copyTree copies the regular files and directories of src into dst,
// skipping version-control metadata, symlinks, special files, what cannot
// be read and the hidden paths; it fails with ErrWorkspaceTooLarge past
// the bounds.
func copyTree(src, dst string, hidden map[string]struct{}) error {
	var b budget
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == src || d == nil {
				return err
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // unreadable: the program would not read it either
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			if _, vcs := vcsDirs[d.Name()]; vcs {
				return filepath.SkipDir
			}
			return os.Mkdir(filepath.Join(dst, rel), 0o755)
		}
		if _, hide := hidden[rel]; hide || !d.Type().IsRegular() {
			return nil
		}
		return copyFile(p, filepath.Join(dst, rel), d, &b)
	})
}

// copyDirFiles copies the regular files directly in src/sub (not its
// subdirectories) to dst/sub.
func copyDirFiles(src, sub, dst string, hidden map[string]struct{}) error {
	if !filepath.IsLocal(sub) {
		return fmt.Errorf("program directory %q is outside the workspace", sub)
	}
	entries, err := os.ReadDir(filepath.Join(src, sub))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dst, sub), 0o755); err != nil {
		return err
	}
	var b budget
	for _, e := range entries {
		rel := filepath.Join(sub, e.Name())
		if _, hide := hidden[rel]; hide || !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(src, rel), filepath.Join(dst, rel), e, &b); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string, d fs.DirEntry, b *budget) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	if err := b.take(info.Size()); err != nil {
		return err
	}
	data, err := os.ReadFile(from)
	if errors.Is(err, fs.ErrPermission) {
		return nil // unreadable: the program would not read it either
	} else if err != nil {
		return err
	}
	return os.WriteFile(to, data, info.Mode().Perm())
}
