// Package storetest is the conformance suite every store.Store backend must
// pass. A backend's test calls Run with a Backend that opens its stores:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Backend{Open: ..., Reopen: ...})
//	}
//
// The suite checks only what the store.Store documentation promises; it never
// looks at the backend's files or internals, and never uses the empty key,
// whose validity store.Store leaves open. Crash durability (fsync) cannot
// be observed through the interface and is each backend's own test to write.
// Nor can the instant a write is ordered: the suite's fencing race test
// samples the window between a handle's fence check and its commit, and a
// backend should also hold that window open in a test of its own (as
// store/pebble does) to show a fencing Acquire waits for it.
package storetest

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/cohort-dev/cohort/store"
)

// Backend tells the suite how to open stores.
type Backend struct {
	// Open returns a new, empty store whose backing data is private to t (a
	// t.TempDir, a fresh etcd key prefix, ...). Required. The suite closes
	// every store it gets; Open should register cleanup (t.Cleanup) for the
	// backing data itself.
	Open func(t *testing.T) store.Store

	// Reopen returns a new store over the same backing data as old, which the
	// suite has already closed. Optional: nil skips the persistence tests.
	Reopen func(t *testing.T, old store.Store) store.Store
}

// Run runs the conformance suite as subtests of t.
func Run(t *testing.T, b Backend) {
	if b.Open == nil {
		t.Fatal("storetest: Backend.Open is nil")
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{"PutGet", testPutGet},
		{"GetMissing", testGetMissing},
		{"Overwrite", testOverwrite},
		{"Delete", testDelete},
		{"BatchLastWriteWins", testBatchLastWriteWins},
		{"BatchAtomicToReaders", testBatchAtomicToReaders},
		{"EmptyBatch", testEmptyBatch},
		{"EmptyValue", testEmptyValue},
		{"LargeValue", testLargeValue},
		{"GetReturnsCopy", testGetReturnsCopy},
		{"ApplyCopiesInput", testApplyCopiesInput},
		{"ScanOrder", testScanOrder},
		{"ScanPrefixBounds", testScanPrefixBounds},
		{"ScanSeesApplied", testScanSeesApplied},
		{"ScanCallbackError", testScanCallbackError},
		{"ScanCallbackMayWrite", testScanCallbackMayWrite},
		{"ConcurrentApply", testConcurrentApply},
		{"Persistence", testPersistence},
		{"Closed", testClosed},
		{"PipelinedApplyOrder", testPipelinedApplyOrder},
		{"HandleApply", testHandleApply},
		{"HandleOutOfScope", testHandleOutOfScope},
		{"HandleFencedByAcquire", testHandleFencedByAcquire},
		{"HandleRelease", testHandleRelease},
		{"HandleFenceKeepsStartedBatches", testHandleFenceKeepsStartedBatches},
		{"HandleFenceRace", testHandleFenceRace},
		{"HandleDisjointScopes", testHandleDisjointScopes},
		{"HandleClosed", testHandleClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, b) })
	}
}

// open opens a store that is closed when the test ends, unless the test has
// closed it already.
func open(t *testing.T, b Backend) store.Store {
	t.Helper()
	s := b.Open(t)
	t.Cleanup(func() { closeQuietly(t, s) })
	return s
}

// reopen closes s and reopens its backing data, skipping the test if the
// backend cannot.
func reopen(t *testing.T, b Backend, s store.Store) store.Store {
	t.Helper()
	if b.Reopen == nil {
		t.Skip("Backend.Reopen is nil")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s2 := b.Reopen(t, s)
	t.Cleanup(func() { closeQuietly(t, s2) })
	return s2
}

func closeQuietly(t *testing.T, s store.Store) {
	if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
		t.Errorf("Close: %v", err)
	}
}

func apply(t *testing.T, s store.Store, b *store.Batch) {
	t.Helper()
	if err := s.Apply(b); err != nil {
		t.Fatalf("Apply(%d ops): %v", b.Len(), err)
	}
}

