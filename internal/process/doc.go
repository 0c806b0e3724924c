// Package process runs a command so that everything it started
// (pipelines, background jobs, test binaries, daemons that called setsid)
// dies with it: when it exits, when its timeout expires and when the
// context is cancelled. The coding tools and the goals both run commands
// this way.
//
// The command runs in its own process group. On Linux it is also started
// in a fresh cgroup v2 when this process may create one (typically as root,
// or under a delegated cgroup); a cgroup holds every descendant whatever
// session or process group it moves to, so killing it leaves nothing
// behind. Without a writable cgroup, descendants are found by a random
// marker variable in their environment, which catches processes that left
// the process group (setsid) but not those that also cleared or replaced
// their environment (env -i). [Containment] says which mechanism is in use.
//
// Elsewhere on Unix only the process group is killed, and on other systems
// only the command's first process.
package process
