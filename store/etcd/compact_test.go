package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/etcd"
)

// compacting is an etcd Store that compacts after every third Apply, so
// that the conformance suite runs across snapshots.
type compacting struct {
	*etcd.Store
	t       *testing.T
	applies atomic.Int64
}

func (c *compacting) Apply(b *store.Batch) error {
	if err := c.Store.Apply(b); err != nil {
		return err
	}
	if c.applies.Add(1)%3 == 0 {
		if err := c.Compact(); err != nil && !errors.Is(err, etcd.ErrCompactConflict) && !errors.Is(err, store.ErrClosed) {
			c.t.Errorf("Compact: %v", err)
		}
	}
	return nil
}

// TestConformanceCompacting runs the conformance suite with a compaction
// after every third Apply, and a background compaction of a scope's log
// every third entry.
func TestConformanceCompacting(t *testing.T) {
	opts := etcd.Options{Client: newClient(t, startEtcd(t)), CompactEntries: 3}
	runConformance(t, opts, func(t *testing.T, s *etcd.Store) store.Store {
		return &compacting{Store: s, t: t}
	})
}

func countKeys(t *testing.T, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// snapshotIDs returns the ids of the snapshots kept under a log's root.
func snapshotIDs(t *testing.T, cli *clientv3.Client, root string) map[string]bool {
	t.Helper()
	snaps, err := cli.Get(context.Background(), root+"/snap/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, kv := range snaps.Kvs {
		k := string(kv.Key[len(root+"/snap/"):])
		ids[k[:len(k)-len("/000000")]] = true
	}
	return ids
}

// TestCompact: a compaction replaces the global log and the logs of the
// scopes the Store owns with snapshots; a new Store loads them, a Store whose
// views predate them rebuilds from them, deletes stay deleted, writes go on
// during it, and a second compaction replaces the first snapshots.
func TestCompact(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	prefix := freshPrefix()
	scope := scopeRoot(prefix, "s/")
	a := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix, CompactEntries: -1, CompactBytes: -1})
	defer a.Close()
	stale := openPeer(t, ep, prefix)
	defer stale.Close()
	h, err := a.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := h.Apply(batchOf(fmt.Sprintf("s/%03d", i), "v1", "s/gone", "x")); err != nil {
			t.Fatal(err)
		}
		if err := a.Apply(batchOf(fmt.Sprintf("g/%03d", i), "v1", "g/gone", "x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := stale.Get([]byte("s/000")); err != nil { // its view: the first writes
		t.Fatal(err)
	}
	if err := h.Apply(bigBatch("s/big/", 3000, 1000, "big")); err != nil { // a chunked entry
		t.Fatal(err)
	}
	var del, gdel store.Batch
	del.Delete([]byte("s/gone"))
	gdel.Delete([]byte("g/gone"))
	if err := h.Apply(&del); err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(&gdel); err != nil {
		t.Fatal(err)
	}

	// Writes go on while compacting.
	stop := make(chan struct{})
	var acked atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := h.Apply(batchOf(fmt.Sprintf("s/during/%05d", i), "x")); err != nil {
				t.Errorf("Apply during Compact: %v", err)
				return
			}
			acked.Store(int64(i + 1))
		}
	})
	if err := a.Compact(); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	close(stop)
	wg.Wait()
	if got := countKeys(t, cli, scope+"/chunk/"); got != 0 {
		t.Errorf("%d log chunks left after Compact", got)
	}
	if got, total := countKeys(t, cli, scope+"/log/"), acked.Load(); got > total {
		t.Errorf("%d log entries left after Compact, more than the %d writes made during it", got, total)
	}
	if got := countKeys(t, cli, prefix+"/g/log/"); got != 0 {
		t.Errorf("%d global log entries left after Compact", got)
	}

	after := int64(0) // keys written after the first compaction
	check := func(s store.Store) {
		t.Helper()
		for i := range 50 {
			for _, k := range []string{fmt.Sprintf("s/%03d", i), fmt.Sprintf("g/%03d", i)} {
				if v, err := s.Get([]byte(k)); err != nil || string(v) != "v1" {
					t.Fatalf("%s = %q, %v", k, v, err)
				}
			}
		}
		for _, k := range []string{"s/gone", "g/gone"} {
			if _, err := s.Get([]byte(k)); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s: %v, want ErrNotFound", k, err)
			}
		}
		if n, _ := countScan(t, s, "s/big/"); n != 3000 {
			t.Fatalf("s/big/: %d keys, want 3000", n)
		}
		if n, _ := countScan(t, s, "s/during/"); int64(n) != acked.Load() {
			t.Fatalf("s/during/: %d keys, want %d", n, acked.Load())
		}
		if n, _ := countScan(t, s, ""); int64(n) != 3000+100+after+acked.Load() {
			t.Fatalf("everything: %d keys, want %d", n, 3100+after+acked.Load())
		}
	}
	check(a)
	check(stale)
	fresh := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix})
	check(fresh)
	fresh.Close()

	// A second compaction of the global log, by another Store, replaces
	// the first snapshot; it leaves the scope, which it does not own.
	if err := h.Apply(batchOf("s/after", "y")); err != nil {
		t.Fatal(err)
	}
	if err := stale.Apply(batchOf("g/after", "y")); err != nil {
		t.Fatal(err)
	}
	after = 2
	if err := stale.Compact(); err != nil {
		t.Fatalf("second Compact: %v", err)
	}
	if got := countKeys(t, cli, prefix+"/g/log/"); got != 0 {
		t.Errorf("%d global log entries left after a quiet Compact", got)
	}
	if got := countKeys(t, cli, scope+"/log/"); got == 0 {
		t.Errorf("a Store compacted a scope it does not own")
	}
	if err := a.Compact(); err != nil {
		t.Fatalf("third Compact: %v", err)
	}
	if got := countKeys(t, cli, scope+"/log/"); got != 0 {
		t.Errorf("%d scope log entries left after a quiet Compact", got)
	}
	for _, root := range []string{prefix + "/g", scope} {
		if ids := snapshotIDs(t, cli, root); len(ids) != 1 {
			t.Errorf("snapshots in %s after two compactions: %v, want one", root, ids)
		}
	}
	for _, s := range []store.Store{a, stale} {
		check(s)
		for _, k := range []string{"s/after", "g/after"} {
			if v, err := s.Get([]byte(k)); err != nil || string(v) != "y" {
				t.Fatalf("%s = %q, %v", k, v, err)
			}
		}
	}
}

