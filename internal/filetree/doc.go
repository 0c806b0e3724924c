// Package filetree answers small questions about a project's directory
// tree that both the coding tools and the goals ask, such as whether a
// tests directory holds Python files.
package filetree
