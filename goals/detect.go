package goals

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentgraph/agentgraph/internal/filetree"
)

// Detect picks the goal for the project in dir. It returns the goal's name
// and the reason for the choice, such as "go.mod found".
//
// The rules are tried in this order; the first that matches wins:
//
//  1. .retrai.yml with a goal field → that goal (it must be registered,
//     else *UnknownGoalError); without one but with a command → shell.
//     A .retrai.yml with neither (only model or iteration settings, say)
//     does not decide, and the rules below apply.
//  2. pytest.ini or conftest.py; pyproject.toml or setup.cfg mentioning
//     pytest; a tests directory holding .py files; or test files as pytest
//     finds them by default (test_*.py, *_test.py) → pytest.
//  3. pyrightconfig.json, or a [tool.pyright] table in pyproject.toml →
//     pyright.
//  4. Cargo.toml → cargo-test.
//  5. go.mod → go-test.
//  6. package.json with bun.lock or bun.lockb → bun-test.
//  7. package.json listing jest or vitest in dependencies or
//     devDependencies, or with a test script other than npm's
//     placeholder ("echo \"Error: no test specified\" && exit 1") →
//     npm-test.
//  8. Makefile (GNUmakefile, makefile) with a test target → make-test.
//
// So a Python project with both tests and pyright settings gets pytest, a
// Rust crate with a go.mod gets cargo-test, and a package.json without
// tests falls through to the Makefile. Only dir itself is examined, not
// its parents or subdirectories (except tests/ for rule 2).
//
// Detect returns ErrNoGoalDetected when no rule matches, a *ConfigError
// for a malformed .retrai.yml, an error naming the file for a malformed
// package.json or an unreadable file, and an error for a dir that does not
// exist or is not a directory.
func Detect(dir string) (name string, reason string, err error) {
	if fi, err := os.Stat(dir); err != nil {
		return "", "", fmt.Errorf("goals: detect: %w", err)
	} else if !fi.IsDir() {
		return "", "", fmt.Errorf("goals: detect: %s is not a directory", dir)
	}
	cfg, ok, err := LoadConfig(dir)
	if err != nil {
		return "", "", err
	}
	if ok {
		switch {
		case strings.TrimSpace(cfg.Goal) != "":
			g := strings.TrimSpace(cfg.Goal)
			if !registered(g) {
				return "", "", fmt.Errorf("goals: %s: %w", filepath.Join(dir, ConfigFile), &UnknownGoalError{Name: g, Known: Names()})
			}
			return g, ConfigFile + " sets goal " + g, nil
		case strings.TrimSpace(cfg.Command) != "":
			return GoalShell, ConfigFile + " sets a command", nil
		}
	}
	for _, rule := range detectRules {
		name, reason, err := rule(dir)
		if err != nil {
			return "", "", err
		}
		if name != "" {
			return name, reason, nil
		}
	}
	return "", "", fmt.Errorf("%w in %s", ErrNoGoalDetected, dir)
}

// detectRules are rules 2 to 8 of Detect, in order.
var detectRules = []func(dir string) (name, reason string, err error){
	detectPytest,
	detectPyright,
	fileRule("Cargo.toml", GoalCargoTest),
	fileRule("go.mod", GoalGoTest),
	detectBun,
	detectNpm,
	detectMake,
}

// openOptional opens dir/name, or returns ok false if it does not exist
// (or is a directory).
func openOptional(dir, name string) (f *os.File, ok bool, err error) {
	path := filepath.Join(dir, name)
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("goals: detect: %w", err)
	}
	if fi.IsDir() {
		return nil, false, nil
	}
	f, err = os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("goals: detect: %w", err)
	}
	return f, true, nil
}

// readOptional returns the content of dir/name, or ok false if it does not
// exist (or is a directory).
func readOptional(dir, name string) (data []byte, ok bool, err error) {
	f, ok, err := openOptional(dir, name)
	if !ok || err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err = io.ReadAll(f)
	if err != nil {
		return nil, false, fmt.Errorf("goals: detect: %w", err)
	}
	return data, true, nil
}

// exists reports whether dir/name exists as a readable file, without
// reading it.
func exists(dir, name string) (bool, error) {
	f, ok, err := openOptional(dir, name)
	if ok {
		f.Close()
	}
	return ok, err
}

// fileRule matches when dir holds the file name.
func fileRule(file, goal string) func(dir string) (string, string, error) {
	return func(dir string) (string, string, error) {
		ok, err := exists(dir, file)
		if !ok || err != nil {
			return "", "", err
		}
		return goal, file + " found", nil
	}
}