// TestCompactConcurrent: compactions from two Stores at once never lose a
// record; the loser of a race gets ErrCompactConflict.
func TestCompactConcurrent(t *testing.T) {
	ep := startEtcd(t)
	prefix := freshPrefix()
	a := openPeer(t, ep, prefix)
	defer a.Close()
	b := openPeer(t, ep, prefix)
	defer b.Close()
	var wg sync.WaitGroup
	for w, s := range []*etcd.Store{a, b} {
		wg.Go(func() {
			for i := range 40 {
				if err := s.Apply(batchOf(fmt.Sprintf("k/%d/%03d", w, i), "v")); err != nil {
					t.Error(err)
					return
				}
				if i%4 == 0 {
					if err := s.Compact(); err != nil && !errors.Is(err, etcd.ErrCompactConflict) {
						t.Errorf("Compact: %v", err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	c := openPeer(t, ep, prefix)
	defer c.Close()
	for _, s := range []*etcd.Store{a, b, c} {
		if n, _ := countScan(t, s, "k/"); n != 80 {
			t.Fatalf("%d keys after concurrent compactions, want 80", n)
		}
	}
}

// TestCompactDropsTombstones: a compaction leaves out of the snapshot, and
// drops from the compacting Store's views, the tombstones of deleted keys
// that no other log has an earlier put of; a tombstone that hides a global
// put of a key under the scope stays.
func TestCompactDropsTombstones(t *testing.T) {
	ep := startEtcd(t)
	prefix := freshPrefix()
	s := openPeer(t, ep, prefix)
	defer s.Close()
	if err := s.Apply(batchOf("s/shadowed", "global", "g/1", "v", "g/2", "v")); err != nil {
		t.Fatal(err)
	}
	h, err := s.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := h.Apply(batchOf(fmt.Sprintf("s/%d", i), "v")); err != nil {
			t.Fatal(err)
		}
	}
	var del, gdel store.Batch
	for i := range 5 {
		del.Delete(fmt.Appendf(nil, "s/%d", i))
	}
	del.Delete([]byte("s/shadowed"))
	gdel.Delete([]byte("g/1"))
	if err := h.Apply(&del); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(&gdel); err != nil {
		t.Fatal(err)
	}
	if n, _ := countScan(t, s, ""); n != 6 {
		t.Fatalf("Scan found %d keys, want 6", n)
	}
	if got := etcd.ViewLen(s, []byte("s/")); got != 11 {
		t.Fatalf("the scope's view holds %d records before Compact, want 11 (5 tombstones)", got)
	}
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := etcd.ViewLen(s, []byte("s/")); got != 6 {
		t.Fatalf("the scope's view holds %d records after Compact, want 6 (the tombstone of s/shadowed)", got)
	}
	if got := etcd.ViewLen(s, nil); got != 2 {
		t.Fatalf("the global view holds %d records after Compact, want 2 (s/shadowed, g/2)", got)
	}
	fresh := openPeer(t, ep, prefix)
	defer fresh.Close()
	for _, r := range []store.Store{s, fresh} {
		if _, err := r.Get([]byte("s/shadowed")); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("s/shadowed: %v, want ErrNotFound", err)
		}
		if n, _ := countScan(t, r, ""); n != 6 {
			t.Fatalf("Scan found %d keys after Compact, want 6", n)
		}
	}
	if got := etcd.ViewLen(fresh, []byte("s/")); got != 6 {
		t.Fatalf("a new Store's view of the scope holds %d records, want 6", got)
	}
}

// TestAutoCompactionGlobal: the global log is compacted in the background
// by a Store whose writes take it past CompactEntries.
func TestAutoCompactionGlobal(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	prefix := freshPrefix()
	s := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix, CompactEntries: 10})
	defer s.Close()
	const n = 100
	for i := range n {
		if err := s.Apply(batchOf(fmt.Sprintf("topic/%03d", i), "v")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "the global log compacted below 10 entries", func() bool {
		return countKeys(t, cli, prefix+"/g/snapshot") == 1 && countKeys(t, cli, prefix+"/g/log/") < 10
	})
	fresh := openPeer(t, ep, prefix)
	defer fresh.Close()
	if got, _ := countScan(t, fresh, "topic/"); got != n {
		t.Fatalf("a new Store found %d records, want %d", got, n)
	}
}