func put(t *testing.T, s store.Store, key, value string) {
	t.Helper()
	var b store.Batch
	b.Put([]byte(key), []byte(value))
	apply(t, s, &b)
}

// wantValue fails unless key holds exactly value.
func wantValue(t *testing.T, s store.Store, key, value string) {
	t.Helper()
	got, err := s.Get([]byte(key))
	if err != nil {
		t.Fatalf("Get(%q): %v, want %q", key, err, value)
	}
	if string(got) != value {
		t.Fatalf("Get(%q) = %q, want %q", key, got, value)
	}
}

func wantMissing(t *testing.T, s store.Store, key string) {
	t.Helper()
	got, err := s.Get([]byte(key))
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", key, got, err)
	}
}

type kv struct{ k, v string }

// scan returns copies of every pair Scan yields for prefix.
func scan(t *testing.T, s store.Store, prefix []byte) []kv {
	t.Helper()
	var out []kv
	err := s.Scan(prefix, func(k, v []byte) error {
		out = append(out, kv{string(k), string(v)})
		return nil
	})
	if err != nil {
		t.Fatalf("Scan(%q): %v", prefix, err)
	}
	return out
}

func wantScan(t *testing.T, s store.Store, prefix []byte, want []kv) {
	t.Helper()
	if got := scan(t, s, prefix); !slices.Equal(got, want) {
		t.Fatalf("Scan(%q)\n got %q\nwant %q", prefix, got, want)
	}
}

func testPutGet(t *testing.T, b Backend) {
	s := open(t, b)
	put(t, s, "a", "1")
	put(t, s, "b", "2")
	wantValue(t, s, "a", "1")
	wantValue(t, s, "b", "2")
}

func testGetMissing(t *testing.T, b Backend) {
	s := open(t, b)
	wantMissing(t, s, "nope")
	put(t, s, "a", "1")
	wantMissing(t, s, "a\x00") // a neighbour of a present key
}

func testOverwrite(t *testing.T, b Backend) {
	s := open(t, b)
	put(t, s, "k", "old")
	put(t, s, "k", "new")
	wantValue(t, s, "k", "new")
}

func testDelete(t *testing.T, b Backend) {
	s := open(t, b)
	put(t, s, "k", "v")
	put(t, s, "other", "v")
	var d store.Batch
	d.Delete([]byte("k"))
	d.Delete([]byte("never-existed")) // deleting an absent key is not an error
	apply(t, s, &d)
	wantMissing(t, s, "k")
	wantMissing(t, s, "never-existed")
	wantValue(t, s, "other", "v")
	put(t, s, "k", "again") // a deleted key can be written again
	wantValue(t, s, "k", "again")
}

func testBatchLastWriteWins(t *testing.T, b Backend) {
	s := open(t, b)
	put(t, s, "del-then-put", "before")
	put(t, s, "put-then-del", "before")

	var bt store.Batch
	bt.Put([]byte("twice"), []byte("first"))
	bt.Put([]byte("twice"), []byte("second"))
	bt.Delete([]byte("del-then-put"))
	bt.Put([]byte("del-then-put"), []byte("after"))
	bt.Put([]byte("put-then-del"), []byte("after"))
	bt.Delete([]byte("put-then-del"))
	bt.Put([]byte("new-then-del"), []byte("x"))
	bt.Delete([]byte("new-then-del"))
	apply(t, s, &bt)

	wantValue(t, s, "twice", "second")
	wantValue(t, s, "del-then-put", "after")
	wantMissing(t, s, "put-then-del")
	wantMissing(t, s, "new-then-del")
	wantScan(t, s, nil, []kv{{"del-then-put", "after"}, {"twice", "second"}})
}

