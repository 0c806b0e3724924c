package repolinks

import (
	"bytes"
	"errors"
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Problem is one reference that leaves the repository or names nothing in
// it.
type Problem struct {
	// File is the slash-separated path, relative to the repository root,
	// of the file that holds the reference.
	File string
	// Line is the 1-based line of the reference.
	Line int
	// Ref is the reference as written.
	Ref string
	// Why says what is wrong with it.
	Why string
}

// String formats p as file:line: ref: why.
func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Ref, p.Why)
}

// The reasons a reference is reported.
const (
	whyEscapes   = "leaves the repository root"
	whyMissing   = "names nothing in the repository"
	whyNoHeading = "names a heading the file does not have"
)

// Files lists the files of the repository at root that [Check] reads, as
// sorted slash-separated paths relative to root: the files git tracks and
// the untracked ones it does not ignore, or, where git cannot answer (no
// git, not a checkout), every file under root outside .git and
// node_modules. Files listed by git but deleted from the work tree are
// left out.
func Files(root string) ([]string, error) {
	names, err := gitFiles(root)
	if err != nil {
		names, err = walkFiles(root)
		if err != nil {
			return nil, err
		}
	}
	var out []string
	for _, n := range names {
		if !checked(n) {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(n))); err != nil {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// gitFiles asks git for the tracked and untracked, not ignored, files.
func gitFiles(root string) ([]string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return nil, err
	}
	var names []string
	for n := range strings.SplitSeq(string(out), "\x00") {
		if n != "" {
			names = append(names, n)
		}
	}
	return names, nil
}

// walkFiles lists every file under root outside .git and node_modules.
func walkFiles(root string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == ".git" || d.Name() == "node_modules") {
				return fs.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	return names, err
}

// checked reports whether [Check] reads the file rel.
func checked(rel string) bool {
	if strings.HasPrefix(rel, ".ci/") {
		return true
	}
	switch path.Ext(rel) {
	case ".md", ".go", ".sh", ".yaml", ".yml", ".mjs":
		return true
	}
	return false
}

// Check reads the file rel (slash-separated, relative to root) and returns
// the problems of its references, in line order. Markdown files have their
// links and their text checked, Go files their comments, other files all
// their text.
func Check(root, rel string) ([]Problem, error) {
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	c := checker{root: root, file: rel}
	switch path.Ext(rel) {
	case ".md":
		c.markdown(src)
	case ".go":
		c.goComments(src)
	default:
		for i, line := range strings.Split(string(src), "\n") {
			c.paths(i+1, line)
		}
	}
	return c.problems, nil
}

// checker collects the problems of one file.
type checker struct {
	root     string
	file     string
	problems []Problem
}

func (c *checker) report(line int, ref, why string) {
	c.problems = append(c.problems, Problem{File: c.file, Line: line, Ref: ref, Why: why})
}

var (
	// mdLink matches an inline link or image, [text](target "title"); the
	// target is group 1.
	mdLink = regexp.MustCompile(`\]\(\s*(<[^>]*>|[^\s()]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// mdRefDef matches a link reference definition, [label]: target.
	mdRefDef = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	// codeSpan matches an inline code span.
	codeSpan = regexp.MustCompile("(`+)[^`]+?(`+)")
	// fence opens or closes a fenced code block.
	fence = regexp.MustCompile("^ {0,3}(```|~~~)")
	// heading matches an ATX heading; its text is group 1.
	heading = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	// scheme starts a URL (https:, mailto:, …).
	scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	// dotdotRef matches a path starting with "../" at the start of a word
	// (not inside a URL or after a variable such as $PWD/); group 1.
	dotdotRef = regexp.MustCompile(`(?:^|[^\w./$~@:-])((?:\.\./)+[\w.@+-][^\s"'` + "`" + `()<>\[\]{},;|*]*)`)
	// fileRef matches a relative path with at least one directory to a
	// Markdown, Go, shell or JavaScript file; group 1. (YAML is left out:
	// a configuration file's path in prose is usually a placeholder, as
	// in dir/.retrai.yml.)
	fileRef = regexp.MustCompile(`(?:^|[^\w./$~@:-])((?:[A-Za-z_][\w.-]*/)+[\w.-]*\.(?:md|go|sh|mjs))(?:$|[^\w/-])`)
	// shippable are the extensions of files this repository could hold:
	// a "../" path to one that does not exist names a missing file, where
	// one to anything else (../etc/passwd in a comment about confinement)
	// is left alone unless it leaves the root.
	shippable = []string{".md", ".go", ".sh", ".mjs", ".yaml", ".yml", ".json"}
)

// markdown checks the links of a Markdown file outside code, and the paths
// in all of its text.
func (c *checker) markdown(src []byte) {
	inFence := false
	for i, line := range strings.Split(string(src), "\n") {
		n := i + 1
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			// Code and program output: a path relative to somewhere
			// else (a project the program works on) is not a reference
			// to this repository, but one that climbs out of it is.
			c.climbs(n, line)
			continue
		}
		prose := blank(line, codeSpan.FindAllStringIndex(line, -1))
		var targets [][]int
		for _, m := range mdLink.FindAllStringSubmatchIndex(prose, -1) {
			targets = append(targets, m[2:4])
		}
		if m := mdRefDef.FindStringSubmatchIndex(prose); m != nil {
			targets = append(targets, m[2:4])
		}
		for _, t := range targets {
			c.link(n, line[t[0]:t[1]])
		}
		// The links' targets are checked; the rest of the line is text.
		c.paths(n, blank(line, targets))
	}
}

