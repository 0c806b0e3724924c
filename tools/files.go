package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// MaxReadBytes is the largest file file_read returns whole, and the most
// output it returns for a line range; of a larger file it returns the
// beginning when asked from a line.
const MaxReadBytes = 200 << 10

const (
	// maxPatchBytes is the largest file file_patch edits.
	maxPatchBytes = 10 << 20
	// defaultListDepth is file_list's default depth.
	defaultListDepth = 2
	// maxListDepth bounds file_list's depth.
	maxListDepth = 20
	// maxListEntries bounds file_list's output.
	maxListEntries = 2000
)

// skippedDirs are never listed or searched.
var skippedDirs = map[string]bool{".git": true, "node_modules": true, "vendor": true}

// MatchCountError is returned by file_patch when old_text does not occur
// exactly once in the file.
type MatchCountError struct {
	// Path is the file path as given to the tool.
	Path string
	// Count is the number of (possibly overlapping) occurrences found.
	Count int
}

// Error implements error.
func (e *MatchCountError) Error() string {
	if e.Count == 0 {
		return fmt.Sprintf("file_patch: old_text not found in %s (0 matches); copy it exactly from the file, including whitespace", e.Path)
	}
	return fmt.Sprintf("file_patch: old_text matches %d times in %s; it must match exactly once, so include more surrounding lines", e.Count, e.Path)
}

// FileReadArgs are the arguments of the file_read tool.
type FileReadArgs struct {
	// Path is the file to read.
	Path string `json:"path" jsonschema:"required" jsonschema_description:"File path, relative to the workspace root."`
	// StartLine is the first line to return (1-based); 0 means the first.
	StartLine int `json:"start_line,omitempty" jsonschema:"minimum=1" jsonschema_description:"First line to return (1-based, inclusive). Default: 1."`
	// EndLine is the last line to return (inclusive); 0 means the last.
	EndLine int `json:"end_line,omitempty" jsonschema:"minimum=1" jsonschema_description:"Last line to return (1-based, inclusive). Default: end of file."`
}

// FileRead returns the file_read tool, which returns a text file of the
// workspace with line numbers.
//
// Files over 200 KB are refused unless a line range is given, and files with
// a NUL byte in their first 8 KB are refused as binary. Files with more than
// one hard link are refused with *HardLinkError unless WithHardLinks allows
// them.
func FileRead(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"file_read",
		"Read a text file of the workspace. Each output line is prefixed with its line number and a tab. "+
			"Files larger than 200 KB must be read in parts with start_line/end_line (1-based, inclusive). "+
			"Binary files are refused.",
		func(ctx context.Context, args FileReadArgs) (string, error) {
			return readFile(ctx, ws, cfg, args)
		},
	)
}

func readFile(ctx context.Context, ws *Workspace, cfg *config, args FileReadArgs) (string, error) {
	if args.StartLine < 0 || args.EndLine < 0 {
		return "", errors.New("file_read: start_line and end_line must be positive")
	}
	if args.EndLine > 0 && args.StartLine > args.EndLine {
		return "", fmt.Errorf("file_read: start_line %d is after end_line %d", args.StartLine, args.EndLine)
	}
	rel, err := ws.rootPath(args.Path)
	if err != nil {
		return "", fmt.Errorf("file_read: %w", err)
	}
	root, err := ws.openRoot()
	if err != nil {
		return "", fmt.Errorf("file_read: %w", err)
	}
	f, fi, err := openRegular(root, rel, args.Path, cfg.hardLinks)
	root.Close()
	if errors.Is(err, errIsDir) {
		return "", fmt.Errorf("file_read: %w; use file_list", err)
	}
	if err != nil {
		return "", fmt.Errorf("file_read: %w", err)
	}
	defer f.Close()
	ranged := args.StartLine > 0 || args.EndLine > 0
	if !ranged && fi.Size() > MaxReadBytes {
		return "", fmt.Errorf("file_read: %s is %d bytes, over the 200 KB limit; read it in parts with start_line and end_line, or search it with grep", args.Path, fi.Size())
	}
	binary, err := sniffBinary(f)
	if err != nil {
		return "", fmt.Errorf("file_read: %w", err)
	}
	if binary {
		return "", fmt.Errorf("file_read: %s looks like a binary file (NUL byte in the first 8 KB)", args.Path)
	}

	start := max(args.StartLine, 1)
	var b strings.Builder
	lines, lastShown := 0, 0
	truncated := false
	err = eachLine(f, MaxReadBytes, func(n int, line []byte) bool {
		lines = n
		if n%1024 == 0 && ctx.Err() != nil {
			return false
		}
		if n < start {
			return true
		}
		if args.EndLine > 0 && n > args.EndLine {
			return false
		}
		if b.Len()+len(line) > MaxReadBytes {
			truncated = true
			return false
		}
		fmt.Fprintf(&b, "%6d\t%s\n", n, line)
		lastShown = n
		return true
	})
	if ctxErr := ctx.Err(); ctxErr != nil {
		return "", ctxErr
	}
	if err != nil {
		return "", fmt.Errorf("file_read: %w", err)
	}
	switch {
	case lines == 0:
		return "(empty file)\n", nil
	case start > lines:
		return "", fmt.Errorf("file_read: start_line %d is past the end of %s (%d lines)", start, args.Path, lines)
	case truncated:
		fmt.Fprintf(&b, "[output truncated at 200 KB after line %d; continue with start_line=%d]\n", lastShown, lastShown+1)
	}
	return b.String(), nil
}

