// Package guard holds repository-wide tests of the house rules: every
// package says what it is for, and the pure core imports nothing that
// does I/O, reads the clock by itself or logs.
package guard

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// no I/O, no network, no logging, no goroutines, no clock of their own
// (docs/ARCHITECTURE.md, "The one record rule"). Each is checked over its
// whole import graph, as tailscale's tstest/deptest does, not only its
// own import lines: a pure package that imports a helper that opens a
// file is not pure.
var pure = []string{
	"record",
	"assign",
	"observe", // the observer's types, which machines return in their Output
	"coordinator/machine",
	"coordinator/groups",
	"coordinator/groups/classic",
	"coordinator/groups/consumer",
	"coordinator/groups/grouptype",
	"coordinator/groups/migration",
	"coordinator/groups/offsets",
	"coordinator/groups/share",
	"coordinator/global",
	"coordinator/handoff",
	"coordinator/txn",
	"coordinator/sharestate",
}

// pureModule is what a pure package may reach outside the standard
// library: the other pure packages and franz-go's wire types.
var pureModule = map[string]string{
	"github.com/twmb/franz-go/pkg/kmsg":               "the wire types of requests and responses",
	"github.com/twmb/franz-go/pkg/kmsg/internal/kbin": "kmsg's encoding",
	"github.com/twmb/franz-go/pkg/kbin":               "the encoding of records' values",
	"github.com/twmb/franz-go/pkg/kerr":               "Kafka's error codes",
}

// bannedStd are the standard packages no pure package may reach, even
// through another package, each with the reason. (os, sync and syscall
// are reached through fmt, so they are banned only as direct imports:
// see bannedDirect.)
var bannedStd = map[string]string{
	"net":           "network I/O",
	"net/http":      "network I/O",
	"os/exec":       "starts processes",
	"os/signal":     "process signals",
	"log":           "logging: a machine reports through its Output",
	"log/slog":      "logging: a machine reports through its Output",
	"crypto/rand":   "randomness the caller cannot seed: ids come from a generator the caller seeds",
	"math/rand":     "the global random source: ids come from a generator the caller seeds",
	"runtime/pprof": "profiling I/O",
	"database/sql":  "I/O",
	"plugin":        "loads code at run time",
	"testing":       "test code in a production package",
}

// bannedDirect are the packages a pure package may not import itself.
var bannedDirect = map[string]string{
	"os":          "files, environment, exit",
	"io/fs":       "file systems",
	"sync":        "locks and goroutine plumbing: the shard's loop runs one event at a time",
	"sync/atomic": "goroutine plumbing",
	"syscall":     "system calls",
	"unsafe":      "memory tricks the race detector cannot see",
}

// clockCalls are the time package's functions that read or wait on the
// real clock; a machine is handed "now" and returns timers instead.
var clockCalls = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true,
}

// listed is one package of `go list -deps -json`.
type listed struct {
	ImportPath string
	Standard   bool
	Imports    []string
}

// depGraph lists pkgs and everything they import, by import path.
func depGraph(t *testing.T, pkgs []string) map[string]listed {
	t.Helper()
	args := append([]string{"list", "-deps", "-json=ImportPath,Standard,Imports"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = testkit.ModuleRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string]listed{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		graph[p.ImportPath] = p
	}
	return graph
}

// chain is the import path from root to dep in graph, found breadth
// first: what to show a reader so they see why root reaches dep.
func chain(graph map[string]listed, root, dep string) string {
	prev := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == dep {
			var path []string
			for ; p != ""; p = prev[p] {
				path = append(path, strings.TrimPrefix(p, module+"/"))
			}
			slices.Reverse(path)
			return strings.Join(path, " → ")
		}
		for _, imp := range graph[p].Imports {
			if _, seen := prev[imp]; !seen {
				prev[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return dep
}

const module = "github.com/cohort-dev/cohort"

// TestPureCoreDeps: no pure package reaches, through any chain of
// imports, a package that does I/O, logs, reads randomness it cannot be
// handed, or is one of the project's impure packages (stores, the wire
// server, the topic log, the node).
func TestPureCoreDeps(t *testing.T) {
	isPure := map[string]bool{}
	var roots []string
	for _, p := range pure {
		isPure[module+"/"+p] = true
		roots = append(roots, "./"+p)
	}
	graph := depGraph(t, roots)
	for _, p := range pure {
		root := module + "/" + p
		if _, ok := graph[root]; !ok {
			t.Fatalf("pure package %s not found: the list is stale", p)
		}
		for dep := range reach(graph, root) {
			d := graph[dep]
			var why string
			switch {
			case d.Standard:
				why = bannedStd[dep]
			case strings.HasPrefix(dep, module+"/"):
				if !isPure[dep] {
					why = "a package of the project that is not pure"
				}
			case pureModule[dep] == "":
				why = "a module outside the pure set (only franz-go's wire types are)"
			}
			if why != "" {
				t.Errorf("pure %s reaches %s (%s): %s", p, dep, why, chain(graph, root, dep))
			}
		}
	}
}

// groupLayers is the import direction of the group coordinator's
// packages (docs/ARCHITECTURE.md, "The group machines"): each may reach,
// directly or not, only the group packages listed for it, so that the
// classic, consumer and share rules each stand alone, the migration is
// the one package that knows both of the first two, and a new group type
// is a package beside them that touches none.
var groupLayers = map[string][]string{
	"coordinator/groups":           {"classic", "consumer", "migration", "share", "grouptype", "offsets"},
	"coordinator/groups/migration": {"classic", "consumer", "grouptype", "offsets"},
	"coordinator/groups/classic":   {"grouptype", "offsets"},
	"coordinator/groups/consumer":  {"grouptype", "offsets"},
	"coordinator/groups/share":     {"grouptype", "offsets"},
	"coordinator/groups/grouptype": {"offsets"},
	"coordinator/groups/offsets":   {},
}

// TestGroupPackagesLayered: no group package reaches a group package
// above or beside it (groupLayers).
func TestGroupPackagesLayered(t *testing.T) {
	var roots []string
	for p := range groupLayers {
		roots = append(roots, "./"+p)
	}
	slices.Sort(roots)
	graph := depGraph(t, roots)
	const prefix = module + "/coordinator/groups"
	for p, allowed := range groupLayers {
		root := module + "/" + p
		if _, ok := graph[root]; !ok {
			t.Fatalf("group package %s not found: the list is stale", p)
		}
		ok := map[string]bool{}
		for _, a := range allowed {
			ok[prefix+"/"+a] = true
		}
		for dep := range reach(graph, root) {
			if (dep == prefix || strings.HasPrefix(dep, prefix+"/")) && !ok[dep] {
				t.Errorf("%s reaches %s, which it must not: %s", p, strings.TrimPrefix(dep, module+"/"), chain(graph, root, dep))
			}
		}
	}
}

// reach is every package root imports, directly or not.
func reach(graph map[string]listed, root string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, imp := range graph[p].Imports {
			if !seen[imp] {
				seen[imp] = true
				walk(imp)
			}
		}
	}
	walk(root)
	return seen
}

// TestPureCoreCode: the pure packages' own files import none of
// bannedDirect, call none of the time package's clock functions and start
// no goroutine.
func TestPureCoreCode(t *testing.T) {
	pkgs := packages(t)
	for _, dir := range pure {
		files, ok := pkgs[filepath.FromSlash(dir)]
		if !ok {
			t.Fatalf("pure package %s has no Go files: the list is stale", dir)
		}
		for _, f := range files {
			fset := token.NewFileSet()
			af, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			timeName := ""
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if why, bad := bannedDirect[path]; bad {
					t.Errorf("%s imports %s (%s): the core must stay pure", f, path, why)
				}
				if path == "time" {
					timeName = "time"
					if imp.Name != nil {
						timeName = imp.Name.Name
					}
				}
			}
			ast.Inspect(af, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					t.Errorf("%s: a goroutine in the pure core", fset.Position(n.Pos()))
				case *ast.SelectorExpr:
					if x, ok := n.X.(*ast.Ident); ok && timeName != "" && x.Name == timeName && clockCalls[n.Sel.Name] {
						t.Errorf("%s: time.%s reads the real clock: a machine is handed now", fset.Position(n.Pos()), n.Sel.Name)
					}
				}
				return true
			})
		}
	}
}

