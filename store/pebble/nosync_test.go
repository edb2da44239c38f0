package pebble_test

import (
	"testing"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/pebble"
)

// TestNoSyncAndBarrier: a NoSync batch is written without a sync of the
// journal, is visible, and an empty Barrier batch syncs the log;
// an empty batch without Barrier stays a no-op.
func TestNoSyncAndBarrier(t *testing.T) {
	fs := &walSyncCounter{FS: vfs.Default}
	s, err := pebble.Open(t.TempDir(), pebble.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.OneLog() {
		t.Fatal("Pebble is one log")
	}
	h, err := s.Acquire([]byte("k/"))
	if err != nil {
		t.Fatal(err)
	}
	apply := func(b *store.Batch) {
		t.Helper()
		wait, err := h.ApplyAsync(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := wait(); err != nil {
			t.Fatal(err)
		}
	}
	start := fs.syncs.Load()
	b := store.Batch{NoSync: true}
	b.Put([]byte("k/a"), []byte("1"))
	apply(&b)
	if n := fs.syncs.Load() - start; n != 0 {
		t.Fatalf("%d log syncs for a NoSync batch, want 0", n)
	}
	if v, err := s.Get([]byte("k/a")); err != nil || string(v) != "1" {
		t.Fatalf("k/a = %q, %v after a NoSync write", v, err)
	}
	apply(&store.Batch{})
	if n := fs.syncs.Load() - start; n != 0 {
		t.Fatalf("%d log syncs for an empty batch, want 0", n)
	}
	apply(&store.Batch{Barrier: true})
	if n := fs.syncs.Load() - start; n < 1 {
		t.Fatal("no log sync for a barrier")
	}
}

// TestNoSyncCoveredByLaterSync is what the coordinator runtime's early
// replies rely on (store.OneLog): at a crash, a NoSync write is lost
// unless a synced write after it (through another handle too) made it
// durable.
func TestNoSyncCoveredByLaterSync(t *testing.T) {
	for _, covered := range []bool{false, true} {
		mem := vfs.NewStrictMem()
		s, err := pebble.Open("db", pebble.Options{FS: mem})
		if err != nil {
			t.Fatal(err)
		}
		h1, err := s.Acquire([]byte("a/"))
		if err != nil {
			t.Fatal(err)
		}
		h2, err := s.Acquire([]byte("b/"))
		if err != nil {
			t.Fatal(err)
		}
		b := store.Batch{NoSync: true}
		b.Put([]byte("a/1"), []byte("x"))
		wait, err := h1.ApplyAsync(&b)
		if err != nil || wait() != nil {
			t.Fatal(err)
		}
		if covered {
			var b2 store.Batch
			b2.Put([]byte("b/1"), []byte("y"))
			if err := h2.Apply(&b2); err != nil {
				t.Fatal(err)
			}
		}
		mem.SetIgnoreSyncs(true) // the crash: nothing after this is synced
		s.Close()
		mem.ResetToSyncedState()
		mem.SetIgnoreSyncs(false)
		s, err = pebble.Open("db", pebble.Options{FS: mem})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Get([]byte("a/1"))
		switch {
		case covered && err != nil:
			t.Errorf("the NoSync write was lost although a synced write followed it: %v", err)
		case !covered && err == nil:
			t.Error("the NoSync write survived a crash with no sync after it: the test cannot tell")
		}
		s.Close()
	}
}