// blank replaces the byte ranges spans of s by spaces.
func blank(s string, spans [][]int) string {
	if len(spans) == 0 {
		return s
	}
	b := []byte(s)
	for _, sp := range spans {
		for j := sp[0]; j < sp[1]; j++ {
			b[j] = ' '
		}
	}
	return string(b)
}

// link checks one Markdown link target.
func (c *checker) link(line int, target string) {
	ref := strings.TrimSuffix(strings.TrimPrefix(target, "<"), ">")
	if ref == "" || scheme.MatchString(ref) {
		return
	}
	p, anchor, _ := strings.Cut(ref, "#")
	var resolved string
	switch {
	case p == "":
		resolved = c.file
	case strings.HasPrefix(p, "/"):
		resolved = path.Clean(strings.TrimPrefix(p, "/"))
	default:
		resolved = path.Join(path.Dir(c.file), p)
	}
	if escapes(resolved) {
		c.report(line, ref, whyEscapes)
		return
	}
	info, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(resolved)))
	if err != nil {
		c.report(line, ref, whyMissing)
		return
	}
	if anchor == "" || info.IsDir() || path.Ext(resolved) != ".md" {
		return
	}
	src, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(resolved)))
	if err != nil || !slices.Contains(anchors(src), anchor) {
		c.report(line, ref, whyNoHeading)
	}
}

// paths checks the path references of one line of text.
func (c *checker) paths(line int, text string) {
	c.climbs(line, text)
	for _, m := range fileRef.FindAllStringSubmatch(text, -1) {
		ref := m[1]
		if !c.exists(path.Clean(ref)) && !c.exists(path.Join(path.Dir(c.file), ref)) {
			c.report(line, ref, whyMissing)
		}
	}
}

// climbs checks the "../" references of text: they must stay inside the
// repository, and name a file that exists when they name one.
func (c *checker) climbs(line int, text string) {
	for _, m := range dotdotRef.FindAllStringSubmatch(text, -1) {
		ref := strings.TrimRight(m[1], ".:")
		rest := ref
		for strings.HasPrefix(rest, "../") {
			rest = rest[len("../"):]
		}
		rest = strings.TrimSuffix(rest, "/")
		if rest == "" || rest == ".." || (!strings.Contains(rest, "/") && path.Ext(rest) == "") {
			// ../.. or a bare sibling name (../outside): a direction,
			// not a reference to a file.
			continue
		}
		resolved := path.Join(path.Dir(c.file), ref)
		switch {
		case escapes(resolved):
			c.report(line, ref, whyEscapes)
		case slices.Contains(shippable, path.Ext(strings.TrimSuffix(ref, "/"))) && !c.exists(resolved):
			c.report(line, ref, whyMissing)
		}
	}
}

// exists reports whether the slash path rel, relative to the root, names a
// file or directory inside the root.
func (c *checker) exists(rel string) bool {
	if escapes(rel) {
		return false
	}
	_, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(rel)))
	return err == nil
}

// escapes reports whether the cleaned slash path rel, relative to the
// root, leaves it.
func escapes(rel string) bool {
	return rel == ".." || strings.HasPrefix(rel, "../")
}

// goComments checks the path references in the comments of a Go file.
func (c *checker) goComments(src []byte) {
	fset := token.NewFileSet()
	f := fset.AddFile(c.file, -1, len(src))
	var s scanner.Scanner
	s.Init(f, src, nil, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return
		}
		if tok != token.COMMENT {
			continue
		}
		first := fset.Position(pos).Line
		for i, line := range strings.Split(lit, "\n") {
			c.paths(first+i, line)
		}
	}
}

// anchors returns the anchors of a Markdown file's headings, as GitHub
// makes them: lower case, punctuation dropped, spaces as hyphens, and
// "-1", "-2", … appended to repeats.
func anchors(src []byte) []string {
	var out []string
	seen := map[string]int{}
	inFence := false
	for line := range bytes.SplitSeq(src, []byte("\n")) {
		if fence.Match(line) {
			inFence = !inFence
			continue
		}
		m := heading.FindSubmatch(line)
		if inFence || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(string(m[1])) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		slug := b.String()
		if k := seen[slug]; k > 0 {
			out = append(out, slug+"-"+strconv.Itoa(k))
		} else {
			out = append(out, slug)
		}
		seen[slug]++
	}
	return out
}

// moduleLine is the module directive of the repository's root go.mod.
var moduleLine = regexp.MustCompile(`(?m)^module\s+github\.com/agentgraph/agentgraph\s*$`)

// errNotRoot is returned by [Root] when no module root is found.
var errNotRoot = errors.New("repolinks: no go.mod of module github.com/agentgraph/agentgraph above the working directory")

// Root returns the repository root: the nearest directory, from dir
// upwards, whose go.mod declares module github.com/agentgraph/agentgraph.
func Root(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && moduleLine.Match(mod) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errNotRoot
		}
		dir = parent
	}
}
