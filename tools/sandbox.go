package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/internal/process"
)

// SandboxMode says whether bash_exec runs commands in the bubblewrap
// sandbox.
type SandboxMode int

const (
	// SandboxAuto runs commands in the sandbox where the machine has one
	// (see SandboxStatus) and unconfined where it has none. It is the
	// default.
	SandboxAuto SandboxMode = iota
	// SandboxRequired runs commands only in the sandbox: where there is
	// none, every call fails with an error wrapping ErrSandboxUnavailable.
	SandboxRequired
	// SandboxOff never uses the sandbox.
	SandboxOff
)

// String returns the mode's name.
func (m SandboxMode) String() string {
	switch m {
	case SandboxAuto:
		return "auto"
	case SandboxRequired:
		return "required"
	case SandboxOff:
		return "off"
	default:
		return fmt.Sprintf("SandboxMode(%d)", int(m))
	}
}

// ParseSandboxMode reads a mode by its name, as String writes it: "auto"
// (or "", the default), "required" or "off", in any letter case.
func ParseSandboxMode(s string) (SandboxMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return SandboxAuto, nil
	case "required":
		return SandboxRequired, nil
	case "off":
		return SandboxOff, nil
	default:
		return SandboxAuto, fmt.Errorf("sandbox %q: want auto, required or off", s)
	}
}

// ErrSandboxUnavailable is wrapped by the error bash_exec returns when
// WithSandbox(SandboxRequired) is set and the machine has no sandbox.
var ErrSandboxUnavailable = errors.New("no sandbox available")

// CommandRefusedError is returned by bash_exec for a command that
// WithCommandAllow or WithCommandDeny rules out.
type CommandRefusedError struct {
	// Command is the refused command.
	Command string
	// Pattern is the deny pattern it matched, or "" if it matched no allow
	// pattern.
	Pattern string
}

// Error implements error.
func (e *CommandRefusedError) Error() string {
	if e.Pattern == "" {
		return "bash_exec: command refused: it matches none of the allowed command patterns"
	}
	return fmt.Sprintf("bash_exec: command refused: it matches the denied pattern %q", e.Pattern)
}

// SandboxInfo describes how bash_exec confines commands on this machine.
type SandboxInfo struct {
	// Available reports whether the bubblewrap sandbox works here.
	Available bool
	// Path is the bwrap executable, if found.
	Path string
	// UserNamespace reports that commands run in a user namespace of
	// their own (--unshare-user): always where bwrap runs unprivileged, and
	// where this process runs as root and the kernel allows it.
	UserNamespace bool
	// UID is the user id commands run as inside the sandbox:
	// SandboxUID when this process runs as root (and then in its own user
	// namespace, see DropsRoot), else this process's.
	UID int
	// DropsRoot reports that this process runs as root and the commands
	// do not: they run as SandboxUID in a user namespace of their own
	// with no capabilities, and every file and directory of the
	// directories they see (read-only) that not everyone may read is
	// hidden from them. See BashExec for the limits of this.
	DropsRoot bool
	// Reason says why the sandbox is not available.
	Reason string
	// ProcessTree says how a command's processes are found and killed when
	// it ends, inside the sandbox or not.
	ProcessTree string

	// tmpSize reports that bwrap bounds the private /tmp (--size, since
	// bubblewrap 0.8).
	tmpSize bool
}

// String describes the sandbox in a sentence fit for a start-up message.
func (s SandboxInfo) String() string {
	if s.Available {
		user := fmt.Sprintf("commands run as uid %d", s.UID)
		if s.DropsRoot {
			user += " (not root) in their own user namespace, root-only files hidden"
		} else if s.UID == 0 {
			user += " (root, without capabilities; root-only files hidden)"
		}
		return fmt.Sprintf("bash_exec sandbox: bubblewrap (%s): workspace writable, system directories read-only, "+
			"no network unless allowed, scrubbed environment, %s, whole process tree killed when a command ends", s.Path, user)
	}
	return fmt.Sprintf("bash_exec sandbox: NONE (%s): commands can read and write anything this process can and use the network; "+
		"process tree: %s", s.Reason, s.ProcessTree)
}

// SandboxStatus reports whether bash_exec can sandbox commands here. It
// probes bubblewrap once per process, by running a trivial command in a
// sandbox like bash_exec's.
func SandboxStatus() SandboxInfo {
	info := probeSandbox()
	info.ProcessTree = process.Containment()
	return info
}