// FileListArgs are the arguments of the file_list tool.
type FileListArgs struct {
	// Path is the directory to list; empty means the workspace root.
	Path string `json:"path,omitempty" jsonschema_description:"Directory to list, relative to the workspace root. Default: the root."`
	// Depth is how many levels to descend; 0 means 2.
	Depth int `json:"depth,omitempty" jsonschema:"minimum=1,maximum=20,default=2" jsonschema_description:"How many directory levels to show (1 = only the directory's own entries). Default: 2."`
}

// FileList returns the file_list tool, which prints a directory tree of the
// workspace, directories marked with a trailing '/'.
//
// .git, node_modules and vendor directories are left out, symlinks are shown
// with their target but not followed, and the listing stops after 2,000
// entries.
func FileList(ws *Workspace, opts ...Option) Tool {
	return New(
		"file_list",
		"List a directory of the workspace as an indented tree. Directories end with '/'. "+
			".git, node_modules and vendor are skipped. depth controls how many levels are shown (default 2).",
		func(ctx context.Context, args FileListArgs) (string, error) {
			return listFiles(ctx, ws, args)
		},
	)
}

func listFiles(ctx context.Context, ws *Workspace, args FileListArgs) (string, error) {
	depth := args.Depth
	switch {
	case depth < 0:
		return "", fmt.Errorf("file_list: depth must be positive, got %d", depth)
	case depth == 0:
		depth = defaultListDepth
	case depth > maxListDepth:
		depth = maxListDepth
	}
	dir, err := ws.rootPath(args.Path)
	if err != nil {
		return "", fmt.Errorf("file_list: %w", err)
	}
	root, err := ws.openRoot()
	if err != nil {
		return "", fmt.Errorf("file_list: %w", err)
	}
	defer root.Close()
	// Every directory is opened through the root, so that one swapped for
	// a symlink to the outside after it was listed is refused.
	fsys := root.FS()
	fi, err := fs.Stat(fsys, dir)
	if err != nil {
		return "", fmt.Errorf("file_list: %w", rootError(args.Path, err))
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("file_list: %s is not a directory; use file_read", args.Path)
	}
	var b strings.Builder
	b.WriteString(dir + "/\n")
	entries := 0
	more := false
	var walk func(dir string, level int) error
	walk = func(dir string, level int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		des, err := fs.ReadDir(fsys, dir)
		if err != nil {
			fmt.Fprintf(&b, "%s[unreadable: %v]\n", strings.Repeat("  ", level), rootError(dir, err))
			return nil
		}
		for _, de := range des {
			if de.IsDir() && skippedDirs[de.Name()] {
				continue
			}
			if entries >= maxListEntries {
				more = true
				return nil
			}
			entries++
			indent := strings.Repeat("  ", level)
			switch {
			case de.Type()&fs.ModeSymlink != 0:
				target, _ := root.Readlink(path.Join(dir, de.Name()))
				fmt.Fprintf(&b, "%s%s -> %s\n", indent, de.Name(), target)
			case de.IsDir():
				fmt.Fprintf(&b, "%s%s/\n", indent, de.Name())
				if level+1 < depth {
					if err := walk(path.Join(dir, de.Name()), level+1); err != nil {
						return err
					}
				}
			default:
				fmt.Fprintf(&b, "%s%s\n", indent, de.Name())
			}
		}
		return nil
	}
	if err := walk(dir, 0); err != nil {
		return "", err
	}
	switch {
	case entries == 0:
		b.WriteString("(empty)\n")
	case more:
		fmt.Fprintf(&b, "[listing truncated after %d entries; list a subdirectory or lower depth]\n", maxListEntries)
	}
	return b.String(), nil
}

