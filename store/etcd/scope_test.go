package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/etcd"
)

// Tests of the per-scope logs: what a load reads, cached views, background
// compaction, snapshots and fencing, leases per incarnation, group commit
// across scopes.

// waitFor polls cond until it holds, failing t if it does not within d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// entryCounter counts the log entries a Store reads, by log root.
type entryCounter struct {
	mu     sync.Mutex
	byRoot map[string]int
}

func countEntries(s *etcd.Store) *entryCounter {
	c := &entryCounter{byRoot: map[string]int{}}
	etcd.SetEntryHook(s, func(key string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.byRoot[key[:strings.Index(key, "/log/")]]++
	})
	return c
}

// take returns the counts so far and starts again from zero.
func (c *entryCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.byRoot
	c.byRoot = map[string]int{}
	return m
}

// TestLoadReadsOnlyItsScope: loading a scope (Acquire, Scan) reads that
// scope's log and the global log, and no other scope's; a Get of a global
// key reads no scope's log.
func TestLoadReadsOnlyItsScope(t *testing.T) {
	ep := startEtcd(t)
	prefix := freshPrefix()
	w := openPeer(t, ep, prefix)
	defer w.Close()
	for _, sc := range []string{"a/", "b/", "c/"} {
		h, err := w.Acquire([]byte(sc))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if err := h.Apply(batchOf(fmt.Sprintf("%s%02d", sc, i), "v")); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 5 {
		if err := w.Apply(batchOf(fmt.Sprintf("topic/%d", i), "t")); err != nil {
			t.Fatal(err)
		}
	}

	r := openPeer(t, ep, prefix)
	defer r.Close()
	reads := countEntries(r)
	if _, err := r.Get([]byte("topic/3")); err != nil {
		t.Fatal(err)
	}
	if got, want := reads.take(), map[string]int{prefix + "/g": 5}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Get of a global key read entries %v, want %v", got, want)
	}
	if _, err := r.Acquire([]byte("b/")); err != nil {
		t.Fatal(err)
	}
	if n, _ := countScan(t, r, "b/"); n != 20 {
		t.Fatalf("loaded %d records of b/, want 20", n)
	}
	if got, want := reads.take(), map[string]int{scopeRoot(prefix, "b/"): 20}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("loading b/ read entries %v, want %v", got, want)
	}
	// A Scan across scopes reads them all, merged in key order.
	var keys []string
	if err := r.Scan(nil, func(k, v []byte) error { keys = append(keys, string(k)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 65 || keys[0] != "a/00" || keys[64] != "topic/4" {
		t.Fatalf("Scan of everything: %d keys from %q to %q", len(keys), keys[0], keys[len(keys)-1])
	}
}

// TestWarmPreloadReadsDelta: a node that scans a scope ahead of a planned
// move reads, at the real load, only the entries written since; after
// Forget it reads the whole log again.
func TestWarmPreloadReadsDelta(t *testing.T) {
	ep := startEtcd(t)
	prefix := freshPrefix()
	from := openPeer(t, ep, prefix)
	defer from.Close()
	h, err := from.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := h.Apply(batchOf(fmt.Sprintf("s/%02d", i), "v")); err != nil {
			t.Fatal(err)
		}
	}
	to := openPeer(t, ep, prefix)
	defer to.Close()
	reads := countEntries(to)
	if n, _ := countScan(t, to, "s/"); n != 30 { // the warm preload
		t.Fatalf("preload: %d records, want 30", n)
	}
	reads.take()
	for i := range 3 { // the old owner writes on until the move
		if err := h.Apply(batchOf(fmt.Sprintf("s/late/%d", i), "v")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := to.Acquire([]byte("s/")); err != nil {
		t.Fatal(err)
	}
	if n, _ := countScan(t, to, "s/"); n != 33 {
		t.Fatalf("load: %d records, want 33", n)
	}
	if got := reads.take()[scopeRoot(prefix, "s/")]; got != 3 {
		t.Fatalf("the load after a preload read %d entries, want the 3 written since", got)
	}
	to.Forget([]byte("s/"))
	if n, _ := countScan(t, to, "s/"); n != 33 {
		t.Fatalf("after Forget: %d records, want 33", n)
	}
	if got := reads.take()[scopeRoot(prefix, "s/")]; got != 33 {
		t.Fatalf("a Scan after Forget read %d entries, want all 33", got)
	}
}

// TestAutoCompaction: a scope's owner compacts its log in the background
// once it passes CompactEntries, while it writes on; a new Store loads the
// scope from the snapshot and the few entries after it.
func TestAutoCompaction(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	prefix := freshPrefix()
	root := scopeRoot(prefix, "s/")
	w := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix, CompactEntries: 20})
	defer w.Close()
	h, err := w.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		bt := batchOf(fmt.Sprintf("s/%03d", i), "v", "s/last", fmt.Sprint(i))
		if i%10 == 9 {
			bt.Delete(fmt.Appendf(nil, "s/%03d", i-1))
		}
		if err := h.Apply(bt); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "the scope's log compacted below 20 entries", func() bool {
		return countKeys(t, cli, root+"/snapshot") == 1 && countKeys(t, cli, root+"/log/") < 20
	})

	r := openPeer(t, ep, prefix)
	defer r.Close()
	reads := countEntries(r)
	got, _ := countScan(t, r, "s/")
	if want := n - n/10 + 1; got != want {
		t.Fatalf("loaded %d records, want %d", got, want)
	}
	if v, err := r.Get([]byte("s/last")); err != nil || string(v) != fmt.Sprint(n-1) {
		t.Fatalf("s/last = %q, %v", v, err)
	}
	if _, err := r.Get([]byte("s/008")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted key: %v, want ErrNotFound", err)
	}
	if e := reads.take()[root]; e >= 20 {
		t.Fatalf("the load read %d log entries: not from the snapshot", e)
	}
}

