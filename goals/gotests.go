package goals

import (
	"bufio"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// goTestFuncs returns the names of the Test and Fuzz functions of the test
// files of the package pkg of the Go module in dir, read from the source:
// for a package whose tests did not build at the baseline. Files excluded
// by build constraints on this platform are left out, and so are files
// that do not parse. It returns nil for a package outside the module.
func goTestFuncs(dir, pkg string) []string {
	module := goModulePath(filepath.Join(dir, "go.mod"))
	if module == "" {
		return nil
	}
	var pkgDir string
	switch {
	case pkg == module:
		pkgDir = dir
	case strings.HasPrefix(pkg, module+"/"):
		pkgDir = filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(pkg, module+"/")))
	default:
		return nil
	}
	entries, err := os.ReadDir(pkgDir)
	if err != nil {
		return nil
	}
	var names []string
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(pkgDir, e.Name()); err != nil || !ok {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(pkgDir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Type.Params == nil || fn.Type.Params.NumFields() != 1 {
				continue
			}
			if name := fn.Name.Name; isGoTestName(name, "Test") || isGoTestName(name, "Fuzz") {
				if name != "TestMain" && !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// isGoTestName reports whether name is prefix followed by nothing or by a
// character that is not a lower-case letter, as go test requires.
func isGoTestName(name, prefix string) bool {
	if !strings.HasPrefix(name, prefix) {
		return false
	}
	if len(name) == len(prefix) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(name[len(prefix):])
	return !unicode.IsLower(r)
}

// goModulePath returns the module path declared by the go.mod file at
// name, or "".
func goModulePath(name string) string {
	f, err := os.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, "module")
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		rest, _, _ = strings.Cut(strings.TrimSpace(rest), "//")
		rest = strings.TrimSpace(rest)
		if p, err := strconv.Unquote(rest); err == nil {
			return p
		}
		return rest
	}
	return ""
}
