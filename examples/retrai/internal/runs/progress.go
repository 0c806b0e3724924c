package runs

import (
	"fmt"
	"hash/fnv"
	"io/fs"
	"path/filepath"
	"sync/atomic"

	"github.com/agentgraph/agentgraph/agent/retrai"
)

// progressTracker counts the iterations without progress of a run's
// execution (see [Progress]). It compares a stamp of the project's
// files taken when the goal check starts with one taken after the previous
// check, so that the files a check writes itself do not count as progress.
type progressTracker struct {
	stamp      uint64 // of the project after the last check, or at the start
	stamped    bool
	changed    bool // files changed between the last check and this one
	lastResult string
	checked    bool // lastResult is set
	idle       int
}

// stepStart notes the start of a node's step in the project cwd.
func (t *progressTracker) stepStart(cwd, node string) {
	switch {
	case !t.stamped:
		t.stamp, t.stamped = projectStamp(cwd), true
	case node == retrai.EvaluateNode:
		t.changed = projectStamp(cwd) != t.stamp
	}
}

// goalCheck notes the result of a goal check and returns the iterations
// without progress.
func (t *progressTracker) goalCheck(cwd string, gc retrai.GoalCheck) int {
	result := fmt.Sprintf("%t %d %d %s", gc.Achieved, gc.Passed, gc.Failed, gc.Reason)
	if t.changed || !t.checked || result != t.lastResult {
		t.idle = 0
	} else {
		t.idle++
	}
	t.lastResult, t.checked, t.changed = result, true, false
	t.stamp, t.stamped = projectStamp(cwd), true
	return t.idle
}

// maxStampFiles bounds the files projectStamp looks at; past it, the
// project counts as changed.
const maxStampFiles = 50_000

// skippedDirs are directories projectStamp does not look into: tools'
// caches and dependencies, which change without the agent's doing.
var skippedDirs = map[string]bool{"node_modules": true, "__pycache__": true, "target": true, "venv": true}

// projectStamp returns a hash of the names, sizes, modes and modification
// times of the files of the project in dir, except in hidden directories
// (.git, .pytest_cache, …) and skippedDirs. A project it cannot read, or
// too large, gets a stamp of its own each time: it counts as changed.
func projectStamp(dir string) uint64 {
	h := fnv.New64a()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (d.Name()[0] == '.' || skippedDirs[d.Name()]) {
				return filepath.SkipDir
			}
			return nil
		}
		if n++; n > maxStampFiles {
			return fs.ErrInvalid
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d\x00", path, info.Size(), info.Mode(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		return uniqueStamp()
	}
	return h.Sum64()
}

// stampSeq makes the stamps of unreadable projects differ.
var stampSeq atomic.Uint64

func uniqueStamp() uint64 { return 1<<63 | stampSeq.Add(1) }