// probeSandbox looks for a working bwrap once.
var probeSandbox = sync.OnceValue(func() SandboxInfo {
	if runtime.GOOS != "linux" {
		return SandboxInfo{Reason: "the sandbox needs Linux (bubblewrap)"}
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return SandboxInfo{Reason: "bwrap (package bubblewrap) is not installed"}
	}
	dir, err := os.MkdirTemp("", "agentgraph-sandbox-probe-")
	if err != nil {
		return SandboxInfo{Path: bwrap, Reason: fmt.Sprintf("cannot create a probe directory: %v", err)}
	}
	defer os.RemoveAll(dir)
	var failures []string
	root := os.Geteuid() == 0
	if root {
		// Commands will need the root-only files of the system
		// directories masked: find them while the probe runs.
		for _, d := range systemDirs {
			if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
				go rootOnlyIn(d)
			}
		}
	}
	tries := []sandbox{{userNS: false}, {userNS: true}}
	if root {
		// As root, commands run as SandboxUID in a user namespace of
		// their own where the kernel allows it, as root without
		// capabilities where it does not.
		tries = []sandbox{{userNS: true, dropRoot: true}, {userNS: false}}
	}
	for _, try := range tries {
		tmpSize := true
		for {
			sb := sandbox{bwrap: bwrap, userNS: try.userNS, dropRoot: try.dropRoot, workspace: dir, tmpSize: tmpSize, noMasks: true}
			args := append(sb.args(), "--", "true")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			out, err := exec.CommandContext(ctx, bwrap, args...).CombinedOutput()
			cancel()
			if err == nil {
				uid := os.Geteuid()
				if try.dropRoot {
					uid = SandboxUID
				}
				return SandboxInfo{Available: true, Path: bwrap, UserNamespace: try.userNS, UID: uid, DropsRoot: try.dropRoot, tmpSize: tmpSize}
			}
			failures = append(failures, fmt.Sprintf("%v: %s", err, strings.TrimSpace(string(out))))
			// A bwrap older than 0.8 does not know --size: only then is it
			// worth trying again without it.
			if !tmpSize || !strings.Contains(string(out), "--size") {
				break
			}
			tmpSize = false
		}
	}
	return SandboxInfo{Path: bwrap, Reason: "bwrap does not work here: " + strings.Join(failures, "; ")}
})

// sandboxHome is HOME inside the sandbox when WithHome is not set: a
// directory of the sandbox's private /tmp.
const sandboxHome = "/tmp/home"

// sandboxTmpSize bounds the sandbox's private /tmp, a tmpfs in memory
// that would otherwise take up to half of it, per command.
const sandboxTmpSize = 1 << 30

// systemDirs are bound read-only into the sandbox where they exist
// (symlinks, as in merged-/usr systems, are recreated as symlinks).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// maskedFiles are hidden (replaced by an unreadable node) inside the
// sandbox, where commands may run as root: password hashes and host keys.
var maskedFiles = []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssh/ssh_host_*_key"}

// sandbox describes one bubblewrap invocation.
type sandbox struct {
	bwrap         string
	userNS        bool
	network       bool
	workspace     string
	home          string // "" for sandboxHome in the private /tmp
	readOnlyPaths []string
	writablePaths []string
	tmpSize       bool // bound /tmp to sandboxTmpSize
	// dropRoot runs the command as SandboxUID, with no further user
	// namespaces (this process is root; needs userNS).
	dropRoot bool
	// noMasks leaves out the masks of root-only files (the probe).
	noMasks bool
}

