package tools

import "fmt"

// maxWorkspaceFileBytes bounds Workspace.ReadFile.
const maxWorkspaceFileBytes = 10 << 20

// ReadFile returns the content of the regular file p of the workspace (a
// path as a tool is given it), read through an os.Root on the workspace
// root with the file tools' checks: a path leaving the workspace is
// refused with *OutsideWorkspaceError, a file with several hard links with
// *HardLinkError (unless WithHardLinks allows it), FIFOs, devices and
// files over 10 MB too. Reading version-control metadata is allowed. It
// is for tools written outside this package.
func (w *Workspace) ReadFile(p string, opts ...Option) ([]byte, error) {
	cfg := newConfig(opts)
	cfg.vcsWrites = true // reading metadata is allowed
	t, err := openWriteTarget(w, cfg, p, false)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	data, _, err := t.read(p, cfg.hardLinks, maxWorkspaceFileBytes)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return data, nil
}

// WriteFile replaces (or creates, with its parent directories) the file p
// of the workspace with data, as file_write does: through an os.Root,
// atomically (a temporary file renamed over it, so a symlink or hard link
// at p is replaced, not written through), keeping an existing file's mode,
// refusing version-control metadata with *ProtectedPathError unless
// WithVCSWrites allows it. It reports whether the file was created. It is
// for tools written outside this package.
func (w *Workspace) WriteFile(p string, data []byte, opts ...Option) (created bool, err error) {
	cfg := newConfig(opts)
	t, err := openWriteTarget(w, cfg, p, true)
	if err != nil {
		return false, err
	}
	defer t.Close()
	return t.write(p, data, cfg.hardLinks)
}