// testBatchAtomicToReaders checks that a concurrent Scan never sees half a
// batch: every batch rewrites all keys under a prefix with one generation
// number, so a scan must see one generation throughout.
func testBatchAtomicToReaders(t *testing.T, b Backend) {
	s := open(t, b)
	const keys, gens = 8, 50
	write := func(gen int) error {
		var bt store.Batch
		for i := range keys {
			bt.Put(fmt.Appendf(nil, "atomic/%02d", i), fmt.Appendf(nil, "%d", gen))
		}
		return s.Apply(&bt)
	}
	if err := write(0); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() {
		for gen := 1; gen <= gens; gen++ {
			if err := write(gen); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()

	for writing := true; writing; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			writing = false // one last scan below sees the final state
		default:
		}
		got := scan(t, s, []byte("atomic/"))
		if len(got) != keys {
			t.Fatalf("scan saw %d keys, want %d: %q", len(got), keys, got)
		}
		for _, p := range got[1:] {
			if p.v != got[0].v {
				t.Fatalf("scan saw a partial batch: %q", got)
			}
		}
		if !writing && got[0].v != fmt.Sprint(gens) {
			t.Fatalf("after all Applies returned, scan saw generation %s, want %d", got[0].v, gens)
		}
	}
}

func testEmptyBatch(t *testing.T, b Backend) {
	s := open(t, b)
	put(t, s, "k", "v")
	if err := s.Apply(&store.Batch{}); err != nil {
		t.Fatalf("Apply(empty batch) = %v, want nil", err)
	}
	wantScan(t, s, nil, []kv{{"k", "v"}})
}

// testEmptyValue checks that a put of an empty value (nil or not) is a
// present key, distinct from a deleted one.
func testEmptyValue(t *testing.T, b Backend) {
	s := open(t, b)
	var bt store.Batch
	bt.Put([]byte("empty"), []byte{})
	bt.Put([]byte("nil"), nil)
	bt.Put([]byte("gone"), []byte{})
	apply(t, s, &bt)
	var d store.Batch
	d.Delete([]byte("gone"))
	apply(t, s, &d)

	for _, k := range []string{"empty", "nil"} {
		got, err := s.Get([]byte(k))
		if err != nil || len(got) != 0 {
			t.Fatalf("Get(%q) = %q, %v; want empty value, nil error", k, got, err)
		}
	}
	wantMissing(t, s, "gone")
	wantScan(t, s, nil, []kv{{"empty", ""}, {"nil", ""}})
}

func testLargeValue(t *testing.T, b Backend) {
	s := open(t, b)
	big := make([]byte, 1<<20)
	rand.Read(big)
	var bt store.Batch
	bt.Put([]byte("big"), big)
	bt.Put([]byte("small"), []byte("s"))
	apply(t, s, &bt)

	check := func(s store.Store) {
		t.Helper()
		got, err := s.Get([]byte("big"))
		if err != nil || !bytes.Equal(got, big) {
			t.Fatalf("Get(big): %d bytes, err %v; want the %d bytes written", len(got), err, len(big))
		}
		n := 0
		err = s.Scan([]byte("big"), func(k, v []byte) error {
			n++
			if !bytes.Equal(v, big) {
				t.Errorf("Scan(big) value differs (%d bytes)", len(v))
			}
			return nil
		})
		if err != nil || n != 1 {
			t.Fatalf("Scan(big): %d keys, err %v; want 1 key", n, err)
		}
	}
	check(s)
	if b.Reopen != nil {
		check(reopen(t, b, s))
	}
}

func testGetReturnsCopy(t *testing.T, b Backend) {
	s := open(t, b)
	put(t, s, "k", "value")
	got, err := s.Get([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i] = 'X'
	}
	wantValue(t, s, "k", "value")
}

// testApplyCopiesInput checks that the store does not keep the caller's
// slices once Apply has returned.
func testApplyCopiesInput(t *testing.T, b Backend) {
	s := open(t, b)
	key, val := []byte("key"), []byte("value")
	var bt store.Batch
	bt.Put(key, val)
	apply(t, s, &bt)
	copy(key, "KEY")
	copy(val, "VALUE")
	wantValue(t, s, "key", "value")
	wantMissing(t, s, "KEY")
}

