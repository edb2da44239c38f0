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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
			c := etcdtest.StartProcs(t, 3)
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
// prefix, in log order; it skips chunked entries, and fails t if an entry
// was put more than once.
func logOps(t *testing.T, cli *clientv3.Client, prefix string) []logOp {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend))
	if err != nil {
		t.Fatal(err)
	}
	var ops []logOp
	for _, kv := range resp.Kvs {
		if kv.Version != 1 {
			// An entry is put once (its ModRevision is its
			// transaction's): a retry must not put it again.
			t.Errorf("entry %s: put %d times", kv.Key, kv.Version)
		}
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

// lossyKV is a clientv3.KV whose transactions, while lose is set, have
// every third response lost after etcd committed them: the client sees
// Unavailable, as when the connection to a member breaks at that moment.
type lossyKV struct {
	clientv3.KV
	lose atomic.Bool
	n    atomic.Int64
	lost atomic.Int64
}

func (k *lossyKV) Txn(ctx context.Context) clientv3.Txn {
	return &hookTxn{Txn: k.KV.Txn(ctx), commit: k.commit}
}

func (k *lossyKV) commit(txn clientv3.Txn) (*clientv3.TxnResponse, error) {
	resp, err := txn.Commit()
	if err == nil && k.lose.Load() && k.n.Add(1)%3 == 0 {
		k.lost.Add(1)
		return nil, status.Error(codes.Unavailable, "test: the response was lost")
	}
	return resp, err
}

// hookTxn is a clientv3.Txn whose Commit is a test's hook, given the
// transaction built.
type hookTxn struct {
	clientv3.Txn
	commit func(clientv3.Txn) (*clientv3.TxnResponse, error)
}

func (t *hookTxn) If(cs ...clientv3.Cmp) clientv3.Txn     { t.Txn = t.Txn.If(cs...); return t }
func (t *hookTxn) Then(ops ...clientv3.Op) clientv3.Txn   { t.Txn = t.Txn.Then(ops...); return t }
func (t *hookTxn) Else(ops ...clientv3.Op) clientv3.Txn   { t.Txn = t.Txn.Else(ops...); return t }
func (t *hookTxn) Commit() (*clientv3.TxnResponse, error) { return t.commit(t.Txn) }

// TestLostResponses: transactions that etcd committed but whose responses
// were lost (Acquire, inline entries, an entry's chunks and its commit)
// are retried, found committed, and reported so: every wait returns nil,
// and every batch is in its log once, in order. Reads whose responses are
// lost are retried too.
func TestLostResponses(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	kv := &lossyKV{KV: cli.KV}
	cli.KV = kv
	prefix := freshPrefix()
	s := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix, CompactEntries: -1, CompactBytes: -1})
	defer s.Close()

	kv.lose.Store(true)
	hs := acquireScopes(t, s, 3)
	const n = 200
	var wg sync.WaitGroup
	for i, h := range hs {
		wg.Go(func() {
			var waits []func() error
			for j := range n {
				b := batchOf(fmt.Sprintf("s%d/b/%06d", i, j), "x")
				if i == 0 && j%50 == 10 { // over 1 MiB: chunks, then the entry
					b = bigBatch(fmt.Sprintf("s0/big/%06d/", j), 1500, 1000, "big")
				}
				w, err := h.ApplyAsync(b)
				if err != nil {
					t.Errorf("s%d: ApplyAsync %d: %v", i, j, err)
					return
				}
				waits = append(waits, w)
			}
			for j, w := range waits {
				if err := w(); err != nil {
					t.Errorf("s%d: wait %d: %v", i, j, err)
				}
			}
		})
	}
	wg.Go(func() {
		for j := range n {
			if err := s.Apply(batchOf(fmt.Sprintf("g/b/%06d", j), "x")); err != nil {
				t.Errorf("g: Apply %d: %v", j, err)
				return
			}
		}
	})
	wg.Wait()
	// Reads are transactions too, which the client does not retry.
	r := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix})
	defer r.Close()
	for range 3 {
		if got, _ := countScan(t, r, "s1/"); got != n {
			t.Errorf("a Scan through lost responses found %d of %d records", got, n)
		}
		r.Forget([]byte("s1/"))
	}
	kv.lose.Store(false)
	t.Logf("%d responses lost", kv.lost.Load())
	if kv.lost.Load() == 0 {
		t.Fatal("no response was lost")
	}
	if t.Failed() {
		return
	}
	checkLogsInOrder(t, cli, prefix, len(hs), n, func(i, j int) bool {
		return i == 0 && j%50 == 10 // chunked: not in logBatches
	})
	if got, _ := countScan(t, openPeer(t, ep, prefix), "s0/big/"); got != 4*1500 {
		t.Errorf("%d records of the chunked batches, want %d", got, 4*1500)
	}
	if c := countKeys(t, cli, scopeRoot(prefix, "s0/")+"/log/"); c == 0 {
		t.Error("no entries")
	}
}

