package goals

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/tools"
)

// ConfigFile is the name of the project configuration file.
const ConfigFile = ".retrai.yml"

// Config holds the settings of a run and of its goal, as read from
// .retrai.yml by LoadConfig. Every goal reads the settings that apply to it
// and ignores the others; the zero Config is valid for the goals that need
// no settings (the test-based goals, pyright and make-test).
//
// A complete file:
//
//	goal: perf-check         # the goal's registered name
//	model: claude-sonnet-4-6 # the agent's model
//	max_iterations: 20
//	hitl_enabled: false
//	command: ./check.sh      # shell: the command that must exit 0
//	timeout: 5m              # per check (or per run): a Go duration or seconds
//	protect_tests: false     # test goals: let the agent edit test files (default true)
//	perf:
//	  command: ./bench.sh    # default: command
//	  max_seconds: 1.5
//	  runs: 5
//	sql:
//	  driver: sqlite         # sqlite or postgres; default: from dsn
//	  dsn: data/bench.db     # SQLite file (relative to the project) or postgres://…
//	  query: SELECT …        # or query_file: query.sql
//	  max_ms: 50
//	  runs: 5
//	  expected_rows: 42
//	eval:
//	  objective: The CLI prints the version with --version.
//	  harness: .retrai/eval_test.sh
//
// A key the Config does not know is an error (a misspelt setting would
// otherwise be silently ignored), and so is a max_iterations that is not
// positive.
type Config struct {
	// Goal is the name of the goal to pursue.
	Goal string `yaml:"goal"`
	// Model is the agent's model, e.g. "claude-sonnet-4-6".
	Model string `yaml:"model"`
	// MaxIterations is the agent's iteration limit (0: the agent's
	// default).
	MaxIterations int `yaml:"max_iterations"`
	// HITLEnabled asks for a human check after every iteration.
	HITLEnabled bool `yaml:"hitl_enabled"`
	// Command is the shell goal's command, run with bash -c (sh -c when
	// bash is missing) in the project directory; the goal is reached when
	// it exits 0. perf-check uses it when Perf.Command is empty.
	Command string `yaml:"command"`
	// Timeout bounds one check (for perf-check: one run of the command);
	// zero means DefaultTimeout. In the file it is a Go duration ("90s",
	// "5m") or a number of seconds.
	Timeout time.Duration `yaml:"-"`
	// AllowTestEdits lets the agent change the project's test files
	// (protect_tests: false in the file). By default the test goals
	// (go-test, pytest, cargo-test, npm-test, bun-test, make-test)
	// protect them: a check fails, naming the files and saying why, when
	// a test file that existed at the baseline (see [Baseliner]) was
	// changed in any way (an expected value, an assertion, a test body)
	// or deleted; adding test files stays allowed. [IsTestFile] says
	// which files are test files.
	AllowTestEdits bool `yaml:"-"`
	// Perf configures perf-check.
	Perf PerfConfig `yaml:"perf"`
	// SQL configures sql-benchmark.
	SQL SQLConfig `yaml:"sql"`
	// Eval configures ai-eval.
	Eval EvalConfig `yaml:"eval"`
	// TestOptions are options of the test goals' runs (go-test, pytest,
	// cargo-test, npm-test, bun-test), which go through
	// tools.RunTestsRecorded: in the sandbox where the machine has one
	// by default; tools.WithSandbox(tools.SandboxOff) runs the tests
	// unconfined, tools.WithNetwork gives them the network.
	TestOptions []tools.Option `yaml:"-"`
}

// PerfConfig configures the perf-check goal: the median wall time of Runs
// runs of Command must not exceed MaxSeconds, and every run must exit 0.
type PerfConfig struct {
	// Command is run with bash -c in the project directory; empty means
	// Config.Command.
	Command string `yaml:"command"`
	// MaxSeconds is the largest acceptable median, in seconds (required).
	MaxSeconds float64 `yaml:"max_seconds"`
	// Runs is the number of measured runs (0: DefaultRuns).
	Runs int `yaml:"runs"`
}

// SQLConfig configures the sql-benchmark goal: the median time of Runs
// executions of the query (rows read to the end) must not exceed MaxMS.
//
// The goal opens the database with database/sql. Like any library, package
// goals imports no database driver: the program that checks the goal
// imports the one it needs, as examples/retrai does,
//
//	import _ "modernc.org/sqlite"             // driver: sqlite
//	import _ "github.com/jackc/pgx/v5/stdlib" // driver: postgres
//
// and New returns a *MissingDriverError naming the import when it did not.
type SQLConfig struct {
	// Driver is "sqlite" or "postgres" ("sqlite3", "postgresql" and "pgx" are
	// accepted too). Empty means postgres for DSNs starting with
	// postgres:// or postgresql://, and sqlite otherwise.
	Driver string `yaml:"driver"`
	// DSN is the SQLite database file (relative paths are taken from the
	// project directory; the file must exist) or a PostgreSQL URL or
	// key=value connection string (required).
	DSN string `yaml:"dsn"`
	// Query is the SQL to time. QueryFile, relative to the project
	// directory, is the alternative; it is read at every check, so the
	// agent may rewrite it. Exactly one of them is required.
	Query     string `yaml:"query"`
	QueryFile string `yaml:"query_file"`
	// MaxMS is the largest acceptable median, in milliseconds (required).
	MaxMS float64 `yaml:"max_ms"`
	// Runs is the number of measured executions (0: DefaultRuns).
	Runs int `yaml:"runs"`
	// ExpectedRows, when set, is the number of rows the query must return,
	// so that a faster query with a different result does not count.
	ExpectedRows *int `yaml:"expected_rows"`
}

