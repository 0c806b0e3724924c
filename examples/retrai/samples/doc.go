// Package samples bundles the small broken projects that the retrAI demo
// and tests fix, and the scripted model answers that fix them.
//
// Each sample lives in testdata/<name> (so that the go command neither
// builds nor tests it) and is embedded in the binary. A file whose name
// ends in ".sample" loses that suffix when copied: go.mod is stored as
// go.mod.sample, because a directory holding a go.mod is another module,
// which go:embed refuses.
//
//   - go-test: a Go module whose SumRange leaves out its upper bound (an
//     off-by-one bug); the goal go-test is reached when `go test ./...`
//     passes.
//   - pytest: a Python module whose count_words splits on single spaces;
//     the goal pytest needs python3 with pytest.
//   - shell: a text file with a typo and a .retrai.yml whose command
//     checks the file's content; the goal is shell.
package samples
