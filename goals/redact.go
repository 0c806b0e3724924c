package goals

import (
	"cmp"
	"context"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/agentgraph/agentgraph/tools"
)

// redacted replaces a secret in a check's output.
const redacted = "[redacted]"

// minRedactLen is the length from which a value of the environment is
// hidden: shorter ones ("1", "true") are too common to hide.
const minRedactLen = 8

// visibleEnv are the variables whose values a check's output may show:
// the ones commands get, and a few that are no secret.
var visibleEnv = []string{
	"PATH", "HOME", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "USER", "LOGNAME", "TMPDIR",
	"PWD", "OLDPWD", "SHELL", "HOSTNAME", "SHLVL", "_", "EDITOR", "VISUAL", "PAGER",
	"GOPATH", "GOROOT", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY", "GOTOOLCHAIN", "GOOS", "GOARCH",
	"PYTHONPATH", "VIRTUAL_ENV", "CARGO_HOME", "RUSTUP_HOME", "NODE_PATH",
}

// newRedactor returns the function that replaces, in a check's output,
// every value of this process's environment that is at least 8
// characters long by [redacted], unless its variable is one of visibleEnv
// and its value does not look like a secret (tools.SecretEnvVar). A test
// the model wrote may print its environment or read /proc/*/environ: the
// values of this process's secrets never reach the model that way.
//
// It is read at every check, so that a variable set after the goal was
// built is hidden too.
func newRedactor() func(string) string {
	var values []string
	for _, kv := range os.Environ() {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || len(value) < minRedactLen {
			continue
		}
		if slices.ContainsFunc(visibleEnv, func(p string) bool { ok, _ := path.Match(p, name); return ok }) && !tools.SecretEnvVar(kv) {
			continue
		}
		values = append(values, value)
	}
	if len(values) == 0 {
		return func(s string) string { return s }
	}
	// Longest first, so that a value holding another is replaced whole.
	slices.SortFunc(values, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	values = slices.Compact(values)
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, redacted)
	}
	return strings.NewReplacer(pairs...).Replace
}

// redactResult hides the environment's secrets in the text of res.
func redactResult(res Result, redact func(string) string) Result {
	res.Reason = redact(res.Reason)
	d := &res.Details
	d.Command, d.Output = redact(d.Command), redact(d.Output)
	if d.Failures != nil {
		fs := make([]Failure, len(d.Failures))
		for i, f := range d.Failures {
			fs[i] = Failure{Name: redact(f.Name), Output: redact(f.Output)}
		}
		d.Failures = fs
	}
	return res
}

// redacting is a goal whose results, which a model reads, never show the
// values of this process's secrets (see newRedactor). New returns every
// goal wrapped so.
type redacting struct{ Goal }

func (g redacting) Check(ctx context.Context, st State, cwd string) (Result, error) {
	res, err := g.Goal.Check(ctx, st, cwd)
	if err != nil {
		return res, err
	}
	return redactResult(res, newRedactor()), nil
}

// redactingBaseliner is redacting for a goal that records a baseline.
type redactingBaseliner struct{ redacting }

func (g redactingBaseliner) Baseline(ctx context.Context, cwd string) (*Baseline, error) {
	b, err := g.Goal.(Baseliner).Baseline(ctx, cwd)
	if err != nil || b == nil {
		return b, err
	}
	c := *b
	c.Summary = newRedactor()(c.Summary)
	return &c, nil
}

// redact wraps g so that its results hide the environment's secrets.
func redact(g Goal) Goal {
	if _, ok := g.(Baseliner); ok {
		return redactingBaseliner{redacting{g}}
	}
	return redacting{g}
}
