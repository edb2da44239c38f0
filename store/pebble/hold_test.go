package pebble_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/pebble"
)

// layered leaves in dir a store whose level 0 is sublevels deep: each
// round writes keys across the whole key space, and the next Open's
// replay of Pebble's log flushes them to a file of level 0 over the
// last. The rounds hold compactions, which Pebble would otherwise run
// from four files on. A level 0 the hold is for (check) is checked by one
// more Open.
func layered(t *testing.T, dir string, sublevels int, check bool) {
	t.Helper()
	rounds := sublevels
	if check {
		rounds++
	}
	for round := range rounds {
		s := mustOpen(t, dir, pebble.Options{HoldCompactions: true})
		if round == sublevels {
			if got := pebble.L0Sublevels(s); got < sublevels {
				t.Fatalf("level 0 is %d sublevels deep, want %d", got, sublevels)
			}
		} else {
			b := &store.Batch{}
			for i := range 200 {
				b.Put(fmt.Appendf(nil, "k%04d", i), fmt.Appendf(nil, "v%d-%d", round, i))
			}
			if err := s.Apply(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// waitCompacted waits for Pebble under s to finish a compaction.
func waitCompacted(t *testing.T, s *pebble.Store) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if done, _ := pebble.Compactions(s); done > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no compaction within 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHoldCompactions: a store opened with HoldCompactions over a level 0
// that Pebble would compact at Open compacts nothing, through a whole
// scan, until ResumeCompactions; opened without it, the same store
// compacts at Open.
func TestHoldCompactions(t *testing.T) {
	dir := t.TempDir()
	layered(t, dir, 5, true)
	s := mustOpen(t, dir, pebble.Options{HoldCompactions: true})
	n := 0
	if err := s.Scan(nil, func(k, v []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n < 200 {
		t.Fatalf("scanned %d keys, want 200 or more", n)
	}
	if done, running := pebble.Compactions(s); done+running != 0 || !pebble.Held(s) {
		t.Fatalf("held: %d compactions done and %d under way (held %v), want none", done, running, pebble.Held(s))
	}
	s.ResumeCompactions()
	if pebble.Held(s) {
		t.Fatal("still held after ResumeCompactions")
	}
	waitCompacted(t, s)
	s.ResumeCompactions() // again: nothing
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The same level 0 without the hold: Pebble schedules a compaction
	// at Open, which is what the hold keeps back.
	dir = t.TempDir()
	layered(t, dir, 5, true)
	s = mustOpen(t, dir, pebble.Options{})
	defer s.Close()
	if done, running := pebble.Compactions(s); done+running == 0 {
		t.Fatal("no compaction at Open without the hold: the test's level 0 does not need one")
	}
}

// TestHoldEndsAtFlush: the first flush after Open ends the hold, so that
// writes that deepen level 0 cannot stall behind it.
func TestHoldEndsAtFlush(t *testing.T) {
	dir := t.TempDir()
	layered(t, dir, 5, true)
	s := mustOpen(t, dir, pebble.Options{HoldCompactions: true, SegmentSize: 64 << 10})
	defer s.Close()
	// More than a memtable (4 MiB) folded into Pebble, 64 KiB segments
	// at a time.
	v := make([]byte, 4<<10)
	for i := 0; i < 2000 && pebble.Held(s); i++ {
		b := &store.Batch{}
		b.Put(fmt.Appendf(nil, "w%06d", i), v)
		if err := s.Apply(b); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for pebble.Held(s) {
		if time.Now().After(deadline) {
			t.Fatal("still held after 8 MiB of writes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	waitCompacted(t, s)
}

// TestNoHoldOverDeepLevel0: a level 0 near the depth at which Pebble
// stops writes is not held at all.
func TestNoHoldOverDeepLevel0(t *testing.T) {
	dir := t.TempDir()
	layered(t, dir, 10, false)
	var buf safeBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := mustOpen(t, dir, pebble.Options{HoldCompactions: true, Logger: log})
	defer s.Close()
	if pebble.Held(s) {
		t.Fatalf("held over a level 0 %d sublevels deep", pebble.L0Sublevels(s))
	}
	if !strings.Contains(buf.String(), "level 0 is deep") {
		t.Fatalf("no line of a deep level 0 in the log:\n%s", buf.String())
	}
	waitCompacted(t, s)
}

// TestDataBlocks: the tables the store writes have data blocks of about
// 32 KiB, not Pebble's 4 KiB: a start reads every record, and pays per
// block.
func TestDataBlocks(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, pebble.Options{})
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 8 {
		b := &store.Batch{}
		for j := range 256 {
			v := make([]byte, 256) // incompressible: blocks' sizes on disk are their own
			for k := range v {
				v[k] = byte(rnd.Uint32())
			}
			b.Put(fmt.Appendf(nil, "k%02d-%04d", i, j), v)
		}
		if err := s.Apply(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, pebble.Options{}) // the log's replay flushes a table
	defer s.Close()
	blocks, bytes, err := pebble.DataBlocks(s)
	if err != nil {
		t.Fatal(err)
	}
	if blocks == 0 || bytes/blocks < 24<<10 {
		t.Fatalf("%d data blocks of %d bytes, want blocks of about 32 KiB", blocks, bytes)
	}
}
