package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/tools"
)

// The choices of --auth.
const (
	// authToken: one bearer token (--token, else $AGENTGRAPH_TOKEN);
	// every client holding it reads and changes every thread.
	authToken = "token"
	// authUsers: a token per user (--users FILE); each user sees only
	// the threads, runs, assistants and store namespaces they created
	// (server.OwnerPolicy).
	authUsers = "users"
	// authNoneLoopback: no credentials, loopback clients only
	// (server.WithoutAuthLoopbackOnly); --insecure-loopback says the same.
	authNoneLoopback = "none-loopback"
)

// loadUsers reads the users file of --auth users: one "USER-ID TOKEN" a
// line; blank lines and lines starting with # are skipped. A token must
// be unique; a user may have several.
func loadUsers(path string) (map[string]server.Identity, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--users: %w", err)
	}
	defer f.Close()
	users := map[string]server.Identity{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("--users %s:%d: want USER-ID TOKEN, got %d fields", path, n, len(fields))
		}
		if _, dup := users[fields[1]]; dup {
			return nil, fmt.Errorf("--users %s:%d: a token given twice", path, n)
		}
		users[fields[1]] = server.Identity{ID: fields[0]}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--users %s: %w", path, err)
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("--users %s: no user", path)
	}
	return users, nil
}

// authOptions are the server's options for o's --auth.
func authOptions(o options) ([]server.Option, error) {
	switch o.auth {
	case authNoneLoopback:
		return []server.Option{server.WithoutAuthLoopbackOnly()}, nil
	case authUsers:
		a, err := server.TokenAuthenticator(o.users)
		if err != nil {
			return nil, err
		}
		return []server.Option{server.WithAuth(a), server.WithAuthorizer(server.OwnerPolicy())}, nil
	default:
		return []server.Option{server.WithAuthToken(o.token)}, nil
	}
}

// ErrUnsandboxed refuses to serve the coding graphs (retrai, coder),
// which run the commands, tests and programs their clients' runs ask for,
// without a sandbox, unless --allow-unsandboxed.
var ErrUnsandboxed = errors.New("retrai and coder run the commands, tests and programs clients ask for, and would have no sandbox")

// checkSandbox returns an error wrapping ErrUnsandboxed unless the
// commands of the coding graphs run in a sandbox (mode is not off and
// info says one works) or allow (--allow-unsandboxed) says to serve them
// without.
func checkSandbox(info tools.SandboxInfo, mode tools.SandboxMode, allow bool) error {
	switch {
	case allow || mode != tools.SandboxOff && info.Available:
		return nil
	case mode == tools.SandboxOff:
		return fmt.Errorf("%w (--sandbox off): pass --allow-unsandboxed to serve them anyway", ErrUnsandboxed)
	default:
		return fmt.Errorf("%w (%s): install bubblewrap, or pass --allow-unsandboxed to serve them anyway", ErrUnsandboxed, info.Reason)
	}
}
