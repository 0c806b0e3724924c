// Package process runs a command in its own process group, so that a
// timeout or a cancelled context kills everything the command started
// (pipelines, background jobs, test binaries), not just its first process.
// The coding tools and the goals both run commands this way.
package process