// lateKV is a clientv3.KV that, while late is set, holds every third
// transaction back and answers Unavailable, then sends it once the next
// transaction (the retry, or another) has been answered: an attempt that
// reaches etcd after the one that replaced it.
type lateKV struct {
	clientv3.KV
	late  atomic.Bool
	mu    sync.Mutex
	n     int
	held  []clientv3.Txn
	moved int // held transactions sent late
}

func (k *lateKV) Txn(ctx context.Context) clientv3.Txn {
	// The late send must outlive the attempt's context.
	return &hookTxn{Txn: k.KV.Txn(context.WithoutCancel(ctx)), commit: k.commit}
}

func (k *lateKV) commit(txn clientv3.Txn) (*clientv3.TxnResponse, error) {
	k.mu.Lock()
	k.n++
	if k.late.Load() && k.n%3 == 0 {
		k.held = append(k.held, txn)
		k.mu.Unlock()
		return nil, status.Error(codes.Unavailable, "test: the request is delayed")
	}
	k.mu.Unlock()
	resp, err := txn.Commit()
	k.mu.Lock()
	held := k.held
	k.held = nil
	k.moved += len(held)
	k.mu.Unlock()
	for _, h := range held {
		h.Commit() // its outcome is nobody's: the attempt was answered
	}
	return resp, err
}

// TestLateAttempts: an attempt that reaches etcd after its retry has been
// answered changes nothing: no entry is put twice (which would move a batch
// after later ones), and no Acquire's owner key is put again (which would
// fence the handle it returned).
func TestLateAttempts(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	kv := &lateKV{KV: cli.KV}
	cli.KV = kv
	prefix := freshPrefix()
	s := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix, CompactEntries: -1, CompactBytes: -1})
	defer s.Close()

	kv.late.Store(true)
	hs := acquireScopes(t, s, 3)
	const n = 100
	for j := range n {
		for i, h := range hs {
			if err := h.Apply(batchOf(fmt.Sprintf("s%d/b/%06d", i, j), "x")); err != nil {
				t.Fatalf("s%d: Apply %d: %v", i, j, err)
			}
		}
		if err := s.Apply(batchOf(fmt.Sprintf("g/b/%06d", j), "x")); err != nil {
			t.Fatalf("g: Apply %d: %v", j, err)
		}
	}
	kv.late.Store(false)
	kv.mu.Lock()
	moved := kv.moved
	kv.mu.Unlock()
	t.Logf("%d transactions sent late", moved)
	if moved == 0 {
		t.Fatal("no transaction was sent late")
	}
	for i, h := range hs {
		if h.Fenced() {
			t.Errorf("handle s%d fenced by a late attempt of its own Acquire", i)
		}
	}
	checkLogsInOrder(t, cli, prefix, len(hs), n, func(int, int) bool { return false })
}

// acquireScopes acquires scopes s0/ … s<n-1>/.
func acquireScopes(t *testing.T, s *etcd.Store, n int) []store.Handle {
	t.Helper()
	var hs []store.Handle
	for i := range n {
		h, err := s.Acquire(fmt.Appendf(nil, "s%d/", i))
		if err != nil {
			t.Fatalf("Acquire %d: %v", i, err)
		}
		hs = append(hs, h)
	}
	return hs
}

// checkLogsInOrder checks that the log of each scope s<i>/ holds batches
// s<i>/b/<j> for j < n (but those skip names), and the global log
// g/b/<j>: each once, in order.
func checkLogsInOrder(t *testing.T, cli *clientv3.Client, prefix string, scopes, n int, skip func(i, j int) bool) {
	t.Helper()
	for i := range scopes {
		var want []string
		for j := range n {
			if !skip(i, j) {
				want = append(want, fmt.Sprintf("s%d/b/%06d", i, j))
			}
		}
		if got := logBatches(t, cli, scopeRoot(prefix, fmt.Sprintf("s%d/", i))+"/log/"); !slices.Equal(got, want) {
			t.Errorf("scope s%d's log holds %d batches, want %d once each, in order", i, len(got), len(want))
		}
	}
	var want []string
	for j := range n {
		want = append(want, fmt.Sprintf("g/b/%06d", j))
	}
	if got := logBatches(t, cli, prefix+"/g/log/"); !slices.Equal(got, want) {
		t.Errorf("the global log holds %d batches, want %d once each, in order", len(got), len(want))
	}
}
