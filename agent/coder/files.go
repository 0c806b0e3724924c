package coder

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/tools"
)

const (
	// maxScannedFiles bounds the files a search or a listing visits.
	maxScannedFiles = 5000
	// maxSearchBytes is the largest file a search reads.
	maxSearchBytes = 200 << 10
	// maxListing bounds the paths of a listing in a prompt.
	maxListing = 300
)

// skippedDirs are never listed or searched.
var skippedDirs = map[string]bool{".git": true, "node_modules": true, "vendor": true, ".hg": true,
	".svn": true, "__pycache__": true, ".venv": true, "venv": true, "target": true, "dist": true, "build": true}

// mentions are the paths a request names.
type mentions struct {
	// existing are files of the workspace (relative, slash-separated).
	existing []string
	// missing are paths inside the workspace that do not exist (yet).
	missing []string
	// outside are paths that resolve outside the workspace, as given.
	outside []string
}

var (
	extRe   = regexp.MustCompile(`^[^/\s]*[A-Za-z0-9_-]\.[A-Za-z0-9]{1,8}$`)
	numRe   = regexp.MustCompile(`^[0-9.]+$`)
	identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// whatDoesRe captures X of "what does X do" and its variants.
	whatDoesRe = regexp.MustCompile(`(?i)\b(?:what|how)\s+(?:does|do|is)\s+(?:the\s+)?(?:function\s+|method\s+|type\s+|class\s+)?` + "`?" + `([A-Za-z_][A-Za-z0-9_.]*)`)
)

// pathCandidates returns the words of request that look like paths.
func pathCandidates(request string) []string {
	var out []string
	for _, w := range strings.Fields(request) {
		w = strings.Trim(w, "`'\"“”‘’,;:()[]{}<>!?")
		w = strings.TrimRight(w, ".")
		switch {
		case w == "" || strings.Contains(w, "://") || numRe.MatchString(w):
			continue
		case strings.HasPrefix(w, "/") || strings.HasPrefix(w, "~") || strings.Contains(w, "/") || extRe.MatchString(w) || w == "..":
			out = append(out, w)
		}
	}
	return out
}

// stopWords are capitalised words of requests that are not identifiers.
var stopWords = map[string]bool{"I": true, "What": true, "How": true, "Why": true, "Where": true, "Which": true,
	"Who": true, "When": true, "Does": true, "Do": true, "Is": true, "Are": true, "Can": true, "Could": true,
	"Please": true, "Explain": true, "Describe": true, "Show": true, "Tell": true, "Find": true, "Fix": true,
	"Add": true, "The": true, "A": true, "An": true, "In": true, "Of": true, "It": true, "This": true, "That": true,
	"Run": true, "Make": true, "Change": true, "Update": true, "Remove": true, "Delete": true, "Rename": true,
	"Implement": true, "Refactor": true, "Write": true, "Create": true, "Summarize": true, "List": true,
	"Go": true, "Python": true, "OK": true, "TODO": true}

// pronouns are words "what does X do" may capture that are no identifier.
var pronouns = map[string]bool{"it": true, "this": true, "that": true, "they": true, "them": true, "these": true,
	"those": true, "he": true, "she": true, "you": true, "we": true, "i": true, "a": true, "an": true, "there": true,
	"here": true, "everything": true, "anything": true, "something": true, "all": true, "each": true, "my": true, "our": true}

// identifiers returns the words of request that look like code
// identifiers: in backticks, followed by "()", CamelCase or snake_case,
// or X of "what does X do".
func identifiers(request string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(id string) {
		id = strings.TrimSuffix(id, "()")
		if i := strings.LastIndexByte(id, '.'); i >= 0 {
			id = id[i+1:]
		}
		if len(id) < 2 || seen[id] || stopWords[id] || !identRe.MatchString(id) {
			return
		}
		seen[id] = true
		out = append(out, id)
	}
	if m := whatDoesRe.FindStringSubmatch(request); m != nil {
		if !extRe.MatchString(m[1]) && !pronouns[strings.ToLower(m[1])] {
			add(m[1])
		}
	}
	for _, w := range strings.Fields(request) {
		back := strings.HasPrefix(w, "`")
		w = strings.Trim(w, "`'\"“”‘’,;:[]{}<>!?")
		w = strings.TrimRight(w, ".")
		paren := strings.HasSuffix(w, "()")
		w = strings.TrimSuffix(w, "()")
		if extRe.MatchString(w) || strings.Contains(w, "/") {
			continue
		}
		if i := strings.LastIndexByte(w, '.'); i >= 0 {
			w = w[i+1:]
		}
		if !identRe.MatchString(w) {
			continue
		}
		camel := strings.ToLower(w) != w && strings.ToUpper(w) != w || (len(w) > 1 && w[0] >= 'A' && w[0] <= 'Z')
		if back || paren || camel || strings.Contains(strings.Trim(w, "_"), "_") {
			add(w)
		}
	}
	return out
}