// TestInternalHoldsTestKits: internal/ holds test kits only, so no
// production package imports it (shared production code lives in a
// package named for what it does, such as observe/ratelog or loadgen).
func TestInternalHoldsTestKits(t *testing.T) {
	graph := depGraph(t, []string{"./..."})
	for path, p := range graph {
		if !strings.HasPrefix(path, module+"/") || strings.HasPrefix(path, module+"/internal/") {
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/internal/") {
				t.Errorf("production package %s imports the test kit %s", strings.TrimPrefix(path, module+"/"), strings.TrimPrefix(imp, module+"/"))
			}
		}
	}
}

// testOnly are modules the project's tests use that no program embedding
// its packages should have to download: they belong in the test modules
// (e2e/, bench/).
var testOnly = []string{
	"github.com/IBM/sarama",
	"github.com/confluentinc/confluent-kafka-go",
	"github.com/segmentio/kafka-go",
	"github.com/chromedp/",
	"github.com/twmb/franz-go/pkg/kfake",
	"go.etcd.io/etcd/server",
}

// TestLibraryModule: the project's module requires only what its
// packages and their tests import (go mod tidy has nothing to change),
// and its module graph holds none of the test-only clients and servers.
func TestLibraryModule(t *testing.T) {
	gomod := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command("go", append([]string{"mod"}, args...)...)
		cmd.Dir = testkit.ModuleRoot()
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go mod %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	gomod("tidy", "-diff")
	for _, line := range strings.Split(string(gomod("graph")), "\n") {
		for _, m := range testOnly {
			if strings.Contains(line, m) {
				t.Errorf("the library's module graph holds the test-only %s: %s", m, line)
			}
		}
	}
}

// storeWriters are the files outside store/ that may build a store
// batch: the shard runtime, which writes what the machines emit (the one
// convention for durable state, docs/ARCHITECTURE.md).
var storeWriters = map[string]bool{
	"coordinator/runtime.go": true,
	// The upgrade of records an older version kept outside the
	// machines, before the machine that owns them loads.
	"coordinator/upgrade.go": true,
}

// TestOnlyTheRuntimeWritesTheStore: no production file outside store/
// builds a store.Batch but the runtime's (the one convention for durable
// state: records of machines, written by the runtime).
func TestOnlyTheRuntimeWritesTheStore(t *testing.T) {
	writes := map[string]bool{}
	for dir, files := range packages(t) {
		if dir == "store" || strings.HasPrefix(dir, "store"+string(filepath.Separator)) {
			continue
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(src, []byte("store.Batch")) {
				continue
			}
			rel, _ := filepath.Rel(testkit.ModuleRoot(), f)
			rel = filepath.ToSlash(rel)
			writes[rel] = true
			if !storeWriters[rel] {
				t.Errorf("%s writes the store: durable state changes by records a machine emits, which the runtime writes", rel)
			}
		}
	}
	for rel := range storeWriters {
		if !writes[rel] {
			t.Errorf("%s is listed as the store's writer but builds no batch: the list is stale", rel)
		}
	}
}
