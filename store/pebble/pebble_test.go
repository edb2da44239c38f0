package pebble_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	pdb "github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/cohort-dev/cohort/store/storetest"
)

// TestConformance runs the suite twice: with the journal's default segment
// size, where nothing is folded into Pebble in a test this small, and with
// 256-byte segments, where every few writes close a segment and fold it,
// so that reads merge the journal's overlay with Pebble throughout.
func TestConformance(t *testing.T) {
	t.Run("default segments", func(t *testing.T) { conformance(t, pebble.Options{}) })
	t.Run("tiny segments", func(t *testing.T) { conformance(t, pebble.Options{SegmentSize: 256}) })
}

func conformance(t *testing.T, opts pebble.Options) {
	var mu sync.Mutex
	dirs := map[store.Store]string{} // which directory each store was opened on
	openDir := func(t *testing.T, dir string) store.Store {
		s, err := pebble.Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		dirs[s] = dir
		return s
	}
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Store { return openDir(t, t.TempDir()) },
		Reopen: func(t *testing.T, old store.Store) store.Store {
			mu.Lock()
			dir := dirs[old]
			mu.Unlock()
			return openDir(t, dir)
		},
	})
}

func mustOpen(t *testing.T, dir string, opts pebble.Options) *pebble.Store {
	t.Helper()
	s, err := pebble.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSecondOpenFails checks that a directory can be open in only one Store,
// however its path is spelled. (Across processes: see TestCrash.)
func TestSecondOpenFails(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, pebble.Options{})

	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(mustGetwd(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, dir + "/", rel, link} {
		s2, err := pebble.Open(path, pebble.Options{})
		if err == nil {
			s2.Close()
			t.Fatalf("second Open(%q) of an open store succeeded", path)
		}
		if !errors.Is(err, pebble.ErrLocked) {
			t.Fatalf("second Open(%q) = %v, want ErrLocked", path, err)
		}
	}

	// Closing releases the directory.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, dir, pebble.Options{})
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// crashMem simulates power loss on fs: everything not fsynced is dropped. It
// follows vfs.NewStrictMem's documented recipe; close stops the database
// (its final syncs are ignored, so it cannot persist anything).
func crashMem(t *testing.T, fs *vfs.MemFS, close func() error) {
	t.Helper()
	fs.SetIgnoreSyncs(true)
	if err := close(); err != nil {
		t.Fatalf("close before simulated crash: %v", err)
	}
	fs.ResetToSyncedState()
	fs.SetIgnoreSyncs(false)
}

// TestApplySyncsBeforeReturning proves Apply fsyncs: on a filesystem that
// loses unsynced data at a simulated power cut, every acknowledged batch
// from concurrent writers survives. The control run shows the same harness
// does lose writes committed without sync, so the test can fail.
func TestApplySyncsBeforeReturning(t *testing.T) {
	const writers, perWriter = 16, 25
	key := func(w, i int) []byte { return fmt.Appendf(nil, "w%02d/%03d", w, i) }

	// The control writes with the raw Pebble DB: one synced key, then
	// unsynced ones. Only the synced key may survive.
	t.Run("control: unsynced writes are lost", func(t *testing.T) {
		fs := vfs.NewStrictMem()
		// Create "db" durably, as pebble.Open does, so that only the sync
		// mode of the writes differs.
		if err := fs.MkdirAll("db", 0o755); err != nil {
			t.Fatal(err)
		}
		if root, err := fs.OpenDir("."); err != nil || root.Sync() != nil {
			t.Fatalf("sync root: %v", err)
		}
		opts := &pdb.Options{FS: fs, Logger: quietLogger{}}
		db, err := pdb.Open("db", opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Set([]byte("synced"), []byte("v"), pdb.Sync); err != nil {
			t.Fatal(err)
		}
		for i := range perWriter {
			if err := db.Set(key(0, i), []byte("v"), pdb.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		crashMem(t, fs, db.Close)
		if db, err = pdb.Open("db", opts); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, closer, err := db.Get([]byte("synced")); err != nil {
			t.Fatalf("synced write lost: %v", err)
		} else {
			closer.Close()
		}
		if _, closer, err := db.Get(key(0, 0)); err == nil {
			closer.Close()
			t.Fatal("an unsynced write survived the simulated crash; the harness cannot detect a missing fsync")
		}
	})

	t.Run("Apply keeps acknowledged writes", func(t *testing.T) {
		fs := vfs.NewStrictMem()
		// A nested path: Open must make each new directory durable too.
		const dir = "data/cohort/db"
		s, err := pebble.Open(dir, pebble.Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range perWriter {
					var b store.Batch
					b.Put(key(w, i), key(w, i))
					if err := s.Apply(&b); err != nil {
						t.Errorf("Apply: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		crashMem(t, fs, s.Close)

		s, err = pebble.Open(dir, pebble.Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for w := range writers {
			for i := range perWriter {
				got, err := s.Get(key(w, i))
				if err != nil || !bytes.Equal(got, key(w, i)) {
					t.Fatalf("acknowledged key %s after crash: %q, %v", key(w, i), got, err)
				}
			}
		}
	})
}

// quietLogger discards the raw Pebble DB's logs in the control test.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)           {}
func (quietLogger) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

// TestLogger checks Pebble's own logging reaches Options.Logger (at debug
// level) instead of stderr.
func TestLogger(t *testing.T) {
	var buf safeBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})).With("component", "pebble")
	s := mustOpen(t, t.TempDir(), pebble.Options{Logger: log})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Opening a new store creates a WAL and a MANIFEST, which Pebble logs.
	if out := buf.String(); !strings.Contains(out, "level=DEBUG") || !strings.Contains(out, "component=pebble") {
		t.Fatalf("no Pebble log lines reached the slog.Logger; got:\n%s", out)
	}
}

// safeBuffer is a bytes.Buffer safe for Pebble's background goroutines.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *safeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *safeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
