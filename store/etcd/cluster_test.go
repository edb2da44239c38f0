package etcd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/etcd"
)

// Tests of what the conformance suite cannot see: etcd's request limits,
// fencing between Stores on different clients (processes), lease-bound
// owner keys, and the order of pipelined batches as another Store sees it.

func countScan(t *testing.T, s store.Store, prefix string) (n int, vals map[string]int) {
	t.Helper()
	vals = map[string]int{}
	err := s.Scan([]byte(prefix), func(k, v []byte) error {
		n++
		vals[string(v[:min(len(v), 8)])]++
		return nil
	})
	if err != nil {
		t.Fatalf("Scan(%q): %v", prefix, err)
	}
	return n, vals
}

// bigBatch returns a batch of n puts under prefix, each value size bytes
// starting with gen.
func bigBatch(prefix string, n, size int, gen string) *store.Batch {
	var b store.Batch
	for i := range n {
		v := bytes.Repeat([]byte{'x'}, size)
		copy(v, gen)
		b.Put(fmt.Appendf(nil, "%s%06d", prefix, i), v)
	}
	return &b
}

// TestLargeBatchAtomic writes batches far over etcd's 128 operations and
// 1.5 MiB per request through a handle, while a second Store on another
// client loads the scope again and again: every load sees each batch whole
// or not at all. Also with the writer compacting the scope's log in the
// background after every second entry, so that loads meet snapshots.
func TestLargeBatchAtomic(t *testing.T) {
	for _, every := range []int{-1, 2} {
		t.Run(fmt.Sprintf("compact-every=%d", every), func(t *testing.T) { testLargeBatchAtomic(t, every) })
	}
}

func testLargeBatchAtomic(t *testing.T, compactEvery int) {
	ep := startEtcd(t)
	prefix := freshPrefix()
	w := mustOpen(t, etcd.Options{Client: newClient(t, ep), Prefix: prefix, CompactEntries: compactEvery})
	defer w.Close()
	h, err := w.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}

	const n, size = 5000, 700 // 5,000 operations, about 3.6 MiB
	gens := []string{"gen-aaaa", "gen-bbbb", "gen-cccc"}
	done := make(chan error, 1)
	go func() {
		for _, g := range gens {
			if err := h.Apply(bigBatch("s/k/", n, size, g)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()

	loads := 0
	for writing := true; writing; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Apply of a large batch: %v", err)
			}
			writing = false
		default:
		}
		// A fresh Store each time: a loader replaying the log from the start.
		r := openPeer(t, ep, prefix)
		got, vals := countScan(t, r, "s/k/")
		r.Close()
		loads++
		if got != 0 && (got != n || len(vals) != 1) {
			t.Fatalf("a loader saw %d keys with values %v: half a batch", got, vals)
		}
		if !writing && vals[gens[len(gens)-1]] != n {
			t.Fatalf("after the last Apply, a loader saw %v, want %d × %s", vals, n, gens[len(gens)-1])
		}
	}
	t.Logf("%d loads while writing", loads)

	// A batch of 200 small operations fits one request but not one etcd
	// transaction of one key per record.
	var small store.Batch
	for i := range 200 {
		small.Put(fmt.Appendf(nil, "s/small/%03d", i), []byte("v"))
	}
	if err := h.Apply(&small); err != nil {
		t.Fatal(err)
	}
	if got, _ := countScan(t, w, "s/small/"); got != 200 {
		t.Fatalf("Scan found %d of 200 keys", got)
	}
	if compactEvery > 0 {
		cli := newClient(t, ep)
		waitFor(t, 10*time.Second, "a snapshot of the scope", func() bool {
			return countKeys(t, cli, scopeRoot(prefix, "s/")+"/snapshot") == 1
		})
	}
}

