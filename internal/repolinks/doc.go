// Package repolinks checks that the repository's text refers only to
// itself: a clone must be complete, so no Markdown link, comment or script
// may point at a file outside the repository root or at one that does not
// exist in it.
//
// Its test walks the files git tracks (and the untracked ones it does not
// ignore) — Markdown, Go, shell, YAML and the CI scripts — and fails
// naming file:line for
//
//   - a Markdown link whose target leaves the repository root, names no
//     file or directory of the repository, or names a heading the target
//     file does not have;
//   - a "../" path (in Markdown, a shell script, or a Go comment) that
//     leaves the repository root, resolved from the directory of the file
//     that holds it, or that names a missing Markdown, Go, shell,
//     JavaScript, YAML or JSON file;
//   - a relative path to a Markdown, Go, shell or JavaScript file that
//     exists neither from the repository root nor from the file's
//     directory (such as a sibling checkout's shared/docs/… that a clone
//     does not have).
//
// Go string literals are not checked: they are data (the coding tools'
// tests use "../outside" on purpose), not references for a reader.
package repolinks
