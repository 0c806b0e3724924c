package goals

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// MaxTestFiles bounds the test files a baseline records to protect them
// (see Config.AllowTestEdits); the first ones in lexical order of their
// paths are kept.
const MaxTestFiles = 5000

// testDirs are directories all of whose files are test files.
var testDirs = map[string]bool{
	"tests": true, "test": true, "__tests__": true, "spec": true, "testdata": true,
}

// skippedDirs are directories never searched for test files: version
// control, dependencies, build output and caches.
var skippedDirs = map[string]bool{
	"node_modules": true, "target": true, "vendor": true, "venv": true,
	"__pycache__": true, "dist": true, "build": true, "coverage": true,
}

// jsTestExts are the extensions of JavaScript and TypeScript test files.
var jsTestExts = map[string]bool{
	".js": true, ".jsx": true, ".mjs": true, ".cjs": true,
	".ts": true, ".tsx": true, ".mts": true, ".cts": true,
}

// IsTestFile reports whether the file at rel, a slash-separated path
// relative to the project directory, is a test file, which the test goals
// protect (see Config.AllowTestEdits):
//
//   - Go: *_test.go;
//   - Python: test_*.py, *_test.py, conftest.py;
//   - JavaScript and TypeScript: *.test.* and *.spec.* (.js, .jsx, .mjs,
//     .cjs, .ts, .tsx, .mts, .cts);
//   - any file under a directory named tests, test, __tests__, spec or
//     testdata (Rust integration tests, fixtures, golden files).
//
// Rust unit tests live in the source files they test and are not covered.
func IsTestFile(rel string) bool {
	rel = path.Clean(filepath.ToSlash(rel))
	dir, name := path.Split(rel)
	for _, d := range strings.Split(strings.Trim(dir, "/"), "/") {
		if testDirs[d] {
			return true
		}
	}
	ext := path.Ext(name)
	switch {
	case strings.HasSuffix(name, "_test.go"):
		return true
	case ext == ".py":
		return strings.HasPrefix(name, "test_") || strings.HasSuffix(name, "_test.py") || name == "conftest.py"
	case jsTestExts[ext]:
		stem := strings.TrimSuffix(name, ext)
		return strings.HasSuffix(stem, ".test") || strings.HasSuffix(stem, ".spec")
	}
	return false
}

// hashTestFiles returns the SHA-256 of each test file under dir (see
// IsTestFile), by slash-separated relative path. Hidden directories and
// skippedDirs are not searched; symbolic links are not followed.
func hashTestFiles(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // unreadable: not recorded, so never reported
		}
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(d.Name(), ".") || skippedDirs[d.Name()]) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || !IsTestFile(filepath.ToSlash(rel)) {
			return nil
		}
		if len(files) == MaxTestFiles {
			return fs.SkipAll
		}
		sum, err := hashFile(p)
		if err != nil {
			return nil
		}
		files[filepath.ToSlash(rel)] = sum
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("goals: record test files: %w", err)
	}
	return files, nil
}

func hashFile(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
