package tools

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Redacted replaces a secret value in the text Redactor returns.
const Redacted = "[redacted]"

// minRedactLen is the length from which a value is redacted: shorter ones
// ("1", "true", "en_US") are too common to hide.
const minRedactLen = 8

// benignEnv are variables that are not secrets but are not passed to
// commands either: their values (the current directory, the shell) are
// left in the text a Redactor returns.
var benignEnv = []string{"PWD", "OLDPWD", "SHELL", "HOSTNAME", "SHLVL", "_", "TMPDIR", "HOME", "MAIL", "EDITOR", "VISUAL", "PAGER"}

// Redactor hides the values of an environment in text: see NewRedactor.
// It is safe for concurrent use.
type Redactor struct {
	r      *strings.Replacer // nil when there is nothing to hide
	values []string          // the texts replaced, longest first
}

// NewRedactor returns a Redactor that replaces, by Redacted, every value
// of environ ("NAME=value" entries, as os.Environ returns them) that is
// at least 8 characters long, unless its variable's name is allowed or
// the value is the absolute path of an existing file or directory
// (PYENV_ROOT=/root/.pyenv). Allowed are the variables commands get
// (PATH, HOME, LANG, LC_*, TERM, TZ, the toolchains' GOPATH, PYTHONPATH,
// ...; see BashExec), a few that are no secret (PWD, SHELL, HOSTNAME,
// ...), and those allow names or matches (path.Match patterns, as
// WithEnv takes them); a value that looks like a secret (see
// SecretEnvVar) is replaced unless allow names its variable exactly.
// Each value is also replaced as it appears inside a JSON string.
//
// It hides the values as they are, not encoded otherwise (base64, URL
// escapes) nor split over lines: it keeps secrets out of text that
// merely happens to include them (a test printing its environment, a
// program reading /proc/*/environ), not from a program set on leaking
// them.
func NewRedactor(environ []string, allow ...string) *Redactor {
	names := slices.Concat(defaultEnvAllow, toolchainEnv, benignEnv, allow)
	var values []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || len(value) < minRedactLen {
			continue
		}
		if slices.Contains(allow, name) || (envAllowed(name, names) && !SecretEnvVar(kv)) || existingPath(value) {
			continue
		}
		values = append(values, value)
		if b, err := json.Marshal(value); err == nil {
			if quoted := string(b[1 : len(b)-1]); quoted != value {
				values = append(values, quoted)
			}
		}
	}
	if len(values) == 0 {
		return &Redactor{}
	}
	// Longest first, so that a value holding another is replaced whole.
	slices.SortFunc(values, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	values = slices.Compact(values)
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, Redacted)
	}
	return &Redactor{r: strings.NewReplacer(pairs...), values: values}
}

// existingPath reports whether value is the absolute path of a file or
// directory that exists, such as PYENV_ROOT's or SSL_CERT_FILE's: a name,
// not a secret, and one that tools print.
func existingPath(value string) bool {
	if !filepath.IsAbs(value) {
		return false
	}
	_, err := os.Stat(value)
	return err == nil
}

// Redact returns s with the values r hides replaced by Redacted.
func (r *Redactor) Redact(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

// redactWriter redacts what it passes on to w, line by line, so that a
// value split between two writes is still found; a line longer than
// maxRedactLine is passed on in pieces overlapping by the longest value.
type redactWriter struct {
	mu  sync.Mutex
	r   *Redactor
	w   io.Writer
	buf []byte
}

// maxRedactLine bounds what redactWriter holds back waiting for the end
// of a line.
const maxRedactLine = 64 << 10

// newRedactWriter returns w itself where r hides nothing or w is nil.
func newRedactWriter(r *Redactor, w io.Writer) io.Writer {
	if w == nil || r == nil || r.r == nil {
		return w
	}
	return &redactWriter{r: r, w: w}
}

func (rw *redactWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.buf = append(rw.buf, p...)
	if i := bytes.LastIndexByte(rw.buf, '\n'); i >= 0 {
		if err := rw.emit(rw.buf[:i+1]); err != nil {
			return len(p), err
		}
		rw.buf = append(rw.buf[:0], rw.buf[i+1:]...)
	}
	if len(rw.buf) > maxRedactLine {
		// Pass on all but what could be the start of a value, cut
		// where no value straddles the cut.
		cut := rw.safeCut(len(rw.buf) - (len(rw.r.values[0]) - 1))
		if err := rw.emit(rw.buf[:cut]); err != nil {
			return len(p), err
		}
		rw.buf = append(rw.buf[:0], rw.buf[cut:]...)
	}
	return len(p), nil
}

// safeCut returns the greatest position at most cut (and at least 0) of
// the buffer that no occurrence of a value spans.
func (rw *redactWriter) safeCut(cut int) int {
	for moved := true; moved && cut > 0; {
		moved = false
		for _, v := range rw.r.values {
			lo := max(0, cut-len(v)+1)
			hi := min(len(rw.buf), cut+len(v)-1)
			if lo >= hi {
				continue
			}
			if i := bytes.Index(rw.buf[lo:hi], []byte(v)); i >= 0 && lo+i < cut {
				cut, moved = lo+i, true
			}
		}
	}
	return max(cut, 0)
}

func (rw *redactWriter) emit(b []byte) error {
	_, err := io.WriteString(rw.w, rw.r.Redact(string(b)))
	return err
}

// flush passes on what is held back.
func (rw *redactWriter) flush() {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if len(rw.buf) > 0 {
		_ = rw.emit(rw.buf)
		rw.buf = rw.buf[:0]
	}
}

// sameWriter reports whether a and b are the same comparable writer.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