func detectPytest(dir string) (string, string, error) {
	for _, f := range []string{"pytest.ini", "conftest.py"} {
		ok, err := exists(dir, f)
		if err != nil {
			return "", "", err
		}
		if ok {
			return GoalPytest, f + " found", nil
		}
	}
	for _, f := range []string{"pyproject.toml", "setup.cfg"} {
		data, ok, err := readOptional(dir, f)
		if err != nil {
			return "", "", err
		}
		if ok && bytes.Contains(bytes.ToLower(data), []byte("pytest")) {
			return GoalPytest, f + " mentions pytest", nil
		}
	}
	if filetree.HasSuffix(filepath.Join(dir, "tests"), ".py") {
		return GoalPytest, "tests directory holds Python files", nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", "", fmt.Errorf("goals: detect: %w", err)
	}
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".py") && (strings.HasPrefix(n, "test_") || strings.HasSuffix(n, "_test.py")) {
			return GoalPytest, n + " found (a pytest test file)", nil
		}
	}
	return "", "", nil
}

func detectPyright(dir string) (string, string, error) {
	ok, err := exists(dir, "pyrightconfig.json")
	if err != nil {
		return "", "", err
	}
	if ok {
		return GoalPyright, "pyrightconfig.json found", nil
	}
	data, ok, err := readOptional(dir, "pyproject.toml")
	if err != nil {
		return "", "", err
	}
	if ok && bytes.Contains(data, []byte("[tool.pyright]")) {
		return GoalPyright, "pyproject.toml has a [tool.pyright] table", nil
	}
	return "", "", nil
}

func detectBun(dir string) (string, string, error) {
	ok, err := exists(dir, "package.json")
	if !ok || err != nil {
		return "", "", err
	}
	for _, lock := range []string{"bun.lock", "bun.lockb"} {
		ok, err := exists(dir, lock)
		if err != nil {
			return "", "", err
		}
		if ok {
			return GoalBunTest, "package.json and " + lock + " found", nil
		}
	}
	return "", "", nil
}

// npmPlaceholderTest is the test script npm init writes.
const npmPlaceholderTest = `echo "Error: no test specified" && exit 1`

func detectNpm(dir string) (string, string, error) {
	data, ok, err := readOptional(dir, "package.json")
	if !ok || err != nil {
		return "", "", err
	}
	var pkg struct {
		Scripts         map[string]string `json:"scripts"`
		Dependencies    map[string]any    `json:"dependencies"`
		DevDependencies map[string]any    `json:"devDependencies"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		return "", "", fmt.Errorf("goals: detect: %s: %w", filepath.Join(dir, "package.json"), err)
	}
	for _, runner := range []string{"jest", "vitest"} {
		if _, ok := pkg.DevDependencies[runner]; ok {
			return GoalNpmTest, "package.json lists " + runner + " in devDependencies", nil
		}
		if _, ok := pkg.Dependencies[runner]; ok {
			return GoalNpmTest, "package.json lists " + runner + " in dependencies", nil
		}
	}
	if script := strings.TrimSpace(pkg.Scripts["test"]); script != "" && script != npmPlaceholderTest {
		return GoalNpmTest, "package.json has a test script", nil
	}
	return "", "", nil
}

func detectMake(dir string) (string, string, error) {
	for _, f := range []string{"GNUmakefile", "makefile", "Makefile"} {
		data, ok, err := readOptional(dir, f)
		if err != nil {
			return "", "", err
		}
		if ok && hasMakeTarget(data, "test") {
			return GoalMakeTest, f + " has a test target", nil
		}
	}
	return "", "", nil
}

// hasMakeTarget reports whether a makefile defines target in a rule line
// such as "test:", "test: build" or "unit test::". Recipe lines, variable
// assignments (":=", "::=") and special targets such as ".PHONY: test" do
// not count.
func hasMakeTarget(makefile []byte, target string) bool {
	sc := bufio.NewScanner(bytes.NewReader(makefile))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "\t") {
			continue
		}
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		before, after, ok := strings.Cut(line, ":")
		if !ok || strings.ContainsAny(before, "=$") {
			continue
		}
		if strings.HasPrefix(after, "=") || strings.HasPrefix(after, ":=") {
			continue // an assignment
		}
		if slices.Contains(strings.Fields(before), target) {
			return true
		}
	}
	return false
}