// EvalConfig configures the ai-eval goal.
type EvalConfig struct {
	// Objective is the natural-language objective the harness tests
	// (required).
	Objective string `yaml:"objective"`
	// Harness is the harness script's path, relative to the project
	// directory (default DefaultHarness).
	Harness string `yaml:"harness"`
	// Planner is the model that writes the harness when it does not
	// exist yet. It is not read from the file; without it the harness
	// must already exist.
	Planner llm.Model `yaml:"-"`
}

// fileConfig is the shape of .retrai.yml.
type fileConfig struct {
	Config       `yaml:",inline"`
	Timeout      yamlDuration `yaml:"timeout"`
	ProtectTests *bool        `yaml:"protect_tests"` // nil: the default, true
}

// yamlDuration decodes a Go duration string or a number of seconds.
type yamlDuration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *yamlDuration) UnmarshalYAML(n *yaml.Node) error {
	bad := func() error {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf(
			"line %d: invalid duration %q (want a Go duration such as \"90s\" or a number of seconds)", n.Line, n.Value)}}
	}
	if n.Kind != yaml.ScalarNode {
		return bad()
	}
	if secs, err := strconv.ParseFloat(n.Value, 64); err == nil {
		if secs < 0 {
			return bad()
		}
		*d = yamlDuration(secs * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return bad()
	}
	*d = yamlDuration(v)
	return nil
}

// LoadConfig reads dir/.retrai.yml. It returns ok false (and a nil Config)
// when the file does not exist, a *ConfigError naming the file and the line
// when it is not valid YAML, has a key Config does not know, a value of the
// wrong type or a max_iterations that is not positive, and other errors
// when it cannot be read. An empty file gives a zero Config.
func LoadConfig(dir string) (*Config, bool, error) {
	path := filepath.Join(dir, ConfigFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("goals: read config: %w", err)
	}
	var fc fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fc); err != nil && !errors.Is(err, io.EOF) { // io.EOF: an empty file
		return nil, false, newConfigError(path, err)
	}
	if line, ok := topLevelKey(data, "max_iterations"); ok && fc.MaxIterations <= 0 {
		return nil, false, &ConfigError{Path: path, Line: line,
			Msg: fmt.Sprintf("max_iterations must be positive, not %d (leave it out for the default)", fc.MaxIterations)}
	}
	cfg := fc.Config
	cfg.Timeout = time.Duration(fc.Timeout)
	cfg.AllowTestEdits = fc.ProtectTests != nil && !*fc.ProtectTests
	return &cfg, true, nil
}

// topLevelKey returns the line of key in the top-level mapping of the YAML
// document data, and whether it is there.
func topLevelKey(data []byte, key string) (int, bool) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return 0, false
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return 0, false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line, true
		}
	}
	return 0, false
}

// unknownFieldRe matches the error of yaml's KnownFields for a key the
// target type does not have.
var unknownFieldRe = regexp.MustCompile(`field (\S+) not found in type \S+\.(\w+)`)

// configKeys lists the keys of the sections of .retrai.yml, by the name of
// the type that holds them, for the messages about unknown keys.
var configKeys = map[string]func() []string{
	"fileConfig": func() []string { return yamlKeys(reflect.TypeFor[fileConfig]()) },
	"PerfConfig": func() []string { return yamlKeys(reflect.TypeFor[PerfConfig]()) },
	"SQLConfig":  func() []string { return yamlKeys(reflect.TypeFor[SQLConfig]()) },
	"EvalConfig": func() []string { return yamlKeys(reflect.TypeFor[EvalConfig]()) },
}

// yamlKeys returns the YAML keys of the fields of the struct type t, and
// of the structs it inlines, sorted.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opts == "inline" && f.Type.Kind() == reflect.Struct {
			keys = append(keys, yamlKeys(f.Type)...)
			continue
		}
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	slices.Sort(keys)
	return keys
}

var yamlLineRe = regexp.MustCompile(`^line (\d+): `)

// newConfigError turns a yaml error into a *ConfigError.
func newConfigError(path string, err error) *ConfigError {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
		if n := len(te.Errors) - 1; n > 0 {
			msg += fmt.Sprintf(" (and %d more)", n)
		}
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if m := unknownFieldRe.FindStringSubmatchIndex(msg); m != nil {
		key, typ := msg[m[2]:m[3]], msg[m[4]:m[5]]
		known := ""
		if keys, ok := configKeys[typ]; ok {
			known = " (known keys here: " + strings.Join(keys(), ", ") + ")"
		}
		msg = msg[:m[0]] + fmt.Sprintf("unknown key %q%s", key, known) + msg[m[1]:]
	}
	ce := &ConfigError{Path: path, Msg: msg, Err: err}
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		ce.Line, _ = strconv.Atoi(m[1])
		ce.Msg = msg[len(m[0]):]
	}
	return ce
}

// timeout returns the check time limit of cfg.
func (c *Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// checkTimeout validates cfg.Timeout for goal.
func checkTimeout(goal string, cfg *Config) error {
	if cfg.Timeout < 0 {
		return &SettingError{Goal: goal, Setting: "timeout", Problem: "must not be negative"}
	}
	return nil
}
