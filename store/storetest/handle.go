package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cohort-dev/cohort/store"
)

// The tests of store.Handle: scope, fencing by Acquire and Release, and
// what survives a fence.

func acquire(t *testing.T, s store.Store, scope string) store.Handle {
	t.Helper()
	h, err := s.Acquire([]byte(scope))
	if err != nil {
		t.Fatalf("Acquire(%q): %v", scope, err)
	}
	return h
}

// batch builds a batch of puts from key, value pairs.
func batch(kvs ...string) *store.Batch {
	var b store.Batch
	for i := 0; i < len(kvs); i += 2 {
		b.Put([]byte(kvs[i]), []byte(kvs[i+1]))
	}
	return &b
}

func hput(t *testing.T, h store.Handle, key, value string) {
	t.Helper()
	if err := h.Apply(batch(key, value)); err != nil {
		t.Fatalf("Handle.Apply(%q): %v", key, err)
	}
}

// wantRefused checks that both Apply and ApplyAsync refuse b with an error
// wrapping want. (It does not check that nothing was written: the callers
// do, by reading back.)
func wantRefused(t *testing.T, h store.Handle, b *store.Batch, want error) {
	t.Helper()
	if err := h.Apply(b); !errors.Is(err, want) {
		t.Errorf("Handle.Apply(%d ops) = %v, want %v", b.Len(), err, want)
	}
	wait, err := h.ApplyAsync(b)
	if err == nil {
		err = wait()
		t.Errorf("Handle.ApplyAsync(%d ops) = nil (wait: %v), want %v", b.Len(), err, want)
	} else if !errors.Is(err, want) {
		t.Errorf("Handle.ApplyAsync(%d ops) = %v, want %v", b.Len(), err, want)
	}
}

