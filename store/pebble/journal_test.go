package pebble_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/pebble"
)

// model is what the store must hold: each key's last acknowledged value.
type model map[string]string

// check compares s with m through Get of every key ever written and one
// Scan of everything (which must not show the journal's own key).
func (m model) check(t *testing.T, s *pebble.Store, keys []string, when string) {
	t.Helper()
	for _, k := range keys {
		got, err := s.Get([]byte(k))
		want, ok := m[k]
		switch {
		case !ok && err != store.ErrNotFound:
			t.Fatalf("%s: Get(%s) = %q, %v; want not found", when, k, got, err)
		case ok && (err != nil || string(got) != want):
			t.Fatalf("%s: Get(%s) = %q, %v; want %q", when, k, got, err, want)
		}
	}
	var scanned []string
	if err := s.Scan(nil, func(k, v []byte) error {
		scanned = append(scanned, string(k)+"="+string(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for k, v := range m {
		want = append(want, k+"="+v)
	}
	slices.Sort(want)
	if !slices.Equal(scanned, want) {
		t.Fatalf("%s: Scan of everything:\n got %q\nwant %q", when, scanned, want)
	}
}

// TestJournalPowerLoss writes batches of puts and deletes over a few keys
// through small journal segments, so that segments fill, are folded into
// Pebble and their files are reused (still holding older records), and cuts
// the power at a random point, several times over the same store. The
// writer goes on for a while after the cut (its syncs then do nothing, as
// after a real cut nothing more reaches the disk), so that the cut falls
// among writes, segment changes and folds. After each restart every key
// must hold its last value acknowledged before the cut or one written
// after it, and never an older one: replaying a reused file's stale
// records, or a folded segment over newer data, would bring one back.
// Reads are checked against the model along the way, while the overlay
// and Pebble both hold part of the data.
func TestJournalPowerLoss(t *testing.T) {
	for seed := range uint64(16) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 17))
			fs := vfs.NewStrictMem()
			opts := pebble.Options{FS: fs, SegmentSize: 1 << 10}
			const dir = "db"
			s, err := pebble.Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for i := range 40 {
				keys = append(keys, fmt.Sprintf("k/%02d", i))
			}
			const gone = "\x00deleted"
			m := model{}
			for round := range 5 {
				h, err := s.Acquire([]byte("k/"))
				if err != nil {
					t.Fatal(err)
				}
				cut := 100 + rng.IntN(400)
				var atCut model
				later := map[string][]string{} // values acknowledged after the cut
				type write struct{ k, v string }
				type inflight struct {
					wait   func() error
					writes []write
				}
				var queue []inflight // up to three batches in flight, as a shard's loop has them
				ack := func() {
					f := queue[0]
					queue = queue[1:]
					if err := f.wait(); err != nil {
						t.Fatal(err)
					}
					for _, w := range f.writes {
						switch {
						case atCut != nil:
							later[w.k] = append(later[w.k], w.v)
						case w.v == gone:
							delete(m, w.k)
						default:
							m[w.k] = w.v
						}
					}
				}
				for i := range cut + 60 {
					if i == cut {
						fs.SetIgnoreSyncs(true)
						atCut = maps.Clone(m)
					}
					var b store.Batch
					var ws []write
					for range 1 + rng.IntN(6) {
						k := keys[rng.IntN(len(keys))]
						v := gone
						if rng.IntN(8) == 0 {
							b.Delete([]byte(k))
						} else {
							v = fmt.Sprintf("r%d-%d-%d", round, i, rng.IntN(1000))
							b.Put([]byte(k), []byte(v))
						}
						ws = append(ws, write{k, v})
					}
					wait, err := h.ApplyAsync(&b)
					if err != nil {
						t.Fatal(err)
					}
					queue = append(queue, inflight{wait, ws})
					if len(queue) > 1+rng.IntN(3) {
						ack()
					}
					if i < cut && i%50 == 0 && len(queue) == 0 {
						m.check(t, s, keys, fmt.Sprintf("round %d, batch %d", round, i))
					}
				}
				for len(queue) > 0 {
					ack()
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				fs.ResetToSyncedState()
				fs.SetIgnoreSyncs(false)
				if s, err = pebble.Open(dir, opts); err != nil {
					t.Fatal(err)
				}
				m = model{}
				for _, k := range keys {
					v, err := s.Get([]byte(k))
					got := string(v)
					if err == store.ErrNotFound {
						got = gone
					} else if err != nil {
						t.Fatal(err)
					}
					want, ok := atCut[k]
					if !ok {
						want = gone
					}
					if got != want && !slices.Contains(later[k], got) {
						t.Fatalf("after power loss %d: %s = %q; want %q (acknowledged before the cut) or one of %q (written after it)", round, k, got, want, later[k])
					}
					if got != gone {
						m[k] = got
					}
				}
				m.check(t, s, keys, fmt.Sprintf("after power loss %d", round))
			}
			files, err := fs.List(fs.PathJoin(dir, "journal"))
			if err != nil {
				t.Fatal(err)
			}
			if len(files) > 4 {
				t.Fatalf("%d journal files after five rounds (%v): folded segments are neither reused nor removed", len(files), files)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestJournalTornTail: a record cut short or corrupted at the end of the
// journal (what a crash in the middle of a write leaves) ends the replay
// there; the records before it are kept, and the store takes writes again.
func TestJournalTornTail(t *testing.T) {
	for _, damage := range []string{"cut", "flip", "garbage"} {
		t.Run(damage, func(t *testing.T) {
			dir := t.TempDir()
			s, err := pebble.Open(dir, pebble.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 10 {
				var b store.Batch
				b.Put(fmt.Appendf(nil, "k%d", i), fmt.Appendf(nil, "v%d", i))
				if err := s.Apply(&b); err != nil {
					t.Fatal(err)
				}
			}
			if err := pebble.CloseUnfolded(s); err != nil { // as a crash: the tail is replayed
				t.Fatal(err)
			}
			seg := lastSegment(t, dir)
			data, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			// The last record is k9's.
			switch damage {
			case "cut":
				data = data[:len(data)-3]
			case "flip":
				data[len(data)-1] ^= 0x40
			case "garbage":
				data = append(data, bytes.Repeat([]byte{0xa5}, 40)...)
			}
			if err := os.WriteFile(seg, data, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err = pebble.Open(dir, pebble.Options{})
			if err != nil {
				t.Fatalf("open after a torn tail: %v", err)
			}
			want := 10
			if damage != "garbage" {
				want = 9 // k9's record is the damaged one
			}
			for i := range 10 {
				v, err := s.Get(fmt.Appendf(nil, "k%d", i))
				if i < want && (err != nil || string(v) != fmt.Sprintf("v%d", i)) {
					t.Fatalf("k%d = %q, %v after the replay; want v%d", i, v, err, i)
				}
				if i >= want && err != store.ErrNotFound {
					t.Fatalf("k%d = %q, %v: a damaged record was replayed", i, v, err)
				}
			}
			var b store.Batch
			b.Put([]byte("after"), []byte("x"))
			if err := s.Apply(&b); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = pebble.Open(dir, pebble.Options{}); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if v, err := s.Get([]byte("after")); err != nil || string(v) != "x" {
				t.Fatalf("a write after the repair: %q, %v", v, err)
			}
		})
	}
}

// lastSegment returns the path of the journal's newest segment file.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Fatal("no journal segment")
	}
	slices.Sort(names)
	return filepath.Join(dir, "journal", names[len(names)-1])
}

// TestJournalConcurrentFolds: writers on several handles keep writing while
// tiny segments are folded under them; every key holds its writer's last
// value, before and after a reopen.
func TestJournalConcurrentFolds(t *testing.T) {
	dir := t.TempDir()
	opts := pebble.Options{SegmentSize: 512}
	s, err := pebble.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	const writers, per = 8, 300
	var wg sync.WaitGroup
	for w := range writers {
		h, err := s.Acquire(fmt.Appendf(nil, "w%d/", w))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for i := range per {
				var b store.Batch
				b.Put(fmt.Appendf(nil, "w%d/%d", w, i%7), fmt.Appendf(nil, "%d", i))
				wait, err := h.ApplyAsync(&b)
				if err == nil {
					err = wait()
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	check := func(s *pebble.Store) {
		t.Helper()
		for w := range writers {
			for k := range 7 {
				last := per - 1 - (per-1-k)%7
				v, err := s.Get(fmt.Appendf(nil, "w%d/%d", w, k))
				if err != nil || string(v) != fmt.Sprint(last) {
					t.Fatalf("w%d/%d = %q, %v; want %d", w, k, v, err, last)
				}
			}
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = pebble.Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s)
}

// TestJournalReusedSegment: a folded segment's file is reused for a later
// segment and overwritten from its start, so past the new records it still
// holds old ones, at the same offsets when every record has the same size.
// The replay must stop at the first record of another segment: each write
// here is the same size, segments hold two, and the store is closed with
// one record in its last segment, whose file held two older ones.
// (Without the segment number in each record, the replay would read on
// into the older ones and bring an old value back: checked.)
func TestJournalReusedSegment(t *testing.T) {
	dir := t.TempDir()
	put := func(s *pebble.Store, i int) {
		t.Helper()
		var b store.Batch
		b.Put([]byte("key"), fmt.Appendf(nil, "%06d", i))
		if err := s.Apply(&b); err != nil {
			t.Fatal(err)
		}
	}
	// A record here is 16 + 1+1+3+1+6 = 28 bytes: a segment closes once it
	// has two.
	opts := pebble.Options{SegmentSize: 56}
	s, err := pebble.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Segments are folded in the background: write until a segment that
	// has just begun (an even record) is in a reused file.
	last := -1
	for i := 0; i < 5000 && last < 0; i++ {
		put(s, i)
		if fi, err := os.Stat(lastSegment(t, dir)); err != nil {
			t.Fatal(err)
		} else if i%2 == 0 && i > 0 && fi.Size() > 28 {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("no segment file was reused in 5,000 writes")
	}
	if err := pebble.CloseUnfolded(s); err != nil { // as a crash: the last segment is replayed

		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) > 4 {
		t.Fatalf("%d journal files for %d segments: folded ones are neither reused nor removed", len(ents), last/2+1)
	}
	if s, err = pebble.Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.Get([]byte("key")); err != nil || string(v) != fmt.Sprintf("%06d", last) {
		t.Fatalf("key = %q, %v after the replay; want %06d", v, err, last)
	}
}

// TestJournalFoldsWhenIdle: a journal that has had no write for a while
// folds what its segment holds so far, so a quiet store holds nothing in
// its overlay, and goes on in the same segment and file (a node out of file
// descriptors must still write); what was folded, and a write after it,
// which the replay must find past the folded position (checked: with the
// whole segment taken as folded, it is lost), survive a power cut.
func TestJournalFoldsWhenIdle(t *testing.T) {
	fs := vfs.NewStrictMem()
	s, err := pebble.Open("db", pebble.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		var b store.Batch
		b.Put(fmt.Appendf(nil, "k%02d", i), []byte("before"))
		if err := s.Apply(&b); err != nil {
			t.Fatal(err)
		}
	}
	if s.Unfolded() == 0 {
		t.Fatal("nothing unfolded right after the writes")
	}
	if !testkit.WaitFor(30*time.Second, func() bool { return s.Unfolded() == 0 }) {
		t.Fatalf("a quiet journal still holds %d unfolded bytes after 30 s", s.Unfolded())
	}
	var b store.Batch
	b.Put([]byte("k00"), []byte("after"))
	if err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if files, err := fs.List(fs.PathJoin("db", "journal")); err != nil || len(files) != 1 {
		t.Fatalf("journal files after the early fold: %v, %v; want the one segment still", files, err)
	}
	crashMem(t, fs, s.Close)
	if s, err = pebble.Open("db", pebble.Options{FS: fs}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 20 {
		want := "before"
		if i == 0 {
			want = "after"
		}
		if v, err := s.Get(fmt.Appendf(nil, "k%02d", i)); err != nil || string(v) != want {
			t.Fatalf("k%02d = %q, %v after the power cut; want %q", i, v, err, want)
		}
	}
}

// noNewFiles fails, once on is set, every Create and every ReuseForWrite
// that makes a segment file, as a process out of file descriptors sees:
// only a spare opened ahead can start a segment then.
type noNewFiles struct {
	vfs.FS
	on atomic.Bool
}

var errNoFiles = errors.New("too many open files (simulated)")

func (f *noNewFiles) Create(name string) (vfs.File, error) {
	if f.on.Load() {
		return nil, errNoFiles
	}
	return f.FS.Create(name)
}

func (f *noNewFiles) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	if f.on.Load() && strings.HasSuffix(newname, ".log") {
		return nil, errNoFiles
	}
	return f.FS.ReuseForWrite(oldname, newname)
}

// TestJournalSegmentChangeNeedsNoNewFile: once a folded segment's file is
// kept open as a spare, a segment change takes it with a rename, so the
// journal goes on through segment after segment while no new file can be
// opened (a node out of descriptors, a flood of connections). Without the
// spare the first segment change fails, and every write after it.
func TestJournalSegmentChangeNeedsNoNewFile(t *testing.T) {
	fs := &noNewFiles{FS: vfs.NewStrictMem()}
	opts := pebble.Options{FS: fs, SegmentSize: 256}
	s, err := pebble.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	spareReady := func() bool {
		names, err := fs.List(fs.PathJoin("db", "journal"))
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "spare-") })
	}
	put := func(i int) {
		t.Helper()
		var b store.Batch
		b.Put(fmt.Appendf(nil, "k%d", i%10), fmt.Appendf(nil, "v%06d", i))
		if err := s.Apply(&b); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	i := 0
	for ; i < 1000 && !spareReady(); i++ {
		put(i)
	}
	if !spareReady() {
		t.Fatal("no spare after 1,000 writes through 256-byte segments")
	}
	fs.on.Store(true)
	// About 9 writes a segment: this crosses a dozen segment changes,
	// each waiting for the spare the last fold prepares.
	for end := i + 100; i < end; i++ {
		if !testkit.WaitFor(30*time.Second, spareReady) {
			t.Fatalf("no spare prepared after write %d", i)
		}
		put(i)
	}
	fs.on.Store(false)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = pebble.Open("db", opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for k := range 10 {
		last := i - 1 - (i-1-k)%10
		if v, err := s.Get(fmt.Appendf(nil, "k%d", k)); err != nil || string(v) != fmt.Sprintf("v%06d", last) {
			t.Fatalf("k%d = %q, %v; want v%06d", k, v, err, last)
		}
	}
}

// TestJournalFoldsAtClose: Close folds what the journal's overlay holds,
// so that the next Open replays nothing (a node stopped after a burst of
// writes starts without reading them again); a store closed as a crash
// leaves it (CloseUnfolded), and the next Open replays it. Either way
// every write is there.
func TestJournalFoldsAtClose(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprint("crash=", crash), func(t *testing.T) {
			dir := t.TempDir()
			s, err := pebble.Open(dir, pebble.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 2000 {
				var b store.Batch
				b.Put(fmt.Appendf(nil, "k%04d", i%500), fmt.Appendf(nil, "v%d", i))
				if err := s.Apply(&b); err != nil {
					t.Fatal(err)
				}
			}
			closeFn := s.Close
			if crash {
				closeFn = func() error { return pebble.CloseUnfolded(s) }
			}
			if err := closeFn(); err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			s, err = pebble.Open(dir, pebble.Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if replayed := strings.Contains(logged.String(), "journal replayed"); replayed != crash {
				t.Fatalf("journal replayed at the open: %v; log:\n%s", replayed, logged.String())
			}
			for k := range 500 {
				if v, err := s.Get(fmt.Appendf(nil, "k%04d", k)); err != nil || string(v) != fmt.Sprintf("v%d", 1500+k) {
					t.Fatalf("k%04d = %q, %v", k, v, err)
				}
			}
		})
	}
}
