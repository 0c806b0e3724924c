package goals

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoGoalDetected is returned by Detect when no rule matches the project.
var ErrNoGoalDetected = errors.New("goals: no goal detected")

// ErrNoCodeBlock is returned when the ai-eval planner's reply contains no
// fenced code block to use as the harness.
var ErrNoCodeBlock = errors.New("goals: the model's reply contains no fenced code block")

// UnknownGoalError is returned by New (and Detect) for a name that is not
// registered.
type UnknownGoalError struct {
	// Name is the name asked for.
	Name string
	// Known are the registered names, sorted.
	Known []string
}

// Error implements error.
func (e *UnknownGoalError) Error() string {
	return fmt.Sprintf("goals: unknown goal %q (known: %s)", e.Name, strings.Join(e.Known, ", "))
}

// DuplicateGoalError is returned by Register for a name that is already
// registered. The earlier registration is kept.
type DuplicateGoalError struct {
	// Name is the name registered twice.
	Name string
}

// Error implements error.
func (e *DuplicateGoalError) Error() string {
	return fmt.Sprintf("goals: goal %q is already registered", e.Name)
}

// ConfigError is returned by LoadConfig (and Detect) when .retrai.yml
// cannot be parsed.
type ConfigError struct {
	// Path is the file's path.
	Path string
	// Line is the line of the first problem, from 1, or 0 if unknown.
	Line int
	// Msg describes the problem.
	Msg string
	// Err is the underlying parser error.
	Err error
}

// Error returns "path:line: message".
func (e *ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Unwrap returns the underlying parser error.
func (e *ConfigError) Unwrap() error { return e.Err }

// SettingError reports a missing or invalid setting of a goal, from a
// factory (New) or from a Check that needs it.
type SettingError struct {
	// Goal is the goal's name.
	Goal string
	// Setting is the setting's .retrai.yml key (e.g. "perf.max_seconds"),
	// or its Config field for settings that are not read from the file.
	Setting string
	// Problem says what is wrong with it.
	Problem string
}

// Error implements error.
func (e *SettingError) Error() string {
	return fmt.Sprintf("goals: %s: %s %s", e.Goal, e.Setting, e.Problem)
}

// ToolNotFoundError is returned by Check when the program the check runs
// (go, pytest, pyright, cargo, npm, bun, make, bash) is not installed.
type ToolNotFoundError struct {
	// Goal is the goal's name.
	Goal string
	// Tool is the missing program.
	Tool string
	// Err is the lookup error (errors.Is(err, exec.ErrNotFound) holds).
	Err error
}

// Error implements error.
func (e *ToolNotFoundError) Error() string {
	return fmt.Sprintf("goals: %s: %s is not installed: %v", e.Goal, e.Tool, e.Err)
}

// Unwrap returns the lookup error.
func (e *ToolNotFoundError) Unwrap() error { return e.Err }

// MissingDriverError is returned by New for a goal that needs a
// database/sql driver the program did not register (see [SQLConfig]).
type MissingDriverError struct {
	// Goal is the goal's name.
	Goal string
	// Driver is the database/sql driver name, e.g. "pgx".
	Driver string
	// Package is the package whose import registers the driver.
	Package string
}

// Error implements error.
func (e *MissingDriverError) Error() string {
	return fmt.Sprintf("goals: %s: the database/sql driver %q is not registered: the program must import _ %q",
		e.Goal, e.Driver, e.Package)
}
