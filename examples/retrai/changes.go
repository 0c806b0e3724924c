package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/agentgraph/agentgraph/events"
)

// What the dashboard shows at a human check: the agent's changes to the
// project's files since the run started or since its last check was
// answered, per file, as unified diffs. The server takes a copy of the
// project's text files when it starts a run and when a human approves a
// check (the state the human saw), and compares the project with it when
// the run asks again.

// kindChanges is the kind of [workspaceChanges].
const kindChanges events.Kind = "retrai.changes"

// Limits of a workspace snapshot: the files, the bytes of text kept, and
// the largest file whose text is kept (larger ones are compared by size
// and hash only).
const (
	maxSnapshotFiles = 5000
	maxSnapshotBytes = 32 << 20
	maxDiffFileBytes = 1 << 20
	// diffContext is the number of kept lines around a change.
	diffContext = 3
)

// workspaceChanges is the event that follows a run's retrai.human_check
// on the dashboard's stream: what changed in the project since the
// baseline.
type workspaceChanges struct {
	// Since says what the files are compared with: "start" (the run's
	// start on this server), "check" (the last human check answered) or
	// "resume" (the run was resumed on this server after stopping);
	// empty with Note when the server has no copy to compare with.
	Since string `json:"since,omitempty"`
	// Files are the changed files, sorted by path.
	Files []fileChange `json:"files"`
	// Note says what is missing: no baseline, or files left out.
	Note string `json:"note,omitempty"`
}

// EventKind implements events.Payload.
func (workspaceChanges) EventKind() events.Kind { return kindChanges }

// fileChange is the change of one file.
type fileChange struct {
	Path string `json:"path"`
	// Status is "added", "deleted" or "modified".
	Status string `json:"status"`
	// Added and Removed count the lines of the hunks.
	Added   int `json:"added"`
	Removed int `json:"removed"`
	// Hunks are the unified diff's hunks; none for a binary or large
	// file, which Note describes.
	Hunks []diffHunk `json:"hunks,omitempty"`
	Note  string     `json:"note,omitempty"`
}

// fileState is what a snapshot keeps of a file: its text, or for a binary
// or large file its size and hash.
type fileState struct {
	text   string
	hasTxt bool
	size   int64
	sum    [sha256.Size]byte
}

// workspaceSnapshot is the files of a project at one moment.
type workspaceSnapshot struct {
	files map[string]fileState // by slash-separated path in the project
	// partial says files were left out (limits, unreadable files).
	partial string
}

// errSnapshotFull stops the walk of snapshotDir.
var errSnapshotFull = errors.New("full")

// snapshotDir copies the regular files of the project in dir, except in
// hidden directories (.git, …) and tools' caches (skippedDirs of package
// runs: node_modules, __pycache__, target, venv). Symbolic links are not
// followed: a link out of the project shows nothing of what it points to.
func snapshotDir(dir string) *workspaceSnapshot {
	s := &workspaceSnapshot{files: map[string]fileState{}}
	kept := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			s.partial = fmt.Sprintf("some files could not be read (%v)", err)
			return nil
		}
		if d.IsDir() {
			if path != dir && (d.Name()[0] == '.' || snapshotSkipped[d.Name()]) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if len(s.files) >= maxSnapshotFiles {
			s.partial = fmt.Sprintf("only the first %d files are compared", maxSnapshotFiles)
			return errSnapshotFull
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			s.partial = fmt.Sprintf("some files could not be read (%v)", err)
			return nil
		}
		st := fileState{size: int64(len(b)), sum: sha256.Sum256(b)}
		if len(b) <= maxDiffFileBytes && kept+len(b) <= maxSnapshotBytes && !bytes.ContainsRune(b[:min(len(b), 8000)], 0) {
			st.text, st.hasTxt = string(b), true
			kept += len(b)
		}
		s.files[filepath.ToSlash(rel)] = st
		return nil
	})
	if err != nil && !errors.Is(err, errSnapshotFull) {
		s.partial = fmt.Sprintf("the project could not be read: %v", err)
	}
	return s
}

// snapshotSkipped are the directories snapshotDir does not look into, as
// package runs' progress stamp does not.
var snapshotSkipped = map[string]bool{"node_modules": true, "__pycache__": true, "target": true, "venv": true}

// diffSnapshots returns the changes from old to cur, sorted by path.
func diffSnapshots(old, cur *workspaceSnapshot) []fileChange {
	var paths []string
	for p := range old.files {
		paths = append(paths, p)
	}
	for p := range cur.files {
		if _, ok := old.files[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	out := []fileChange{}
	for _, p := range paths {
		o, inOld := old.files[p]
		c, inCur := cur.files[p]
		fc := fileChange{Path: p}
		var a, b []string
		switch {
		case !inCur:
			fc.Status = "deleted"
			if !o.hasTxt {
				fc.Note = fmt.Sprintf("binary or large file deleted (%d bytes)", o.size)
			}
			a = splitLines(o.text)
		case !inOld:
			fc.Status = "added"
			if !c.hasTxt {
				fc.Note = fmt.Sprintf("binary or large file added (%d bytes)", c.size)
			}
			b = splitLines(c.text)
		case o.sum == c.sum:
			continue
		default:
			fc.Status = "modified"
			if !o.hasTxt || !c.hasTxt {
				fc.Note = fmt.Sprintf("binary or large file changed (%d → %d bytes)", o.size, c.size)
			}
			a, b = splitLines(o.text), splitLines(c.text)
		}
		if fc.Note == "" {
			fc.Hunks = unifiedHunks(a, b, diffContext)
			for _, h := range fc.Hunks {
				for _, l := range h.Lines {
					switch l[0] {
					case '+':
						fc.Added++
					case '-':
						fc.Removed++
					}
				}
			}
		}
		out = append(out, fc)
	}
	return out
}

// changeTracker keeps, per run the server executes, the copy of its
// project that the next human check is compared with.
type changeTracker struct {
	mu   sync.Mutex
	runs map[string]*baseline
}

// baseline is a run's copy of its project.
type baseline struct {
	cwd   string
	since string
	snap  *workspaceSnapshot
}

func newChangeTracker() *changeTracker { return &changeTracker{runs: map[string]*baseline{}} }

// mark copies the project in cwd as run id's baseline; since says when
// (see workspaceChanges.Since). With keep, a baseline the run already has
// stays.
func (t *changeTracker) mark(id, cwd, since string, keep bool) {
	if keep {
		t.mu.Lock()
		_, ok := t.runs[id]
		t.mu.Unlock()
		if ok {
			return
		}
	}
	snap := snapshotDir(cwd)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.runs[id]; ok && keep {
		return
	}
	t.runs[id] = &baseline{cwd: cwd, since: since, snap: snap}
}

// changes compares run id's project with its baseline.
func (t *changeTracker) changes(id string) workspaceChanges {
	t.mu.Lock()
	b := t.runs[id]
	t.mu.Unlock()
	if b == nil {
		return workspaceChanges{Files: []fileChange{}, Note: "this server has no copy of the project from the run's start or its last check (it was restarted, or the run was started elsewhere): the changes cannot be shown"}
	}
	cur := snapshotDir(b.cwd)
	out := workspaceChanges{Since: b.since, Files: diffSnapshots(b.snap, cur)}
	switch {
	case b.snap.partial != "":
		out.Note = b.snap.partial
	case cur.partial != "":
		out.Note = cur.partial
	}
	return out
}

// forget drops run id's baseline.
func (t *changeTracker) forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.runs, id)
}
