package etcd_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cohort-dev/cohort/internal/etcdtest"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/etcd"
)

// Tests of a three-member etcd losing a member while a Store writes: the
// writes whose outcome the loss left unknown are retried, so that no batch
// fails, and none is applied twice.

// TestMemberStoppedMidLoad stops one member of three (the leader, or a
// follower) while writers pipeline batches through handles and through the
// Store: no wait returns an error, and every acknowledged batch is in its
// log exactly once, in the order it was started.
func TestMemberStoppedMidLoad(t *testing.T) {
	for _, which := range []string{"leader", "follower"} {
		t.Run(which, func(t *testing.T) {
			c := etcdtest.StartEmbedded(t, 3)
			testMemberLost(t, c.Endpoints(), which, c.Stop)
		})
	}
}

// TestMemberKilledMidLoad is TestMemberStoppedMidLoad with separate etcd
// processes, the leader killed with SIGKILL.
func TestMemberKilledMidLoad(t *testing.T) {
	c := etcdtest.StartProcs(t, 3)
	testMemberLost(t, c.Endpoints(), "leader", c.Kill)
}

// memberOf returns the index in endpoints of the leader, or of a follower.
func memberOf(t *testing.T, cli *clientv3.Client, endpoints []string, which string) int {
	t.Helper()
	for i, ep := range endpoints {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		if err != nil {
			t.Fatalf("status of %s: %v", ep, err)
		}
		if (st.Leader == st.Header.MemberId) == (which == "leader") {
			return i
		}
	}
	t.Fatalf("no %s among %v", which, endpoints)
	return -1
}

func testMemberLost(t *testing.T, endpoints []string, which string, lose func(i int)) {
	cli := etcdtest.NewClient(t, endpoints)
	prefix := freshPrefix()
	s := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix, CompactEntries: -1, CompactBytes: -1})
	defer s.Close()

	const handles, window = 3, 8
	// Writer w < handles writes scope w through a handle, pipelining;
	// writer handles writes the global log through Store.ApplyAsync.
	type writer struct {
		p     store.Pipeliner
		key   string // the prefix of its keys
		acked atomic.Int64
	}
	var ws []*writer
	for i := range handles {
		h, err := s.Acquire(fmt.Appendf(nil, "s%d/", i))
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, &writer{p: h, key: fmt.Sprintf("s%d/", i)})
	}
	ws = append(ws, &writer{p: s, key: "g/"})

	stop := make(chan struct{})
	var failed atomic.Bool // a writer stopped on an error
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			var waits []func() error
			wait := func() bool {
				if err := waits[0](); err != nil {
					t.Errorf("%s: wait of batch %d: %v", w.key, w.acked.Load(), err)
					failed.Store(true)
					return false
				}
				waits = waits[1:]
				w.acked.Add(1)
				return true
			}
			for i := 0; ; i++ {
				select {
				case <-stop:
					for len(waits) > 0 {
						if !wait() {
							return
						}
					}
					return
				default:
				}
				wait1, err := w.p.ApplyAsync(batchOf(fmt.Sprintf("%sb/%06d", w.key, i), "x"))
				if err != nil {
					t.Errorf("%s: ApplyAsync %d: %v", w.key, i, err)
					failed.Store(true)
					return
				}
				waits = append(waits, wait1)
				if len(waits) == window && !wait() {
					return
				}
			}
		})
	}
	acked := func(n int64) func() bool {
		return func() bool {
			if failed.Load() {
				return true
			}
			for _, w := range ws {
				if w.acked.Load() < n {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, 30*time.Second, "100 batches acknowledged per writer", acked(100))
	victim := memberOf(t, cli, endpoints, which)
	lose(victim)
	base := int64(0)
	for _, w := range ws {
		base = max(base, w.acked.Load())
	}
	t.Logf("member %d (%s) lost after %d batches per writer", victim, which, base)
	waitFor(t, 60*time.Second, "200 more batches acknowledged per writer", acked(base+200))
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}

	// Every acknowledged batch, once, in order, in its log.
	for i, w := range ws {
		root := prefix + "/g"
		if i < handles {
			root = scopeRoot(prefix, w.key)
		}
		seen := logBatches(t, cli, root+"/log/")
		n := int(w.acked.Load())
		if len(seen) != n {
			t.Errorf("%s: %d batches in the log, %d acknowledged", w.key, len(seen), n)
			continue
		}
		for j, k := range seen {
			if want := fmt.Sprintf("%sb/%06d", w.key, j); k != want {
				t.Errorf("%s: batch %d of the log is %s, want %s (a batch applied twice, or out of order)", w.key, j, k, want)
				break
			}
		}
		t.Logf("%s: %d batches acknowledged, %d in the log", w.key, n, len(seen))
	}
}

// logBatches returns the keys put by the entries of the log under prefix,
// in log order (all inline entries: the batches are small).
func logBatches(t *testing.T, cli *clientv3.Client, prefix string) []string {
	t.Helper()
	var keys []string
	for _, op := range logOps(t, cli, prefix) {
		keys = append(keys, op.key)
	}
	return keys
}

// logOp is an operation of a log entry: a put of value at key (or a
// delete), by the entry at revision rev.
type logOp struct {
	key, value string
	rev        int64
}

// logOps returns the operations of the inline entries of the log under
// prefix, in log order; it skips chunked entries.
func logOps(t *testing.T, cli *clientv3.Client, prefix string) []logOp {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend))
	if err != nil {
		t.Fatal(err)
	}
	var ops []logOp
	for _, kv := range resp.Kvs {
		b := kv.Value
		if len(b) < 2 || b[0] != 1 {
			t.Fatalf("entry %s: not of version 1", kv.Key)
		}
		if b[1] != 0 {
			continue
		}
		b = b[2:]
		field := func() []byte {
			n, m := binary.Uvarint(b)
			if m <= 0 || int(n) > len(b)-m {
				t.Fatalf("entry %s: bad length", kv.Key)
			}
			f := b[m : m+int(n)]
			b = b[m+int(n):]
			return f
		}
		for len(b) > 0 {
			op := b[0]
			b = b[1:]
			o := logOp{key: string(field()), rev: kv.ModRevision}
			if op == 0 {
				o.value = string(field())
			}
			ops = append(ops, o)
		}
	}
	return ops
}