// args returns bwrap's options, up to the command.
func (s sandbox) args() []string {
	a := []string{
		"--die-with-parent", // the sandbox dies with bash_exec's process
		"--new-session",     // no access to a controlling terminal
		"--unshare-pid",     // the command's processes die with the sandbox's init
		"--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--cap-drop", "ALL",
	}
	if s.userNS {
		a = append(a, "--unshare-user")
		if s.dropRoot {
			a = append(a, "--uid", strconv.Itoa(SandboxUID), "--gid", strconv.Itoa(SandboxGID), "--disable-userns")
		}
	}
	if !s.network {
		a = append(a, "--unshare-net")
	}
	for _, dir := range systemDirs {
		fi, err := os.Lstat(dir)
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			if target, err := os.Readlink(dir); err == nil {
				a = append(a, "--symlink", target, dir)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", dir, dir)
		}
	}
	for _, pattern := range maskedFiles {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			a = append(a, "--ro-bind", os.DevNull, m)
		}
	}
	if s.network {
		// /etc/resolv.conf often links there.
		a = append(a, "--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve")
	}
	// bwrap leaves /proc/sys and /proc/sysrq-trigger writable when it runs
	// as root (without a user namespace, or with root mapped to root):
	// cover them, and /proc/irq and /proc/bus, with read-only binds, or a
	// command as uid 0 could set kernel.core_pattern, a program the host
	// kernel runs as root.
	a = append(a, "--dev", "/dev", "--proc", "/proc",
		"--ro-bind", "/proc/sys", "/proc/sys", "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
		"--ro-bind-try", "/proc/irq", "/proc/irq", "--ro-bind-try", "/proc/bus", "/proc/bus")
	if s.tmpSize {
		a = append(a, "--size", strconv.Itoa(sandboxTmpSize))
	}
	a = append(a, "--tmpfs", "/tmp")
	for _, p := range s.readOnlyPaths {
		a = append(a, "--ro-bind-try", p, p)
	}
	if os.Geteuid() == 0 && !s.noMasks {
		// The command's processes are host root (kuid 0) even as
		// SandboxUID, only without capabilities: the owner of root's
		// files, which the kernel lets it read. Hide those that not
		// everyone may read.
		trees := slices.Clone(s.readOnlyPaths)
		for _, dir := range systemDirs {
			if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
				trees = append(trees, dir)
			}
		}
		keep := slices.Concat([]string{s.workspace, s.home}, s.writablePaths)
		a = append(a, maskArgs(trees, slices.DeleteFunc(keep, func(p string) bool { return p == "" }))...)
	}
	for _, p := range s.writablePaths {
		a = append(a, "--bind-try", p, p)
	}
	a = append(a, "--bind", s.workspace, s.workspace)
	if s.home != "" {
		a = append(a, "--bind", s.home, s.home)
	} else {
		a = append(a, "--dir", sandboxHome)
	}
	return append(a, "--chdir", s.workspace)
}

// defaultEnvAllow are the variables bash_exec passes on by default.
var defaultEnvAllow = []string{"PATH", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "USER", "LOGNAME"}

// toolchainEnv are the toolchains' variables commands get too (some are
// then replaced: GOCACHE by the cache directory's, see WithCacheDir).
var toolchainEnv = []string{
	"GOFLAGS", "GOPATH", "GOROOT", "GOCACHE", "GOMODCACHE", "GOPROXY", "GOPRIVATE", "GONOPROXY", "GONOSUMDB",
	"GOSUMDB", "GOINSECURE", "GOTOOLCHAIN", "GOOS", "GOARCH", "GOAMD64", "GOARM64", "CGO_ENABLED",
	"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX",
	"CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "NODE_PATH", "JAVA_HOME",
}

// defaultPath is PATH when this process has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// secretWords mark secret-looking variable names; see SecretEnvName.
var (
	secretWords    = []string{"API_KEY", "APIKEY", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "PRIVATE_KEY", "ACCESS_KEY", "COOKIE"}
	secretSuffixes = []string{"_TOKEN", "_KEY", "_AUTH", "_PAT", "_PASS", "_PWD"}
)

// SecretEnvName reports whether an environment variable's name looks like
// it holds a secret: it contains API_KEY, APIKEY, SECRET, PASSWORD,
// PASSWD, PASSPHRASE, CREDENTIAL, PRIVATE_KEY, ACCESS_KEY or COOKIE, ends
// in _TOKEN, _KEY, _AUTH, _PAT, _PASS or _PWD (MYSQL_PWD), or is TOKEN or
// SSH_AUTH_SOCK (the agent's socket signs as the user; letter case
// ignored). bash_exec never
// passes such variables on unless WithEnv names them exactly.
func SecretEnvName(name string) bool {
	upper := strings.ToUpper(name)
	if upper == "TOKEN" || upper == "SSH_AUTH_SOCK" {
		return true
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(upper, s) {
			return true
		}
	}
	for _, w := range secretWords {
		if strings.Contains(upper, w) {
			return true
		}
	}
	return false
}