// mentions resolves the paths request names against the workspace.
func (a *Agent) mentions(request string) mentions {
	var m mentions
	seen := map[string]bool{}
	for _, c := range pathCandidates(request) {
		p := c
		if strings.HasPrefix(p, "~") {
			m.outside = append(m.outside, c)
			continue
		}
		abs, err := a.ws.Resolve(p)
		var outside *tools.OutsideWorkspaceError
		if errors.As(err, &outside) {
			m.outside = append(m.outside, c)
			continue
		}
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(a.ws.Root(), abs)
		if err != nil || rel == "." {
			continue
		}
		rel = filepath.ToSlash(rel)
		if seen[rel] {
			continue
		}
		seen[rel] = true
		fi, err := os.Stat(abs)
		switch {
		case err == nil && fi.Mode().IsRegular():
			m.existing = append(m.existing, rel)
		case err == nil:
			// a directory: not a file to read
		case !strings.Contains(c, "/"):
			// a bare name: the file may be anywhere in the tree
			if found := a.findByName(path.Base(rel)); len(found) > 0 {
				for _, f := range found {
					if !seen[f] {
						seen[f] = true
						m.existing = append(m.existing, f)
					}
				}
			} else {
				m.missing = append(m.missing, rel)
			}
		default:
			m.missing = append(m.missing, rel)
		}
	}
	return m
}

// walk calls fn with the relative, slash-separated path of each regular
// file of the workspace (skipping VCS metadata, dependencies and hidden
// directories), at most maxScannedFiles of them; symlinks are not
// followed.
func (a *Agent) walk(fn func(rel string, d fs.DirEntry) bool) {
	root := a.ws.Root()
	n := 0
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != root && (skippedDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		n++
		if n > maxScannedFiles {
			return filepath.SkipAll
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil
		}
		if !fn(filepath.ToSlash(rel), d) {
			return filepath.SkipAll
		}
		return nil
	})
}

// findByName returns the files of the workspace whose base name is name.
func (a *Agent) findByName(name string) []string {
	var out []string
	a.walk(func(rel string, _ fs.DirEntry) bool {
		if path.Base(rel) == name {
			out = append(out, rel)
		}
		return len(out) < DefaultMaxFiles
	})
	return out
}

// listing returns the workspace's files, sorted, at most maxListing.
func (a *Agent) listing() []string {
	var out []string
	a.walk(func(rel string, _ fs.DirEntry) bool {
		out = append(out, rel)
		return len(out) < maxListing
	})
	sort.Strings(out)
	return out
}

// search returns the files that define or mention ids, best first (a
// definition counts more than a mention; test files come after the
// others at equal scores), at most limit.
func (a *Agent) search(ctx context.Context, ids []string, limit int) []string {
	if len(ids) == 0 {
		return nil
	}
	type hit struct {
		rel   string
		score int
	}
	var hits []hit
	mention := make([]*regexp.Regexp, len(ids))
	def := make([]*regexp.Regexp, len(ids))
	for i, id := range ids {
		q := regexp.QuoteMeta(id)
		mention[i] = regexp.MustCompile(`\b` + q + `\b`)
		def[i] = regexp.MustCompile(`\b(func|def|class|type|interface|struct|fn|const|var|let|enum|trait|impl)\s+(\([^)]*\)\s*)?` + q + `\b`)
	}
	root := a.ws.Root()
	a.walk(func(rel string, d fs.DirEntry) bool {
		if ctx.Err() != nil {
			return false
		}
		info, err := d.Info()
		if err != nil || info.Size() > maxSearchBytes {
			return true
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil || bytes.IndexByte(data[:min(len(data), 8<<10)], 0) >= 0 {
			return true
		}
		score := 0
		for i := range ids {
			if def[i].Match(data) {
				score += 10
			}
			score += min(len(mention[i].FindAllIndex(data, 5)), 5)
		}
		if score > 0 {
			score *= 2
			if isTestFile(rel) {
				score-- // after the other files at equal scores
			}
			hits = append(hits, hit{rel, score})
		}
		return true
	})
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].rel < hits[j].rel
	})
	var out []string
	for _, h := range hits[:min(len(hits), limit)] {
		out = append(out, h.rel)
	}
	return out
}

// isTestFile reports a test file by its name.
func isTestFile(rel string) bool {
	base := path.Base(rel)
	return strings.HasSuffix(base, "_test.go") || strings.HasPrefix(base, "test_") ||
		strings.HasSuffix(base, "_test.py") || strings.Contains(base, ".test.") || strings.Contains(base, ".spec.")
}

// fileStat returns a key of the workspace file rel's metadata: equal
// keys mean an unchanged file, as git's index decides (size, modification
// and change times, inode). It is "" when the metadata cannot tell: on a
// system without a change time, or for a file changed within the last
// two seconds (a later write in the same clock tick would keep every
// time equal), and the file is then read again.
func (a *Agent) fileStat(rel string) (string, error) {
	root, err := os.OpenRoot(a.ws.Root())
	if err != nil {
		return "", err
	}
	defer root.Close()
	fi, err := root.Stat(filepath.FromSlash(rel))
	if err != nil {
		return "", err
	}
	ctime, ino, ok := changeTime(fi)
	if !ok || time.Since(time.Unix(0, ctime)) < racyWindow {
		return "", nil
	}
	return fmt.Sprintf("%d:%d:%d:%d", fi.Size(), fi.ModTime().UnixNano(), ctime, ino), nil
}

// racyWindow is how long after its last change a file's metadata is not
// trusted to reveal a further change (a variable for tests).
var racyWindow = 2 * time.Second

// unique returns the strings of lists, each once, in order.
func unique(lists ...[]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// largeFileHash returns the hex SHA-256 of the whole workspace file rel
// when it is larger than file_read returns whole ("" otherwise): the hash
// of what was read would not change when the file changes past it.
func (a *Agent) largeFileHash(rel string) (string, error) {
	root, err := os.OpenRoot(a.ws.Root())
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() <= tools.MaxReadBytes {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