// TestLogsKeepTheirOrder: with transactions of different logs in flight at
// once (an entry written in chunks lets others go beside it), each log's
// batches are in it in the order they were started, and a key written
// through the Store under a scope acquired here is ordered with the
// handle's writes of it.
func TestLogsKeepTheirOrder(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	prefix := freshPrefix()
	s := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix, CompactEntries: -1, CompactBytes: -1})
	defer s.Close()
	a, err := s.Acquire([]byte("a/"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Acquire([]byte("b/"))
	if err != nil {
		t.Fatal(err)
	}

	const n = 300
	var wg sync.WaitGroup
	pipeline := func(name string, start func(i int) (func() error, error)) {
		wg.Go(func() {
			var waits []func() error
			for i := range n {
				w, err := start(i)
				if err != nil {
					t.Errorf("%s: start %d: %v", name, i, err)
					return
				}
				waits = append(waits, w)
			}
			for i, w := range waits {
				if err := w(); err != nil {
					t.Errorf("%s: wait %d: %v", name, i, err)
				}
			}
		})
	}
	// Scope b: every 50th batch is over 1 MiB, written in chunks.
	pipeline("b", func(i int) (func() error, error) {
		if i%50 == 25 {
			return b.ApplyAsync(bigBatch(fmt.Sprintf("b/big/%03d/", i), 1500, 1000, "big"))
		}
		return b.ApplyAsync(batchOf(fmt.Sprintf("b/k/%06d", i), "x"))
	})
	// Scope a and the global log, one writer alternating between them on
	// the key a/shared.
	pipeline("a+g", func(i int) (func() error, error) {
		v := fmt.Sprintf("%06d", i)
		if i%2 == 0 {
			return a.ApplyAsync(batchOf("a/shared", v, "a/k/"+v, "x"))
		}
		return s.ApplyAsync(batchOf("a/shared", v, "g/k/"+v, "x"))
	})
	wg.Wait()
	if t.Failed() {
		return
	}

	// Scope b's small batches, in order.
	bs := logBatches(t, cli, scopeRoot(prefix, "b/")+"/log/")
	for i, j := 0, 0; i < n; i++ {
		if i%50 == 25 {
			continue
		}
		if want := fmt.Sprintf("b/k/%06d", i); j >= len(bs) || bs[j] != want {
			t.Fatalf("scope b's small batch %d: got %v, want %s", j, bs[j:min(j+1, len(bs))], want)
		}
		j++
	}
	// a/shared's writes, merged from both logs by revision, in order.
	ops := append(logOps(t, cli, scopeRoot(prefix, "a/")+"/log/"), logOps(t, cli, prefix+"/g/log/")...)
	slices.SortStableFunc(ops, func(x, y logOp) int { return int(x.rev - y.rev) })
	last := ""
	count := 0
	for _, o := range ops {
		if o.key != "a/shared" {
			continue
		}
		if o.value <= last {
			t.Fatalf("a/shared written %s after %s", o.value, last)
		}
		last = o.value
		count++
	}
	if count != n {
		t.Fatalf("a/shared written %d times, want %d", count, n)
	}
	for _, st := range []store.Store{s, openPeer(t, ep, prefix)} {
		if v, err := st.Get([]byte("a/shared")); err != nil || string(v) != fmt.Sprintf("%06d", n-1) {
			t.Fatalf("a/shared = %q, %v; want %06d", v, err, n-1)
		}
	}
}
