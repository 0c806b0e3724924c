package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"

	gitignore "github.com/sabhiram/go-gitignore"
)

const (
	// defaultGrepResults is grep's default max_results.
	defaultGrepResults = 200
	// maxGrepResults bounds grep's max_results.
	maxGrepResults = 2000
	// maxGrepFileBytes is the largest file grep searches.
	maxGrepFileBytes = 10 << 20
	// maxGrepLineChars bounds the text shown for one matching line.
	maxGrepLineChars = 300
	// maxScanLineBytes bounds how much of one line is matched.
	maxScanLineBytes = 1 << 20
)

// GrepArgs are the arguments of the grep tool.
type GrepArgs struct {
	// Pattern is a Go regular expression (RE2 syntax).
	Pattern string `json:"pattern" jsonschema:"required" jsonschema_description:"Regular expression in Go RE2 syntax, matched against each line. Use (?i) for case-insensitive search."`
	// Path is the directory or file to search; empty means the root.
	Path string `json:"path,omitempty" jsonschema_description:"Directory or file to search, relative to the workspace root. Default: the whole workspace."`
	// MaxResults bounds the number of matching lines; 0 means 200.
	MaxResults int `json:"max_results,omitempty" jsonschema:"minimum=1,maximum=2000,default=200" jsonschema_description:"Maximum number of matching lines to return. Default: 200."`
}

// Grep returns the grep tool, which searches the workspace's text files for
// a regular expression and returns "path:line: text" lines.
//
// The walk honours .gitignore files (those between the root and the searched
// directory and those below it), skips .git, node_modules and vendor
// directories, symlinks, binary files, files over 10 MB and files with more
// than one hard link (unless WithHardLinks allows them). A file named
// explicitly in path is searched even if it is ignored. Every file and
// directory is opened through an os.Root, so the walk cannot be led outside
// the workspace.
func Grep(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"grep",
		"Search the workspace's text files for a regular expression (Go RE2 syntax) and return matching lines as path:line: text. "+
			"Files ignored by .gitignore, binary files and .git/node_modules/vendor are skipped.",
		func(ctx context.Context, args GrepArgs) (string, error) {
			return grep(ctx, ws, cfg, args)
		},
	)
}

func grep(ctx context.Context, ws *Workspace, cfg *config, args GrepArgs) (string, error) {
	if args.Pattern == "" {
		return "", errors.New("grep: pattern is empty")
	}
	re, err := regexp.Compile(args.Pattern)
	if err != nil {
		return "", fmt.Errorf("grep: invalid pattern: %w", err)
	}
	limit := args.MaxResults
	switch {
	case limit < 0:
		return "", fmt.Errorf("grep: max_results must be positive, got %d", limit)
	case limit == 0:
		limit = defaultGrepResults
	case limit > maxGrepResults:
		limit = maxGrepResults
	}
	start, err := ws.rootPath(args.Path)
	if err != nil {
		return "", fmt.Errorf("grep: %w", err)
	}
	root, err := ws.openRoot()
	if err != nil {
		return "", fmt.Errorf("grep: %w", err)
	}
	defer root.Close()
	fsys := root.FS()
	fi, err := fs.Stat(fsys, start)
	if err != nil {
		return "", fmt.Errorf("grep: %w", rootError(args.Path, err))
	}

	var b strings.Builder
	matches := 0
	full := false
	// searchFile searches the file name; explicit reports problems as
	// errors instead of skipping the file.
	searchFile := func(name string, explicit bool) error {
		f, fi, err := openRegular(root, name, name, cfg.hardLinks)
		if err != nil {
			if explicit {
				return err
			}
			return nil // unreadable, special or hard-linked files are skipped
		}
		defer f.Close()
		if fi.Size() > maxGrepFileBytes && !explicit {
			return nil
		}
		if binary, err := sniffBinary(f); err != nil || binary {
			return nil
		}
		return eachLine(f, maxScanLineBytes, func(n int, line []byte) bool {
			if !re.Match(line) {
				return true
			}
			if matches >= limit {
				full = true
				return false
			}
			matches++
			fmt.Fprintf(&b, "%s:%d: %s\n", name, n, truncateLine(string(line), maxGrepLineChars))
			return true
		})
	}

	if !fi.IsDir() {
		if err := searchFile(start, true); err != nil {
			return "", fmt.Errorf("grep: %w", rootError(args.Path, err))
		}
	} else {
		ig := newIgnorer(root, cfg.hardLinks)
		ig.loadAncestors(start)
		err = fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			if err != nil {
				if d != nil && d.IsDir() && p != start {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if p != start && (skippedDirs[d.Name()] || ig.ignored(p, true)) {
					return fs.SkipDir
				}
				ig.load(p)
				return nil
			}
			if !d.Type().IsRegular() || ig.ignored(p, false) {
				return nil
			}
			if err := searchFile(p, false); err != nil {
				return err
			}
			if full {
				return fs.SkipAll
			}
			return nil
		})
		if ctxErr := ctx.Err(); ctxErr != nil {
			return "", ctxErr
		}
		if err != nil {
			return "", fmt.Errorf("grep: %w", err)
		}
	}
	if matches == 0 {
		return "no matches\n", nil
	}
	if full {
		fmt.Fprintf(&b, "[stopped after %d matches; narrow the pattern or path, or raise max_results]\n", limit)
	}
	return b.String(), nil
}

// ignorer applies the .gitignore files found in the workspace. Paths are
// slash-separated and relative to the workspace root ("." is the root).
type ignorer struct {
	root      *os.Root
	hardLinks bool
	rules     map[string]*gitignore.GitIgnore // directory -> its .gitignore
}

func newIgnorer(root *os.Root, hardLinks bool) *ignorer {
	return &ignorer{root: root, hardLinks: hardLinks, rules: make(map[string]*gitignore.GitIgnore)}
}

// load reads dir/.gitignore, if any.
func (ig *ignorer) load(dir string) {
	if _, done := ig.rules[dir]; done {
		return
	}
	ig.rules[dir] = compileGitignore(ig.root, path.Join(dir, ".gitignore"), ig.hardLinks)
}

// loadAncestors loads the .gitignore files of the root and of every
// directory between it and dir (exclusive).
func (ig *ignorer) loadAncestors(dir string) {
	if dir == "." {
		return
	}
	for d := path.Dir(dir); ; d = path.Dir(d) {
		ig.load(d)
		if d == "." {
			break
		}
	}
}

// ignored reports whether a .gitignore of one of p's ancestor directories
// matches p.
func (ig *ignorer) ignored(p string, isDir bool) bool {
	for d := path.Dir(p); ; d = path.Dir(d) {
		if gi := ig.rules[d]; gi != nil {
			rel := p
			if d != "." {
				rel = strings.TrimPrefix(p, d+"/")
			}
			if isDir {
				rel += "/"
			}
			if gi.MatchesPath(rel) {
				return true
			}
		}
		if d == "." {
			break
		}
	}
	return false
}

// maxGitignoreBytes bounds the .gitignore files read.
const maxGitignoreBytes = 1 << 20

// compileGitignore parses the .gitignore file name of root; a missing,
// special or broken file yields nil.
func compileGitignore(root *os.Root, name string, hardLinks bool) (gi *gitignore.GitIgnore) {
	f, _, err := openRegular(root, name, name, hardLinks)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxGitignoreBytes))
	if err != nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			gi = nil
		}
	}()
	return gitignore.CompileIgnoreLines(strings.Split(string(data), "\n")...)
}
