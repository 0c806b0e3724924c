package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxFindResults bounds file_find's output.
const maxFindResults = 1000

// FileAppendArgs are the arguments of the file_append tool.
type FileAppendArgs struct {
	// Path is the file to append to; it is created if missing.
	Path string `json:"path" jsonschema:"required" jsonschema_description:"File path, relative to the workspace root. Created (with its parent directories) if missing."`
	// Content is appended as is.
	Content string `json:"content" jsonschema:"required" jsonschema_description:"Text to append at the end of the file."`
}

// FileAppend returns the file_append tool, which adds text at the end of a
// file of the workspace, creating it if needed.
//
// The file is rewritten atomically (like file_write), keeping its mode, so a
// reader never sees half an append; the same refusals apply: version-control
// metadata, files with more than one hard link, binary files, files over
// 10 MB.
func FileAppend(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"file_append",
		"Append text at the end of a file of the workspace; the file is created if it does not exist.",
		func(ctx context.Context, args FileAppendArgs) (string, error) {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			t, err := openWriteTarget(ws, cfg, args.Path, true)
			if err != nil {
				return "", fmt.Errorf("file_append: %w", err)
			}
			defer t.Close()
			data, _, err := t.read(args.Path, cfg.hardLinks, maxPatchBytes)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("file_append: %w", err)
			}
			if looksBinary(data) {
				return "", fmt.Errorf("file_append: %s looks like a binary file (NUL byte in the first 8 KB)", args.Path)
			}
			if _, err := t.write(args.Path, append(data, args.Content...), cfg.hardLinks); err != nil {
				return "", fmt.Errorf("file_append: %w", err)
			}
			return fmt.Sprintf("appended %d bytes to %s (now %d bytes)", len(args.Content), t.rel, len(data)+len(args.Content)), nil
		},
	)
}

// FileDeleteArgs are the arguments of the file_delete tool.
type FileDeleteArgs struct {
	// Path is the file (or empty directory) to delete.
	Path string `json:"path" jsonschema:"required" jsonschema_description:"File or empty directory to delete, relative to the workspace root."`
}

// FileDelete returns the file_delete tool, which deletes a file or an empty
// directory of the workspace. The workspace root and version-control
// metadata are refused (the latter unless WithVCSWrites allows it). A
// symlink named by the path is deleted itself, not its target (symlinks
// in the directories above it are resolved, and must stay inside).
func FileDelete(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"file_delete",
		"Delete a file or an empty directory of the workspace.",
		func(ctx context.Context, args FileDeleteArgs) (string, error) {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			rel, err := entryPath(ws, cfg, args.Path)
			if err != nil {
				return "", fmt.Errorf("file_delete: %w", err)
			}
			root, err := ws.openRoot()
			if err != nil {
				return "", fmt.Errorf("file_delete: %w", err)
			}
			defer root.Close()
			if err := root.Remove(rel); err != nil {
				return "", fmt.Errorf("file_delete: %w", rootError(args.Path, err))
			}
			return "deleted " + rel, nil
		},
	)
}

// FileTransferArgs are the arguments of the file_copy and file_move tools.
type FileTransferArgs struct {
	// Source is the file to copy or move.
	Source string `json:"source" jsonschema:"required" jsonschema_description:"Existing file, relative to the workspace root."`
	// Destination is the new path; missing parent directories are created.
	Destination string `json:"destination" jsonschema:"required" jsonschema_description:"New path, relative to the workspace root; missing parent directories are created. An existing file there is replaced."`
}

