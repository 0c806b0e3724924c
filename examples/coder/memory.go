package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentgraph/agentgraph/tools"
)

// stateEnv names the base folder of the default memory folders, as the
// XDG base directory specification has it; ~/.local/state when unset.
const stateEnv = "XDG_STATE_HOME"

// memoryInProjectError is the error of a memory folder inside the
// project: the agent's file tools and commands work in the project, so a
// model's edit or command could read its sessions and preferences, or
// destroy them.
type memoryInProjectError struct {
	// Memory is the memory folder and Project the project, as resolved.
	Memory, Project string
}

// Error implements error.
func (e *memoryInProjectError) Error() string {
	return fmt.Sprintf("the memory folder %s is inside the project %s, where the agent's file tools and commands "+
		"could read and change it: pass --memory with a folder outside the project", e.Memory, e.Project)
}

// defaultMemoryDir returns the memory folder of the project root when
// --memory is not given: a folder of its own under $XDG_STATE_HOME/coder
// (~/.local/state/coder), named after the project and a hash of its path,
// so that the same project finds its sessions again and two projects of
// the same name do not share them.
func defaultMemoryDir(root string) (string, error) {
	base := os.Getenv(stateEnv)
	if base == "" || !filepath.IsAbs(base) { // a relative value is to be ignored (XDG)
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no folder for the memory (%w): pass --memory", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(base, "coder", filepath.Base(root)+"-"+hex.EncodeToString(sum[:6])), nil
}

// memoryFolder returns the absolute memory folder of the project root (an
// absolute path whose symlinks are resolved): dir, or the default one when
// dir is "". It refuses a folder inside the project with
// *memoryInProjectError, following symlinks, and creates the folder.
func memoryFolder(root, dir string) (string, error) {
	var err error
	if dir == "" {
		dir, err = defaultMemoryDir(root)
	} else {
		dir, err = filepath.Abs(dir)
	}
	if err != nil {
		return "", err
	}
	// The project's workspace decides what is inside it, as for the
	// agent's file tools: symlinks followed, dangling ones included.
	ws, err := tools.NewWorkspace(root)
	if err != nil {
		return "", err
	}
	inside, err := ws.Resolve(dir)
	if err == nil {
		return "", &memoryInProjectError{Memory: inside, Project: ws.Root()}
	}
	if _, outside := errors.AsType[*tools.OutsideWorkspaceError](err); !outside {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(dir)
}