// testHandleApply: a handle writes like the Store does (atomic batches,
// ordered async batches, empty batches, durable across a reopen).
func testHandleApply(t *testing.T, b Backend) {
	s := open(t, b)
	h := acquire(t, s, "shard/1/")
	if h.Fenced() {
		t.Fatal("a fresh handle reports Fenced")
	}

	bt := batch("shard/1/a", "1", "shard/1/b", "2", "shard/1/", "the scope itself is under the scope")
	bt.Delete([]byte("shard/1/never-existed"))
	if err := h.Apply(bt); err != nil {
		t.Fatalf("Handle.Apply: %v", err)
	}
	wantScan(t, s, []byte("shard/"), []kv{
		{"shard/1/", "the scope itself is under the scope"}, {"shard/1/a", "1"}, {"shard/1/b", "2"},
	})

	// The handle does not keep the caller's slices.
	key, val := []byte("shard/1/c"), []byte("value")
	var bc store.Batch
	bc.Put(key, val)
	if err := h.Apply(&bc); err != nil {
		t.Fatal(err)
	}
	copy(val, "VALUE")
	wantValue(t, s, "shard/1/c", "value")

	// Async batches take effect in the order they were started.
	var waits []func() error
	for i := range 20 {
		w, err := h.ApplyAsync(batch("shard/1/n", fmt.Sprint(i), fmt.Sprintf("shard/1/n%02d", i), "x"))
		if err != nil {
			t.Fatalf("Handle.ApplyAsync %d: %v", i, err)
		}
		waits = append(waits, w)
	}
	for i, w := range waits {
		if err := w(); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	wantValue(t, s, "shard/1/n", "19")

	if err := h.Apply(&store.Batch{}); err != nil {
		t.Fatalf("Handle.Apply(empty batch) = %v, want nil", err)
	}
	w, err := h.ApplyAsync(&store.Batch{})
	if err != nil {
		t.Fatalf("Handle.ApplyAsync(empty batch) = %v, want nil", err)
	}
	if err := w(); err != nil {
		t.Fatalf("wait for empty batch = %v, want nil", err)
	}
	if h.Fenced() {
		t.Fatal("a handle reports Fenced after writing")
	}

	if b.Reopen != nil {
		s = reopen(t, b, s)
		wantValue(t, s, "shard/1/a", "1")
		wantValue(t, s, "shard/1/n", "19")
		for i := range 20 {
			wantValue(t, s, fmt.Sprintf("shard/1/n%02d", i), "x")
		}
		// The reopened store hands out the scope again.
		hput(t, acquire(t, s, "shard/1/"), "shard/1/a", "reopened")
		wantValue(t, s, "shard/1/a", "reopened")
	}
}

// testHandleOutOfScope: a batch with any key outside the scope is refused
// whole, and the handle stays usable.
func testHandleOutOfScope(t *testing.T, b Backend) {
	s := open(t, b)
	put(t, s, "shard/1", "outside, written by the store")
	h := acquire(t, s, "shard/1/")

	del := batch("shard/1/in", "x")
	del.Delete([]byte("shard/1")) // a delete is a write too
	for _, bt := range []*store.Batch{
		batch("shard/2/x", "x"),
		batch("shard/1/in", "x", "shard/2/x", "x"), // in scope first, out after
		batch("shard/1", "the scope less its last byte"),
		batch("shard/10/x", "x"), // shares "shard/1" but not "shard/1/"
		batch("a", "x", "shard/1/in", "x"),
		del,
	} {
		wantRefused(t, h, bt, store.ErrOutOfScope)
	}
	wantScan(t, s, nil, []kv{{"shard/1", "outside, written by the store"}})

	if h.Fenced() {
		t.Fatal("an out-of-scope write fenced the handle")
	}
	hput(t, h, "shard/1/in", "ok")
	wantValue(t, s, "shard/1/in", "ok")
}

// testHandleFencedByAcquire: a second Acquire of the scope fences the
// first handle, which then writes nothing, and the new handle writes.
func testHandleFencedByAcquire(t *testing.T, b Backend) {
	s := open(t, b)
	old := acquire(t, s, "shard/1/")
	hput(t, old, "shard/1/k", "old")

	cur := acquire(t, s, "shard/1/")
	if !old.Fenced() {
		t.Fatal("the first handle does not report Fenced after a second Acquire")
	}
	if cur.Fenced() {
		t.Fatal("the new handle reports Fenced")
	}
	wantRefused(t, old, batch("shard/1/k", "stale", "shard/1/stale", "x"), store.ErrFenced)
	wantRefused(t, old, &store.Batch{}, store.ErrFenced)
	wantScan(t, s, nil, []kv{{"shard/1/k", "old"}})

	hput(t, cur, "shard/1/k", "new")
	wantValue(t, s, "shard/1/k", "new")

	// Every Acquire fences the one before it.
	third := acquire(t, s, "shard/1/")
	if !cur.Fenced() || third.Fenced() {
		t.Fatalf("after a third Acquire: second Fenced = %v, third Fenced = %v; want true, false", cur.Fenced(), third.Fenced())
	}
	wantRefused(t, cur, batch("shard/1/k", "stale"), store.ErrFenced)
	hput(t, third, "shard/1/k", "third")
	wantValue(t, s, "shard/1/k", "third")
	if !old.Fenced() {
		t.Fatal("the first handle stopped being fenced")
	}
}

// testHandleRelease: Release fences the handle; the scope can be acquired
// again; releasing a handle already fenced leaves the new owner alone.
func testHandleRelease(t *testing.T, b Backend) {
	s := open(t, b)
	h := acquire(t, s, "shard/1/")
	hput(t, h, "shard/1/k", "1")
	h.Release()
	if !h.Fenced() {
		t.Fatal("a released handle does not report Fenced")
	}
	wantRefused(t, h, batch("shard/1/k", "after release"), store.ErrFenced)
	h.Release() // a no-op
	wantValue(t, s, "shard/1/k", "1")

	h2 := acquire(t, s, "shard/1/")
	if h2.Fenced() {
		t.Fatal("a handle acquired after a Release reports Fenced")
	}
	hput(t, h2, "shard/1/k", "2")
	wantValue(t, s, "shard/1/k", "2")

	h3 := acquire(t, s, "shard/1/")
	h2.Release() // already fenced by h3: must not give up h3's scope
	h.Release()
	if h3.Fenced() {
		t.Fatal("releasing fenced handles fenced the scope's owner")
	}
	hput(t, h3, "shard/1/k", "3")
	wantValue(t, s, "shard/1/k", "3")
}

// testHandleFenceKeepsStartedBatches: batches the old handle started before
// the fence complete and are durable, and are ordered before every write of
// the new handle.
func testHandleFenceKeepsStartedBatches(t *testing.T, b Backend) {
	s := open(t, b)
	old := acquire(t, s, "shard/1/")
	const n = 10
	var waits []func() error
	for i := range n {
		w, err := old.ApplyAsync(batch("shard/1/k", fmt.Sprintf("old %d", i), fmt.Sprintf("shard/1/old/%02d", i), "x"))
		if err != nil {
			t.Fatalf("ApplyAsync %d: %v", i, err)
		}
		waits = append(waits, w)
	}

	cur := acquire(t, s, "shard/1/")
	hput(t, cur, "shard/1/k", "new") // before the old batches are waited for
	for i, w := range waits {
		if err := w(); err != nil {
			t.Fatalf("wait for the fenced handle's batch %d, started before the fence: %v", i, err)
		}
	}
	check := func(s store.Store) {
		t.Helper()
		wantValue(t, s, "shard/1/k", "new") // no old batch took effect after the new write
		for i := range n {
			wantValue(t, s, fmt.Sprintf("shard/1/old/%02d", i), "x")
		}
	}
	check(s)
	if b.Reopen != nil {
		check(reopen(t, b, s))
	}
}

// testHandleFenceRace fences a handle while it is being written by several
// goroutines (Apply and pipelined ApplyAsync) and the new handle is written
// as soon as it exists. No write of the old handle may take effect after
// the new Acquire returned: the old keys visible then are exactly the old
// keys visible at the end; every old write acknowledged is among them and
// every refused one is not; and a reader that has just seen a new write
// acknowledged never then reads an old value.
func testHandleFenceRace(t *testing.T, b Backend) {
	s := open(t, b)
	old := acquire(t, s, "race/")
	const oldWriters, newWriters, perNewWriter, window = 4, 4, 25, 4

	type outcome struct {
		acked, refused []string
		err            error // an error other than ErrFenced, or never fenced
	}
	outcomes := make([]outcome, oldWriters)
	ready := make(chan struct{}, oldWriters)
	stop := make(chan struct{}) // closed once the new handle has written
	var oldWG sync.WaitGroup
	for w := range oldWriters {
		oldWG.Go(func() {
			out := &outcomes[w]
			type pending struct {
				key  string
				wait func() error
			}
			var inflight []pending
			signalled := false
			signal := func() { // once, at the first write or at the end
				if !signalled {
					signalled = true
					ready <- struct{}{}
				}
			}
			defer signal()
			land := func(p pending) {
				if err := p.wait(); err != nil {
					out.err = fmt.Errorf("wait for %s, started before the fence: %w", p.key, err)
				} else {
					out.acked = append(out.acked, p.key)
				}
			}
			for i := 0; out.err == nil; i++ {
				// A writer may not run at all between the Acquire and the
				// end of the new writers (one CPU): once stop is closed, its
				// next write must be refused, and is its last.
				late := false
				select {
				case <-stop:
					late = true
				default:
				}
				key := fmt.Sprintf("race/old/%d/%06d", w, i)
				bt := batch(key, "x", "race/last", "old "+key)
				var err error
				if i%2 == 0 {
					if err = old.Apply(bt); err == nil {
						out.acked = append(out.acked, key)
					}
				} else {
					var wait func() error
					if wait, err = old.ApplyAsync(bt); err == nil {
						inflight = append(inflight, pending{key, wait})
						if len(inflight) == window {
							land(inflight[0])
							inflight = inflight[1:]
						}
					}
				}
				if err != nil {
					out.refused = append(out.refused, key)
					if !errors.Is(err, store.ErrFenced) {
						out.err = fmt.Errorf("write of %s: %w", key, err)
					}
					break
				}
				if late {
					out.err = fmt.Errorf("write of %s, begun after the new handle had written, was accepted: the old handle was never fenced", key)
					break
				}
				signal()
			}
			for _, p := range inflight {
				land(p)
			}
		})
	}
	for range oldWriters {
		<-ready // every old writer has written (or failed: see outcomes)
	}

	cur, err := s.Acquire([]byte("race/"))
	if err != nil {
		close(stop)
		oldWG.Wait()
		t.Fatalf("Acquire: %v", err)
	}
	atAcquire := keySet(scan(t, s, []byte("race/old/")))

	var newWG sync.WaitGroup
	for w := range newWriters {
		newWG.Go(func() {
			for i := range perNewWriter {
				key := fmt.Sprintf("race/new/%d/%03d", w, i)
				if err := cur.Apply(batch(key, "x", "race/last", "new "+key)); err != nil {
					t.Errorf("new handle's Apply of %s: %v", key, err)
					return
				}
				got, err := s.Get([]byte("race/last"))
				if err != nil {
					t.Errorf("Get(race/last): %v", err)
					return
				}
				if !strings.HasPrefix(string(got), "new ") {
					t.Errorf("after the new handle's write of %s returned, race/last = %q: an old-handle write took effect after Acquire returned", key, got)
					return
				}
			}
		})
	}
	newWG.Wait()
	close(stop)
	oldWG.Wait()

	final := keySet(scan(t, s, []byte("race/old/")))
	for k := range final {
		if !atAcquire[k] {
			t.Errorf("old-handle write %s took effect after the new Acquire returned", k)
		}
	}
	for k := range atAcquire {
		if !final[k] {
			t.Errorf("old-handle write %s, visible when Acquire returned, is gone", k)
		}
	}
	for w, out := range outcomes {
		if out.err != nil {
			t.Errorf("old writer %d: %v", w, out.err)
		}
		for _, k := range out.acked {
			if !final[k] {
				t.Errorf("old writer %d: acknowledged write %s is missing", w, k)
			}
		}
		for _, k := range out.refused {
			if final[k] {
				t.Errorf("old writer %d: refused write %s took effect", w, k)
			}
		}
	}
	if got, err := s.Get([]byte("race/last")); err != nil || !strings.HasPrefix(string(got), "new ") {
		t.Errorf("at the end race/last = %q, %v; want a new-handle value", got, err)
	}
	if !old.Fenced() || cur.Fenced() {
		t.Errorf("old Fenced = %v, new Fenced = %v; want true, false", old.Fenced(), cur.Fenced())
	}
	t.Logf("old handle: %d keys written before the fence", len(final))
}

func keySet(kvs []kv) map[string]bool {
	m := make(map[string]bool, len(kvs))
	for _, p := range kvs {
		m[p.k] = true
	}
	return m
}

// testHandleDisjointScopes: handles of different scopes do not fence each
// other, including scopes that share a textual prefix but where neither is
// a prefix of the other.
func testHandleDisjointScopes(t *testing.T, b Backend) {
	s := open(t, b)
	scopes := []string{"shard/1/", "shard/2/", "shard/10/", "tenant/1/shard/1/"}
	hs := map[string]store.Handle{}
	for _, sc := range scopes {
		hs[sc] = acquire(t, s, sc)
	}
	write := func(gen string) {
		t.Helper()
		for _, sc := range slices.Sorted(maps.Keys(hs)) {
			if hs[sc].Fenced() {
				t.Fatalf("handle of %q reports Fenced after other scopes were acquired", sc)
			}
			hput(t, hs[sc], sc+"k", gen)
		}
	}
	write("1")
	hs["shard/2/"] = acquire(t, s, "shard/2/") // fences only the old shard/2/ handle
	write("2")
	for _, sc := range scopes {
		wantValue(t, s, sc+"k", "2")
	}
}

// testHandleClosed: after Close, handle writes and Acquire fail with
// ErrClosed, and Release is harmless.
func testHandleClosed(t *testing.T, b Backend) {
	s := open(t, b)
	h := acquire(t, s, "shard/1/")
	hput(t, h, "shard/1/k", "v")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantRefused(t, h, batch("shard/1/k", "after"), store.ErrClosed)
	wantRefused(t, h, &store.Batch{}, store.ErrClosed)
	if _, err := s.Acquire([]byte("shard/2/")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Acquire after Close = %v, want ErrClosed", err)
	}
	h.Release()
}