func testScanOrder(t *testing.T, b Backend) {
	s := open(t, b)
	// Unsigned byte order, not numeric or UTF-8-aware order: 0x00 and 0xff
	// are ordinary bytes, and a proper prefix sorts before its extensions.
	keys := []string{
		"\x00", "\x00\x00", "\x01", "a", "a\x00", "aa", "ab", "a\x7f", "a\x80", "a\xff",
		"b", "item/10", "item/2", "item/9", "\xfe", "\xff", "\xff\x00", "\xff\xff",
	}
	shuffled := slices.Clone(keys)
	mrand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	var bt store.Batch
	for _, k := range shuffled {
		bt.Put([]byte(k), []byte("v:"+k))
	}
	apply(t, s, &bt)

	var want []kv
	for _, k := range keys {
		want = append(want, kv{k, "v:" + k})
	}
	wantScan(t, s, nil, want)
	wantScan(t, s, []byte{}, want)
}

func testScanPrefixBounds(t *testing.T, b Backend) {
	s := open(t, b)
	keys := []string{
		"`", "a", "a\x00", "a\xff", "a\xff\xff", "ab", "b",
		"\x01\xfe", "\x01\xff", "\x01\xff\x00", "\x01\xff\xff", "\x02",
		"\xfe", "\xfe\xff", "\xff", "\xff\x00", "\xff\xff", "\xff\xff\xff",
	}
	var bt store.Batch
	for _, k := range keys {
		bt.Put([]byte(k), []byte(k))
	}
	apply(t, s, &bt)

	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"a", []string{"a", "a\x00", "ab", "a\xff", "a\xff\xff"}},
		{"a\xff", []string{"a\xff", "a\xff\xff"}},
		{"ab", []string{"ab"}},
		{"abc", nil},
		{"c", nil},
		{"\x01\xff", []string{"\x01\xff", "\x01\xff\x00", "\x01\xff\xff"}},
		{"\xfe", []string{"\xfe", "\xfe\xff"}},
		// All-0xff prefixes have no successor key: the scan must run to the
		// end of the keyspace rather than wrap or stop early.
		{"\xff", []string{"\xff", "\xff\x00", "\xff\xff", "\xff\xff\xff"}},
		{"\xff\xff", []string{"\xff\xff", "\xff\xff\xff"}},
		{"\xff\xff\xff\xff", nil},
	} {
		var want []kv
		for _, k := range tc.want {
			want = append(want, kv{k, k})
		}
		wantScan(t, s, []byte(tc.prefix), want)
	}
}

func testScanSeesApplied(t *testing.T, b Backend) {
	s := open(t, b)
	for i := range 20 {
		k := fmt.Sprintf("k%02d", i)
		put(t, s, k, "v")
		if got := scan(t, s, []byte("k")); len(got) != i+1 || got[i].k != k {
			t.Fatalf("after Apply of %q, Scan = %q", k, got)
		}
	}
	var d store.Batch
	d.Delete([]byte("k05"))
	apply(t, s, &d)
	for _, p := range scan(t, s, []byte("k")) {
		if p.k == "k05" {
			t.Fatal("Scan returned a key deleted by a completed Apply")
		}
	}
}