// FileWriteArgs are the arguments of the file_write tool.
type FileWriteArgs struct {
	// Path is the file to write.
	Path string `json:"path" jsonschema:"required" jsonschema_description:"File path, relative to the workspace root. Missing parent directories are created."`
	// Content is the complete new file content.
	Content string `json:"content" jsonschema:"required" jsonschema_description:"The complete new content of the file."`
}

// FileWrite returns the file_write tool, which creates or replaces a file of
// the workspace.
//
// Parent directories are created; the file is written to a temporary file in
// the same directory and renamed over the target, so readers never see a
// partial file. An existing file keeps its permission bits; new files get
// 0644. Writes into version-control metadata are refused with
// *ProtectedPathError unless WithVCSWrites allows them, and replacing a file
// with more than one hard link with *HardLinkError unless WithHardLinks
// allows it.
func FileWrite(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"file_write",
		"Create a file or replace its whole content. Missing parent directories are created. "+
			"To change part of an existing file prefer file_patch.",
		func(ctx context.Context, args FileWriteArgs) (string, error) {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			t, err := openWriteTarget(ws, cfg, args.Path, true)
			if err != nil {
				return "", fmt.Errorf("file_write: %w", err)
			}
			defer t.Close()
			created, err := t.write(args.Path, []byte(args.Content), cfg.hardLinks)
			if err != nil {
				return "", fmt.Errorf("file_write: %w", err)
			}
			verb := "overwrote"
			if created {
				verb = "created"
			}
			return fmt.Sprintf("%s %s (%d bytes)", verb, t.rel, len(args.Content)), nil
		},
	)
}

// FilePatchArgs are the arguments of the file_patch tool.
type FilePatchArgs struct {
	// Path is the file to edit.
	Path string `json:"path" jsonschema:"required" jsonschema_description:"File path, relative to the workspace root."`
	// OldText is the exact text to replace; it must occur exactly once.
	OldText string `json:"old_text" jsonschema:"required" jsonschema_description:"Exact text to replace (including whitespace and indentation). It must occur exactly once in the file."`
	// NewText replaces OldText.
	NewText string `json:"new_text" jsonschema:"required" jsonschema_description:"Replacement text."`
}

// FilePatch returns the file_patch tool, which replaces the single
// occurrence of old_text in a file with new_text and reports the 1-based
// line where it matched.
//
// If old_text occurs zero times or more than once (overlapping occurrences
// included) the file is left alone and *MatchCountError is returned. The
// file is rewritten atomically, keeping its mode. Like file_write it refuses
// version-control metadata and files with more than one hard link unless
// WithVCSWrites and WithHardLinks allow them.
func FilePatch(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"file_patch",
		"Edit a file by replacing old_text with new_text. old_text must match the file exactly (whitespace included) "+
			"and occur exactly once; include enough surrounding lines to make it unique. "+
			"Returns the line number where the replacement starts.",
		func(ctx context.Context, args FilePatchArgs) (string, error) {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			rel, line, err := patchFile(ws, cfg, args.Path, args.OldText, args.NewText)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("patched %s: replaced 1 occurrence starting at line %d", rel, line), nil
		},
	)
}

// patchFile replaces the single occurrence of oldText in the file at p (a
// path given to the tool) and returns the file's path relative to the root
// and the 1-based line where the occurrence started.
func patchFile(ws *Workspace, cfg *config, p, oldText, newText string) (string, int, error) {
	if oldText == "" {
		return "", 0, errors.New("file_patch: old_text is empty")
	}
	t, err := openWriteTarget(ws, cfg, p, false)
	if err != nil {
		return "", 0, fmt.Errorf("file_patch: %w", err)
	}
	defer t.Close()
	data, _, err := t.read(p, cfg.hardLinks, maxPatchBytes)
	if err != nil {
		return "", 0, fmt.Errorf("file_patch: %w", err)
	}
	if looksBinary(data) {
		return "", 0, fmt.Errorf("file_patch: %s looks like a binary file (NUL byte in the first 8 KB)", p)
	}
	content := string(data)
	count := countOverlapping(content, oldText)
	if count != 1 {
		return "", 0, &MatchCountError{Path: p, Count: count}
	}
	idx := strings.Index(content, oldText)
	patched := content[:idx] + newText + content[idx+len(oldText):]
	if _, err := t.write(p, []byte(patched), cfg.hardLinks); err != nil {
		return "", 0, fmt.Errorf("file_patch: %w", err)
	}
	return t.rel, 1 + strings.Count(content[:idx], "\n"), nil
}

// countOverlapping counts the occurrences of sub in s, overlapping ones
// included.
func countOverlapping(s, sub string) int {
	n := 0
	for i := 0; i <= len(s)-len(sub); {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			break
		}
		n++
		i += j + 1
	}
	return n
}
