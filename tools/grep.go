package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
// directories, symlinks, binary files and files over 10 MB. A file named
// explicitly in path is searched even if it is ignored.
func Grep(ws *Workspace, opts ...Option) Tool {
	return New(
		"grep",
		"Search the workspace's text files for a regular expression (Go RE2 syntax) and return matching lines as path:line: text. "+
			"Files ignored by .gitignore, binary files and .git/node_modules/vendor are skipped.",
		func(ctx context.Context, args GrepArgs) (string, error) {
			return grep(ctx, ws, args)
		},
	)
}

func grep(ctx context.Context, ws *Workspace, args GrepArgs) (string, error) {
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
	start, err := ws.Resolve(args.Path)
	if err != nil {
		return "", fmt.Errorf("grep: %w", err)
	}
	fi, err := os.Stat(start)
	if err != nil {
		return "", fmt.Errorf("grep: %w", err)
	}

	var b strings.Builder
	matches := 0
	full := false
	searchFile := func(path string) error {
		f, err := os.Open(path)
		if err != nil {
			return nil // unreadable files are skipped
		}
		defer f.Close()
		if binary, err := sniffBinary(f); err != nil || binary {
			return nil
		}
		rel := ws.rel(path)
		return eachLine(f, maxScanLineBytes, func(n int, line []byte) bool {
			if !re.Match(line) {
				return true
			}
			if matches >= limit {
				full = true
				return false
			}
			matches++
			fmt.Fprintf(&b, "%s:%d: %s\n", rel, n, truncateLine(string(line), maxGrepLineChars))
			return true
		})
	}

	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return "", fmt.Errorf("grep: %s is not a regular file", args.Path)
		}
		if err := searchFile(start); err != nil {
			return "", fmt.Errorf("grep: %w", err)
		}
	} else {
		ig := newIgnorer(ws.Root())
		ig.loadAncestors(start)
		err = filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			if err != nil {
				if d != nil && d.IsDir() && path != start {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if path != start && (skippedDirs[d.Name()] || ig.ignored(path, true)) {
					return fs.SkipDir
				}
				ig.load(path)
				return nil
			}
			if !d.Type().IsRegular() || ig.ignored(path, false) {
				return nil
			}
			if info, err := d.Info(); err != nil || info.Size() > maxGrepFileBytes {
				return nil
			}
			if err := searchFile(path); err != nil {
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

// ignorer applies the .gitignore files found in the workspace.
type ignorer struct {
	root  string
	rules map[string]*gitignore.GitIgnore // directory -> its .gitignore
}

func newIgnorer(root string) *ignorer {
	return &ignorer{root: root, rules: make(map[string]*gitignore.GitIgnore)}
}

// load reads dir/.gitignore, if any.
func (ig *ignorer) load(dir string) {
	if _, done := ig.rules[dir]; done {
		return
	}
	ig.rules[dir] = compileGitignore(filepath.Join(dir, ".gitignore"))
}

// loadAncestors loads the .gitignore files of the root and of every
// directory between it and dir (exclusive).
func (ig *ignorer) loadAncestors(dir string) {
	for d := filepath.Dir(dir); within(ig.root, d); d = filepath.Dir(d) {
		ig.load(d)
		if d == ig.root {
			break
		}
	}
}

// ignored reports whether a .gitignore of one of path's ancestor
// directories matches path.
func (ig *ignorer) ignored(path string, isDir bool) bool {
	for d := filepath.Dir(path); within(ig.root, d); d = filepath.Dir(d) {
		if gi := ig.rules[d]; gi != nil {
			rel, err := filepath.Rel(d, path)
			if err == nil {
				rel = filepath.ToSlash(rel)
				if isDir {
					rel += "/"
				}
				if gi.MatchesPath(rel) {
					return true
				}
			}
		}
		if d == ig.root {
			break
		}
	}
	return false
}

// compileGitignore parses a .gitignore file; a missing or broken file
// yields nil.
func compileGitignore(path string) (gi *gitignore.GitIgnore) {
	data, err := os.ReadFile(path)
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
