// Package guard holds repository-wide tests of the house rules: every
// package says what it is for, and the pure core imports nothing that
// does I/O, reads the clock by itself or logs.
package guard

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cohort-dev/cohort/internal/testkit"
)

// packages returns every directory of the module holding non-test Go
// files, relative to the root, with those files parsed (imports and
// comments only).
func packages(t *testing.T) map[string][]string {
	t.Helper()
	root := testkit.ModuleRoot()
	dirs := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			dirs[rel] = append(dirs[rel], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestEveryPackageHasADoc: a package must say what it is for (and, by
// the house style, what it must not do).
func TestEveryPackageHasADoc(t *testing.T) {
	for dir, files := range packages(t) {
		documented := false
		for _, f := range files {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if af.Doc != nil && strings.TrimSpace(af.Doc.Text()) != "" {
				documented = true
			}
		}
		if !documented {
			t.Errorf("package %s has no doc comment", dir)
		}
	}
}

// pure lists the packages that must stay pure functions of their inputs:
// no I/O, no network, no logging, no goroutine plumbing, no clock of
// their own. (The state machines join this list as they are written.)
var pure = []string{"record", "coordinator/machine", "coordinator/groups", "coordinator/consumer", "coordinator/handoff", "assign"}

var forbidden = []string{"os", "net", "net/http", "log", "log/slog", "io/fs", "os/exec", "sync", "syscall", "github.com/cohort-dev/cohort/store/pebble", "github.com/cohort-dev/cohort/topics"}

func TestPureCoreImports(t *testing.T) {
	pkgs := packages(t)
	checked := 0
	for _, dir := range pure {
		files, ok := pkgs[filepath.FromSlash(dir)]
		if !ok {
			if _, err := os.Stat(filepath.Join(testkit.ModuleRoot(), dir)); err == nil {
				t.Errorf("pure package %s has no Go files", dir)
			}
			continue // not written yet
		}
		checked++
		for _, f := range files {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, bad := range forbidden {
					if path == bad {
						t.Errorf("%s imports %s: the core must stay pure", f, path)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no pure package found: the list is stale")
	}
}