// commandEnv returns the environment of a bash_exec, run_tests or
// RunCommand command, by allowlist: the variables of environ named in
// defaultEnvAllow, toolchainEnv or WithEnv (a secret-looking one, see
// SecretEnvVar, only when WithEnv names it exactly), PATH without its
// entries inside the workspace at root or relative ones, HOME=home and,
// in the sandbox, TMPDIR=/tmp.
func commandEnv(environ []string, cfg *config, home string, sandboxed bool, root string) []string {
	allow := slices.Concat(defaultEnvAllow, toolchainEnv, cfg.envAllow)
	if !sandboxed {
		allow = append(allow, "TMPDIR")
	}
	env := []string{"HOME=" + home}
	if sandboxed {
		env = append(env, "TMPDIR=/tmp")
	}
	env = passEnv(env, environ, func(kv, name string) bool {
		if name == "HOME" || (sandboxed && name == "TMPDIR") || !envAllowed(name, allow) {
			return false
		}
		// A value that looks secret passes only when named exactly.
		return !SecretEnvVar(kv) || slices.Contains(cfg.envAllow, name)
	})
	for i, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			// Without the workspace's entries, where a model could plant
			// a go or a python, and the relative ones.
			if p = PathListOutside(p, root); p == "" {
				p = defaultPath
			}
			env[i] = "PATH=" + p
		}
	}
	return env
}

// SecretEnvVar reports whether an environment entry ("NAME=value") looks
// like it holds a secret: its name does (see SecretEnvName), or its value
// is a URL with a password in it (DATABASE_URL=postgres://u:pw@db/x) or an
// HTTP(S) URL with any user information, which there is a token
// (https://ghp_…@github.com/o/r.git, a Sentry DSN).
func SecretEnvVar(kv string) bool {
	name, value, _ := strings.Cut(kv, "=")
	return SecretEnvName(name) || urlWithPassword.MatchString(value) || httpURLWithUser.MatchString(value)
}

// ScrubEnv returns environ without the entries that look like they hold
// secrets (see SecretEnvVar): the environment to give a program a model
// wrote when it needs the rest of this process's.
func ScrubEnv(environ []string) []string {
	return slices.DeleteFunc(slices.Clone(environ), SecretEnvVar)
}

// urlWithPassword matches a URL with a password in its user information
// (scheme://user:password@host).
var urlWithPassword = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s:]*:[^/?#@\s]+@`)

// httpURLWithUser matches an http or https URL with user information
// (https://token@host).
var httpURLWithUser = regexp.MustCompile(`(?i)\bhttps?://[^/?#@\s]+@`)

// passEnv appends to env the entries of environ that keep accepts, and
// PATH=defaultPath if that leaves no PATH.
func passEnv(env, environ []string, keep func(kv, name string) bool) []string {
	hasPath := false
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || !keep(kv, name) {
			continue
		}
		hasPath = hasPath || name == "PATH"
		env = append(env, kv)
	}
	if !hasPath {
		env = append(env, "PATH="+defaultPath)
	}
	return env
}

// envAllowed reports whether the variable name matches an allow pattern.
// A secret-looking name must be named exactly.
func envAllowed(name string, allow []string) bool {
	secret := SecretEnvName(name)
	for _, pattern := range allow {
		if pattern == name {
			return true
		}
		if secret {
			continue
		}
		if ok, err := path.Match(pattern, name); err == nil && ok {
			return true
		}
	}
	return false
}

// checkCommand applies the allow and deny patterns of cfg to command.
func checkCommand(cfg *config, command string) error {
	for _, re := range cfg.commandDeny {
		if re != nil && re.MatchString(command) {
			return &CommandRefusedError{Command: command, Pattern: re.String()}
		}
	}
	if len(cfg.commandAllow) == 0 {
		return nil
	}
	for _, re := range cfg.commandAllow {
		if re != nil && re.MatchString(command) {
			return nil
		}
	}
	return &CommandRefusedError{Command: command}
}

// notSandboxed is what the model is told when its commands are not
// sandboxed.
const notSandboxed = "WARNING: commands are NOT sandboxed: they run with all the rights of the agent's process, " +
	"can read and change any file it can, and can use the network."

// sandboxSentence tells the model how its commands are confined.
func sandboxSentence(cfg *config) string {
	if cfg.sandbox == SandboxOff || !cfg.sandboxInfo().Available {
		if cfg.sandbox == SandboxRequired {
			return "Commands run only in a sandbox, and there is none on this machine: every command is refused."
		}
		return notSandboxed
	}
	s := "Commands run in a sandbox: only the workspace, /tmp, $HOME and the build caches are writable"
	if !cfg.network {
		s += ", and there is no network access"
	}
	return s + "."
}