// TestFencedHandleCannotSnapshot: the owner's compaction is conditioned on
// its owner key: once another Store has acquired the scope, the old owner's
// Compact writes no snapshot (and learns it is fenced); the new owner's does.
func TestFencedHandleCannotSnapshot(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	prefix := freshPrefix()
	root := scopeRoot(prefix, "s/")
	a := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix, CompactEntries: -1})
	defer a.Close()
	b := mustOpen(t, etcd.Options{Client: newClient(t, ep), Prefix: prefix, CompactEntries: -1})
	defer b.Close()
	old, err := a.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Apply(batchOf("s/k", "old")); err != nil {
		t.Fatal(err)
	}
	cur, err := b.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.Apply(batchOf("s/k", "new")); err != nil {
		t.Fatal(err)
	}
	if err := a.Compact(); err != nil {
		t.Fatalf("Compact of a Store whose handle is fenced: %v", err)
	}
	if !old.Fenced() {
		t.Fatal("the old owner's handle is not Fenced after its compaction failed")
	}
	if n := countKeys(t, cli, root+"/snapshot"); n != 0 {
		t.Fatal("a fenced owner wrote the scope's snapshot")
	}
	if n := countKeys(t, cli, root+"/snap/"); n != 0 {
		t.Fatalf("a fenced owner's compaction left %d snapshot chunks", n)
	}
	if err := b.Compact(); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, cli, root+"/snapshot"); n != 1 {
		t.Fatal("the new owner's Compact wrote no snapshot")
	}
	fresh := openPeer(t, ep, prefix)
	defer fresh.Close()
	if v, err := fresh.Get([]byte("s/k")); err != nil || string(v) != "new" {
		t.Fatalf("s/k = %q, %v; want new", v, err)
	}
}