// TestFencedLargeBatchLeavesNothing: a fenced handle's batch too large for
// one request writes nothing, chunks included.
func TestFencedLargeBatchLeavesNothing(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	prefix := freshPrefix()
	a := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix})
	defer a.Close()
	b := openPeer(t, ep, prefix)
	defer b.Close()
	old, err := a.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire([]byte("s/")); err != nil {
		t.Fatal(err)
	}
	if err := old.Apply(bigBatch("s/k/", 3000, 1000, "stale")); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("fenced handle's large Apply = %v, want ErrFenced", err)
	}
	if got, _ := countScan(t, b, "s/"); got != 0 {
		t.Fatalf("a fenced write left %d keys", got)
	}
	if n := countKeys(t, cli, scopeRoot(prefix, "s/")+"/chunk/"); n != 0 {
		t.Fatalf("a fenced write left %d chunks", n)
	}
}

// TestFencedAcrossStores: an Acquire through another Store (another client:
// another node) fences a handle, which learns of it at its next write.
func TestFencedAcrossStores(t *testing.T) {
	ep := startEtcd(t)
	prefix := freshPrefix()
	a := openPeer(t, ep, prefix)
	defer a.Close()
	b := openPeer(t, ep, prefix)
	defer b.Close()

	ha, err := a.Acquire([]byte("shard/1/"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := a.Acquire([]byte("shard/2/"))
	if err != nil {
		t.Fatal(err)
	}
	put := func(h store.Handle, k, v string) error {
		var bt store.Batch
		bt.Put([]byte(k), []byte(v))
		return h.Apply(&bt)
	}
	if err := put(ha, "shard/1/k", "a"); err != nil {
		t.Fatal(err)
	}
	hb, err := b.Acquire([]byte("shard/1/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := put(hb, "shard/1/k", "b"); err != nil {
		t.Fatal(err)
	}

	// Pipelined batches of the fenced handle and of another scope's handle,
	// interleaved: only the fenced handle's fail.
	var waits []func() error
	var fencedWaits []func() error
	for i := range 10 {
		w, err := other.ApplyAsync(batchOf("shard/2/k", strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
		if w, err := ha.ApplyAsync(batchOf("shard/1/k", "stale")); err == nil {
			fencedWaits = append(fencedWaits, w)
		} else if !errors.Is(err, store.ErrFenced) {
			t.Fatalf("ApplyAsync of the fenced handle = %v, want ErrFenced", err)
		}
	}
	for _, w := range fencedWaits {
		if err := w(); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("wait of the fenced handle's batch = %v, want ErrFenced", err)
		}
	}
	for _, w := range waits {
		if err := w(); err != nil {
			t.Fatalf("wait of another scope's batch: %v", err)
		}
	}
	if !ha.Fenced() || hb.Fenced() || other.Fenced() {
		t.Fatalf("Fenced: old %v, new %v, other scope %v; want true, false, false", ha.Fenced(), hb.Fenced(), other.Fenced())
	}
	if err := put(ha, "shard/1/k", "stale"); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("Apply of the fenced handle = %v, want ErrFenced", err)
	}
	for _, s := range []store.Store{a, b} {
		if v, err := s.Get([]byte("shard/1/k")); err != nil || string(v) != "b" {
			t.Fatalf("shard/1/k = %q, %v; want b", v, err)
		}
		if v, err := s.Get([]byte("shard/2/k")); err != nil || string(v) != "9" {
			t.Fatalf("shard/2/k = %q, %v; want 9", v, err)
		}
	}
}

func batchOf(kvs ...string) *store.Batch {
	var b store.Batch
	for i := 0; i < len(kvs); i += 2 {
		b.Put([]byte(kvs[i]), []byte(kvs[i+1]))
	}
	return &b
}

// TestLeaseRevokedFences: with Options.Lease, a handle's writes fail with
// ErrFenced once the lease is revoked (as when a node's lease expires),
// with no other Acquire; and Acquire fails while the lease is gone.
func TestLeaseRevokedFences(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	ctx := context.Background()
	lease, err := cli.Grant(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, etcd.Options{Client: cli, Prefix: freshPrefix(), Lease: lease.ID})
	defer s.Close()
	h, err := s.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(batchOf("s/k", "1")); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(batchOf("s/k", "2")); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("Apply after the lease was revoked = %v, want ErrFenced", err)
	}
	if !h.Fenced() {
		t.Fatal("handle not Fenced after a write failed with ErrFenced")
	}
	if v, err := s.Get([]byte("s/k")); err != nil || string(v) != "1" {
		t.Fatalf("s/k = %q, %v; want 1", v, err)
	}
	if _, err := s.Acquire([]byte("s/")); err == nil {
		t.Fatal("Acquire with a revoked lease succeeded")
	}
}

// TestPipelinedOrderSeenElsewhere: batches pipelined through a handle take
// effect in the order they were started, as a reader on another client sees
// them: when it sees batch i, it sees every batch before it.
func TestPipelinedOrderSeenElsewhere(t *testing.T) {
	ep := startEtcd(t)
	prefix := freshPrefix()
	w := openPeer(t, ep, prefix)
	defer w.Close()
	r := openPeer(t, ep, prefix)
	defer r.Close()
	h, err := w.Acquire([]byte("p/"))
	if err != nil {
		t.Fatal(err)
	}

	const n, window = 2000, 16
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		last := -1
		for {
			select {
			case <-stop:
				return
			default:
			}
			v, err := r.Get([]byte("p/last"))
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Errorf("Get: %v", err)
				return
			}
			i, _ := strconv.Atoi(string(v))
			if i < last {
				t.Errorf("p/last went back from %d to %d", last, i)
				return
			}
			last = i
			got, _ := countScan(t, r, "p/seq/")
			if got < i+1 {
				t.Errorf("reader saw batch %d but only %d batches", i, got)
				return
			}
		}
	})
	var waits []func() error
	for i := range n {
		wait, err := h.ApplyAsync(batchOf("p/last", strconv.Itoa(i), fmt.Sprintf("p/seq/%06d", i), "x"))
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, wait)
		if len(waits) == window {
			if err := waits[0](); err != nil {
				t.Fatal(err)
			}
			waits = waits[1:]
		}
	}
	for _, wait := range waits {
		if err := wait(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if v, err := r.Get([]byte("p/last")); err != nil || string(v) != strconv.Itoa(n-1) {
		t.Fatalf("p/last = %q, %v; want %d", v, err, n-1)
	}
	if got, _ := countScan(t, r, "p/seq/"); got != n {
		t.Fatalf("reader saw %d batches, want %d", got, n)
	}
}

// TestLogEntriesGroupCommitted checks the point of the log layout: many
// concurrent small batches share few etcd transactions (log entries).
func TestLogEntriesGroupCommitted(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	prefix := freshPrefix()
	s := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix})
	defer s.Close()
	const writers, per = 64, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range per {
				if err := s.Apply(batchOf(fmt.Sprintf("g/%02d/%02d", w, i), "v")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	entries := countKeys(t, cli, prefix+"/g/log/")
	t.Logf("%d batches in %d log entries", writers*per, entries)
	if entries >= writers*per/2 {
		t.Fatalf("%d batches took %d log entries: no group commit", writers*per, entries)
	}
	if got, _ := countScan(t, s, "g/"); got != writers*per {
		t.Fatalf("Scan found %d keys, want %d", got, writers*per)
	}
}

// TestFailedWriteFailsLaterOnes: when etcd is gone, a write fails after
// Options.Timeout, and no batch pipelined behind a failed one reports
// success (which would claim the failed one durable). Close still returns.
func TestFailedWriteFailsLaterOnes(t *testing.T) {
	ep, stopEtcd := startEtcdServer(t)
	s := mustOpen(t, etcd.Options{Client: newClient(t, ep), Prefix: freshPrefix(), Timeout: 300 * time.Millisecond})
	h, err := s.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(batchOf("s/k", "before")); err != nil {
		t.Fatal(err)
	}
	stopEtcd()
	var waits []func() error
	for i := range 5 {
		w, err := h.ApplyAsync(batchOf("s/k", strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	for i, w := range waits {
		if err := w(); err == nil {
			t.Fatalf("batch %d reported durable with etcd stopped", i)
		} else if errors.Is(err, store.ErrFenced) {
			t.Fatalf("batch %d: %v; want an etcd error, not a fence", i, err)
		}
	}
	if h.Fenced() {
		t.Fatal("an unreachable etcd fenced the handle")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