// FileCopy returns the file_copy tool, which copies a regular file of the
// workspace to another path of it (at most 10 MB; the copy is written
// atomically, with the source's permission bits when it is new).
func FileCopy(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"file_copy",
		"Copy a file of the workspace to another path of the workspace.",
		func(ctx context.Context, args FileTransferArgs) (string, error) {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			src, err := openWriteTarget(ws, cfg, args.Source, false)
			if err != nil {
				return "", fmt.Errorf("file_copy: %w", err)
			}
			defer src.Close()
			data, _, err := src.read(args.Source, cfg.hardLinks, maxPatchBytes)
			if err != nil {
				return "", fmt.Errorf("file_copy: %w", err)
			}
			dst, err := openWriteTarget(ws, cfg, args.Destination, true)
			if err != nil {
				return "", fmt.Errorf("file_copy: %w", err)
			}
			defer dst.Close()
			if dst.rel == src.rel {
				return "", fmt.Errorf("file_copy: %s and %s are the same file", args.Source, args.Destination)
			}
			if _, err := dst.write(args.Destination, data, cfg.hardLinks); err != nil {
				return "", fmt.Errorf("file_copy: %w", err)
			}
			return fmt.Sprintf("copied %s to %s (%d bytes)", src.rel, dst.rel, len(data)), nil
		},
	)
}

// FileMove returns the file_move tool, which renames a file or directory of
// the workspace (a symlink is moved itself, not its target), creating the
// destination's parent directories. Moving
// into or out of version-control metadata is refused unless WithVCSWrites
// allows it.
func FileMove(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"file_move",
		"Move (rename) a file or directory of the workspace to another path of the workspace.",
		func(ctx context.Context, args FileTransferArgs) (string, error) {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			src, err := entryPath(ws, cfg, args.Source)
			if err != nil {
				return "", fmt.Errorf("file_move: %w", err)
			}
			dst, err := openWriteTarget(ws, cfg, args.Destination, true)
			if err != nil {
				return "", fmt.Errorf("file_move: %w", err)
			}
			dst.Close()
			root, err := ws.openRoot()
			if err != nil {
				return "", fmt.Errorf("file_move: %w", err)
			}
			defer root.Close()
			if _, err := root.Lstat(src); err != nil {
				return "", fmt.Errorf("file_move: %w", rootError(args.Source, err))
			}
			if err := root.Rename(src, dst.rel); err != nil {
				return "", fmt.Errorf("file_move: %w", rootError(args.Destination, err))
			}
			return fmt.Sprintf("moved %s to %s", src, dst.rel), nil
		},
	)
}

// FileFindArgs are the arguments of the file_find tool.
type FileFindArgs struct {
	// Pattern is a path.Match pattern matched against each file's name, or
	// against its whole relative path when it contains a "/".
	Pattern string `json:"pattern" jsonschema:"required" jsonschema_description:"Glob pattern such as *.py or src/*/test_*.py; without a slash it is matched against file names."`
	// Dir limits the search to a directory.
	Dir string `json:"dir,omitempty" jsonschema_description:"Directory to search, relative to the workspace root. Default: the root."`
}

// FileFind returns the file_find tool, which lists the files of the
// workspace whose name (or relative path) matches a glob pattern, in
// lexical order, skipping .git, node_modules and vendor, at most 1000.
func FileFind(ws *Workspace, opts ...Option) Tool {
	return New(
		"file_find",
		"Find files of the workspace by glob pattern (e.g. *.py, or src/*/main.go to match whole paths).",
		func(ctx context.Context, args FileFindArgs) (string, error) {
			return findFiles(ctx, ws, args)
		},
	)
}

func findFiles(ctx context.Context, ws *Workspace, args FileFindArgs) (string, error) {
	if _, err := path.Match(args.Pattern, ""); err != nil {
		return "", fmt.Errorf("file_find: bad pattern %q: %w", args.Pattern, err)
	}
	rel, err := ws.rootPath(args.Dir)
	if err != nil {
		return "", fmt.Errorf("file_find: %w", err)
	}
	root, err := ws.openRoot()
	if err != nil {
		return "", fmt.Errorf("file_find: %w", err)
	}
	defer root.Close()
	whole := strings.Contains(args.Pattern, "/")
	var found []string
	truncated := false
	err = fs.WalkDir(root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if d.IsDir() {
			if p != rel && skippedDirs[d.Name()] {
				return fs.SkipDir
			}
			return nil
		}
		subject := d.Name()
		if whole {
			subject = p
		}
		if ok, _ := path.Match(args.Pattern, subject); ok {
			if len(found) == maxFindResults {
				truncated = true
				return fs.SkipAll
			}
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("file_find: %s does not exist", args.Dir)
		}
		return "", fmt.Errorf("file_find: %w", err)
	}
	if len(found) == 0 {
		return "no files match " + args.Pattern, nil
	}
	out := strings.Join(found, "\n")
	if truncated {
		out += fmt.Sprintf("\n[more than %d files match; narrow the pattern or the directory]", maxFindResults)
	}
	return out, nil
}