func testScanCallbackError(t *testing.T, b Backend) {
	s := open(t, b)
	var bt store.Batch
	for i := range 10 {
		bt.Put(fmt.Appendf(nil, "k%d", i), []byte("v"))
	}
	apply(t, s, &bt)

	stop := errors.New("stop here")
	var seen []string
	err := s.Scan([]byte("k"), func(k, v []byte) error {
		seen = append(seen, string(k))
		if len(seen) == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Scan = %v, want the callback's error", err)
	}
	if !slices.Equal(seen, []string{"k0", "k1", "k2"}) {
		t.Fatalf("callback saw %q after returning an error, want [k0 k1 k2]", seen)
	}
}

// testScanCallbackMayWrite checks that fn may call Get and Apply on the same
// store (for example to delete what it scans) without deadlocking.
func testScanCallbackMayWrite(t *testing.T, b Backend) {
	s := open(t, b)
	var bt store.Batch
	for i := range 5 {
		bt.Put(fmt.Appendf(nil, "q/%d", i), []byte("v"))
	}
	apply(t, s, &bt)

	err := s.Scan([]byte("q/"), func(k, v []byte) error {
		if _, err := s.Get(k); err != nil {
			return fmt.Errorf("get inside Scan: %w", err)
		}
		var d store.Batch
		d.Delete(slices.Clone(k))
		return s.Apply(&d)
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	wantScan(t, s, []byte("q/"), nil)
}

func testConcurrentApply(t *testing.T, b Backend) {
	s := open(t, b)
	const writers, perWriter = 64, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				var bt store.Batch
				bt.Put(fmt.Appendf(nil, "c/%02d/%02d", w, i), fmt.Appendf(nil, "%d-%d", w, i))
				bt.Put(fmt.Appendf(nil, "last/%02d", w), fmt.Appendf(nil, "%d", i))
				if err := s.Apply(&bt); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Apply: %v", err)
	}

	if got := scan(t, s, []byte("c/")); len(got) != writers*perWriter {
		t.Fatalf("Scan found %d keys, want %d", len(got), writers*perWriter)
	}
	for w := range writers {
		for i := range perWriter {
			wantValue(t, s, fmt.Sprintf("c/%02d/%02d", w, i), fmt.Sprintf("%d-%d", w, i))
		}
		wantValue(t, s, fmt.Sprintf("last/%02d", w), fmt.Sprint(perWriter-1))
	}
}

func testPersistence(t *testing.T, b Backend) {
	s := open(t, b)
	var bt store.Batch
	bt.Put([]byte("keep"), []byte("1"))
	bt.Put([]byte("drop"), []byte("2"))
	bt.Put([]byte("empty"), []byte{})
	apply(t, s, &bt)
	var d store.Batch
	d.Delete([]byte("drop"))
	apply(t, s, &d)

	s = reopen(t, b, s)
	wantValue(t, s, "keep", "1")
	wantMissing(t, s, "drop") // the delete persisted, not just the put
	wantScan(t, s, nil, []kv{{"empty", ""}, {"keep", "1"}})

	// The reopened store is writable, and a second reopen sees both sessions.
	put(t, s, "second", "session")
	s = reopen(t, b, s)
	wantScan(t, s, nil, []kv{{"empty", ""}, {"keep", "1"}, {"second", "session"}})
}

func testClosed(t *testing.T, b Backend) {
	s := open(t, b)
	put(t, s, "k", "v")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	var bt store.Batch
	bt.Put([]byte("k"), []byte("after"))
	check := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	check("Apply", s.Apply(&bt))
	check("Apply(empty batch)", s.Apply(&store.Batch{}))
	_, err := s.Get([]byte("k"))
	check("Get", err)
	check("Scan", s.Scan(nil, func(k, v []byte) error {
		t.Error("Scan after Close called fn")
		return nil
	}))
	check("second Close", s.Close())
}

// testPipelinedApplyOrder: for a store that pipelines, batches started in
// order take effect in order even while earlier ones are not yet durable,
// and everything waited for survives a reopen.
func testPipelinedApplyOrder(t *testing.T, b Backend) {
	s := open(t, b)
	p, ok := s.(store.Pipeliner)
	if !ok {
		closeQuietly(t, s)
		t.Skip("the store does not implement store.Pipeliner") // not a CI skip: a backend without the option
	}
	var waits []func() error
	for i := range 50 {
		var batch store.Batch
		batch.Put([]byte("k"), []byte(fmt.Sprint(i)))
		batch.Put([]byte(fmt.Sprintf("k%02d", i)), []byte("x"))
		w, err := p.ApplyAsync(&batch)
		if err != nil {
			t.Fatalf("ApplyAsync %d: %v", i, err)
		}
		waits = append(waits, w)
	}
	for i, w := range waits {
		if err := w(); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	wantValue(t, s, "k", "49")
	s = reopen(t, b, s)
	defer closeQuietly(t, s)
	wantValue(t, s, "k", "49")
	for i := range 50 {
		wantValue(t, s, fmt.Sprintf("k%02d", i), "x")
	}
}
