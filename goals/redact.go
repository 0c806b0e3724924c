package goals

import (
	"context"
	"os"

	"github.com/agentgraph/agentgraph/tools"
)

// newRedactor returns the function that hides this process's secrets in
// a check's output: tools.NewRedactor of this process's environment,
// which replaces by [redacted] every value at least 8 characters long but
// those of the variables commands are meant to see (PATH, HOME, LANG, the
// toolchains' …) that do not look like secrets. A test the model wrote
// may print its environment or read /proc/*/environ: the values of this
// process's secrets never reach the model that way.
//
// It is read at every check, so that a variable set after the goal was
// built is hidden too.
func newRedactor() func(string) string {
	return tools.NewRedactor(os.Environ()).Redact
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