// FileReplaceArgs are the arguments of the file_replace tool.
type FileReplaceArgs struct {
	// Path is the file to edit.
	Path string `json:"path" jsonschema:"required" jsonschema_description:"File path, relative to the workspace root."`
	// Old is the text to replace, every occurrence of it.
	Old string `json:"old" jsonschema:"required" jsonschema_description:"Exact text to replace; every occurrence is replaced."`
	// New replaces it.
	New string `json:"new" jsonschema_description:"Replacement text (may be empty)."`
}

// FileReplace returns the file_replace tool, which replaces every
// occurrence of a text in a file (file_patch replaces exactly one) and
// reports how many it replaced; a text that does not occur is a
// *MatchCountError. The file is rewritten atomically like file_write.
func FileReplace(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"file_replace",
		"Replace every occurrence of a text in a file of the workspace.",
		func(ctx context.Context, args FileReplaceArgs) (string, error) {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			if args.Old == "" {
				return "", errors.New("file_replace: old is empty")
			}
			t, err := openWriteTarget(ws, cfg, args.Path, false)
			if err != nil {
				return "", fmt.Errorf("file_replace: %w", err)
			}
			defer t.Close()
			data, _, err := t.read(args.Path, cfg.hardLinks, maxPatchBytes)
			if err != nil {
				return "", fmt.Errorf("file_replace: %w", err)
			}
			if looksBinary(data) {
				return "", fmt.Errorf("file_replace: %s looks like a binary file (NUL byte in the first 8 KB)", args.Path)
			}
			n := strings.Count(string(data), args.Old)
			if n == 0 {
				return "", fmt.Errorf("file_replace: %q does not occur in %s", args.Old, args.Path)
			}
			out := strings.ReplaceAll(string(data), args.Old, args.New)
			if _, err := t.write(args.Path, []byte(out), cfg.hardLinks); err != nil {
				return "", fmt.Errorf("file_replace: %w", err)
			}
			return fmt.Sprintf("replaced %d occurrence(s) in %s", n, t.rel), nil
		},
	)
}

// entryPath returns the path relative to the root of the directory entry p
// names, for tools that act on the entry itself (delete, the source of a
// move): the directories above it are resolved like any path, its last
// component is not, so that a symlink is acted on rather than its target.
// The root itself and version-control metadata (unless cfg allows it) are
// refused.
func entryPath(ws *Workspace, cfg *config, p string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(p))
	dir, base := filepath.Split(clean)
	if base == "" || base == "." || base == ".." || strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%s %w", p, errIsDir)
	}
	dirRel, err := ws.rootPath(dir)
	if err != nil {
		return "", err
	}
	rel := path.Join(dirRel, base)
	if rel == "." {
		return "", fmt.Errorf("%s %w", p, errIsDir)
	}
	if !cfg.vcsWrites {
		if c, bad := vcsComponent(rel); bad {
			return "", &ProtectedPathError{Path: p, Component: c}
		}
	}
	return rel, nil
}

// FileOps returns the file tools that complement Coding's: file_append,
// file_delete, file_copy, file_move, file_find and file_replace.
func FileOps(ws *Workspace, opts ...Option) []Tool {
	return []Tool{FileAppend(ws, opts...), FileDelete(ws, opts...), FileCopy(ws, opts...), FileMove(ws, opts...), FileFind(ws, opts...), FileReplace(ws, opts...)}
}
