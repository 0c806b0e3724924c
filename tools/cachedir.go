package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CacheDirError is returned by bash_exec, run_tests and RunCommand when
// the directory of their build caches (see WithCacheDir) cannot be used.
type CacheDirError struct {
	// Dir is the cache directory.
	Dir string
	// Reason says what is wrong with it.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

// Error implements error.
func (e *CacheDirError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("tools: build cache directory %s: %s: %v", e.Dir, e.Reason, e.Err)
	}
	return fmt.Sprintf("tools: build cache directory %s: %s", e.Dir, e.Reason)
}

// Unwrap returns the underlying error.
func (e *CacheDirError) Unwrap() error { return e.Err }

// buildCaches are the persistent, writable cache directories of the
// commands run in one workspace: subdirectories of the cache directory
// (WithCacheDir or DefaultCacheDir).
type buildCaches struct {
	root string
}

// The subdirectories of a cache directory.
const (
	cacheGoBuild = "go-build" // GOCACHE
	cacheGoPath  = "gopath"   // GOPATH, and so GOMODCACHE, without WithGoCaches
	cachePip     = "pip"      // PIP_CACHE_DIR
	cacheNpm     = "npm"      // npm_config_cache
	cacheXDG     = "xdg"      // XDG_CACHE_HOME, for the other tools
)

var cacheSubdirs = []string{cacheGoBuild, cacheGoPath, cachePip, cacheNpm, cacheXDG}

func (b buildCaches) dir(name string) string { return filepath.Join(b.root, name) }

// dirs returns the directories bound writable into the sandbox.
func (b buildCaches) dirs() []string {
	dirs := make([]string, len(cacheSubdirs))
	for i, name := range cacheSubdirs {
		dirs[i] = b.dir(name)
	}
	return dirs
}

// env returns the variables pointing the tools at the caches, but for
// GOCACHE and GOPATH, which depend on WithGoCaches and the sandbox (see
// goEnvironment).
//
// Python writes no bytecode: a .pyc is trusted when its source has the
// same size and modification second, so a fix written within a second of
// the last run, as an agent writes them (a - b → a + b), would be tested
// as the old code.
func (b buildCaches) env() []string {
	return []string{
		"PYTHONDONTWRITEBYTECODE=1",
		"PIP_CACHE_DIR=" + b.dir(cachePip),
		"npm_config_cache=" + b.dir(cacheNpm),
		"XDG_CACHE_HOME=" + b.dir(cacheXDG),
	}
}

// DefaultCacheDir returns the cache directory bash_exec, run_tests and
// RunCommand use when WithCacheDir is not given: agentgraph/sandbox under
// the user's cache directory (os.UserCacheDir, such as ~/.cache), or,
// where the user has none, under os.TempDir in a directory named after
// the user id. It is shared by every sandboxed command of this user,
// whatever its workspace, so that the standard library and the modules
// compiled once serve every project (a new project's first go test
// otherwise compiles them again: half a minute of CPU). The price: a
// command of one project can plant build results that commands of
// another then use (in their sandbox). An agent serving projects that
// must not affect one another gives each its own WithCacheDir.
func DefaultCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil || !filepath.IsAbs(base) {
		base = filepath.Join(os.TempDir(), fmt.Sprintf("agentgraph-cache-%d", os.Geteuid()))
	}
	return filepath.Join(base, "agentgraph", "sandbox")
}

// openCaches returns the build caches of commands in ws, creating the
// directories (0700) as needed. The directory must be this user's, in
// directories no other user may change (a world-writable one only with
// its sticky bit, as /tmp), not a symlink, and neither hold the workspace nor be or hold this machine's
// own Go build cache (of host, this machine's go; nil for none), which is
// never writable to a sandboxed command.
func (c *config) openCaches(ws *Workspace, host *goEnv) (buildCaches, error) {
	dir := c.cacheDir
	if dir == "" {
		dir = DefaultCacheDir()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return buildCaches{}, &CacheDirError{Dir: dir, Reason: "not a usable path", Err: err}
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return buildCaches{}, &CacheDirError{Dir: abs, Reason: "cannot create it", Err: err}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return buildCaches{}, &CacheDirError{Dir: abs, Reason: "cannot resolve it", Err: err}
	}
	if d, ok := changeableByOthers(real); ok {
		return buildCaches{}, &CacheDirError{Dir: abs, Reason: d + " may be changed by another user"}
	}
	b := buildCaches{root: real}
	if within(real, ws.Root()) {
		return buildCaches{}, &CacheDirError{Dir: abs, Reason: "it holds the workspace " + ws.Root()}
	}
	if host != nil {
		host := host.GOCACHE
		if r, err := filepath.EvalSymlinks(host); err == nil {
			host = r
		}
		for _, d := range b.dirs() {
			if within(d, host) || within(host, d) {
				return buildCaches{}, &CacheDirError{Dir: abs, Reason: "it overlaps this machine's Go build cache " + host}
			}
		}
	}
	for _, d := range b.dirs() {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return buildCaches{}, &CacheDirError{Dir: abs, Reason: "cannot create " + filepath.Base(d), Err: err}
		}
		fi, err := os.Lstat(d)
		if err != nil {
			return buildCaches{}, &CacheDirError{Dir: abs, Reason: "cannot use " + filepath.Base(d), Err: err}
		}
		if !fi.IsDir() {
			return buildCaches{}, &CacheDirError{Dir: abs, Reason: filepath.Base(d) + " is not a directory"}
		}
		if !ownedByMe(fi) {
			return buildCaches{}, &CacheDirError{Dir: abs, Reason: filepath.Base(d) + " belongs to another user"}
		}
	}
	return b, nil
}

// goFlagsReadOnly adds -mod=readonly to GOFLAGS flags, unless they set
// -mod already or the workspace at root vendors its modules (where
// -mod=readonly would ignore vendor/).
func goFlagsReadOnly(flags, root string) string {
	for _, f := range strings.Fields(flags) {
		if strings.HasPrefix(f, "-mod=") || strings.HasPrefix(f, "--mod=") {
			return flags
		}
	}
	if _, err := os.Stat(filepath.Join(root, "vendor", "modules.txt")); err == nil {
		return flags
	}
	return strings.TrimSpace(flags + " -mod=readonly")
}