// TestSetLease: after SetLease, Acquires bind their owner keys to the new
// lease: revoking it fences them, and not the handles acquired before.
func TestSetLease(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	ctx := context.Background()
	first, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, etcd.Options{Client: cli, Prefix: freshPrefix(), Lease: first.ID})
	defer s.Close()
	before, err := s.Acquire([]byte("a/"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	s.SetLease(second.ID)
	after, err := s.Acquire([]byte("b/"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if err := after.Apply(batchOf("b/k", "1")); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("Apply under the revoked new lease = %v, want ErrFenced", err)
	}
	if err := before.Apply(batchOf("a/k", "1")); err != nil {
		t.Fatalf("Apply under the first lease: %v", err)
	}
	if _, err := cli.Revoke(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if err := before.Apply(batchOf("a/k", "2")); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("Apply under the revoked first lease = %v, want ErrFenced", err)
	}
}

// TestReadRetriesCompacted: a read whose revision etcd compacts away before
// the read is done starts again at a current revision, and sees the writes
// made meanwhile.
func TestReadRetriesCompacted(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	prefix := freshPrefix()
	w := openPeer(t, ep, prefix)
	defer w.Close()
	h, err := w.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(batchOf("s/1", "v")); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix})
	defer r.Close()
	var reads atomic.Int64
	etcd.SetRevHook(r, func(rev int64) {
		if reads.Add(1) > 1 {
			return
		}
		// Between the choice of rev and the read of the logs: a write,
		// and etcd's history compacted past rev.
		if err := h.Apply(batchOf("s/2", "v")); err != nil {
			t.Error(err)
		}
		resp, err := cli.Get(context.Background(), "any")
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := cli.Compact(context.Background(), resp.Header.Revision); err != nil {
			t.Error(err)
		}
	})
	if n, _ := countScan(t, r, "s/"); n != 2 {
		t.Fatalf("Scan found %d records, want 2", n)
	}
	if got := reads.Load(); got < 2 {
		t.Fatalf("%d read attempts, want a retry", got)
	}
}

// TestGroupCommitAcrossScopes: batches of several scopes' handles share
// transactions (one entry per scope, at one revision).
func TestGroupCommitAcrossScopes(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	prefix := freshPrefix()
	s := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix})
	defer s.Close()
	const scopes, per = 16, 20
	var wg sync.WaitGroup
	for i := range scopes {
		h, err := s.Acquire(fmt.Appendf(nil, "s%02d/", i))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for j := range per {
				if err := h.Apply(batchOf(fmt.Sprintf("s%02d/%02d", i, j), "v")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	resp, err := cli.Get(context.Background(), prefix+"/s/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	revs := map[int64]int{}
	for _, kv := range resp.Kvs {
		revs[kv.ModRevision]++
	}
	t.Logf("%d entries in %d transactions", len(resp.Kvs), len(revs))
	if len(resp.Kvs) != scopes*per || len(revs) >= scopes*per/2 {
		t.Fatalf("%d entries in %d transactions: want %d entries, shared transactions", len(resp.Kvs), len(revs), scopes*per)
	}
	if n, _ := countScan(t, s, ""); n != scopes*per {
		t.Fatalf("Scan found %d records, want %d", n, scopes*per)
	}
}

// TestSameKeyThroughStoreAndHandle: a key under a scope written both
// through the Store (global log) and through the scope's handle, pipelined
// so that the writes would share transactions, ends with the last write,
// as a new Store sees it too. (The contract has a fencing caller write its
// scope only through its handle; the order must still hold.)
func TestSameKeyThroughStoreAndHandle(t *testing.T) {
	ep := startEtcd(t)
	prefix := freshPrefix()
	s := openPeer(t, ep, prefix)
	defer s.Close()
	h, err := s.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	var waits []func() error
	for i := range n {
		apply := s.ApplyAsync
		if i%2 == 1 {
			apply = h.ApplyAsync
		}
		w, err := apply(batchOf("s/k", fmt.Sprint(i), fmt.Sprintf("s/%s/%03d", []string{"g", "h"}[i%2], i), "x"))
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	for _, w := range waits {
		if err := w(); err != nil {
			t.Fatal(err)
		}
	}
	fresh := openPeer(t, ep, prefix)
	defer fresh.Close()
	for _, r := range []store.Store{s, fresh} {
		if v, err := r.Get([]byte("s/k")); err != nil || string(v) != fmt.Sprint(n-1) {
			t.Fatalf("s/k = %q, %v; want %d", v, err, n-1)
		}
		if got, _ := countScan(t, r, "s/"); got != n+1 {
			t.Fatalf("Scan found %d keys, want %d", got, n+1)
		}
	}
}
