package etcd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/etcd"
)

// Tests of etcd housekeeping: orphaned chunks, etcd's history, its quota.

// TestOrphanChunksSwept: chunks that no entry committed (a writer crashed
// between its chunks and its commit) are swept by a compaction once older
// than twice Options.Timeout, and not before.
func TestOrphanChunksSwept(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	prefix := freshPrefix()
	const timeout = 500 * time.Millisecond
	s := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix, Timeout: timeout, CompactEntries: -1})
	defer s.Close()
	h, err := s.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(batchOf("s/k", "v")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	orphans := []string{
		scopeRoot(prefix, "s/") + "/chunk/0123456789abcdef/0000000000000007/",
		prefix + "/g/chunk/0123456789abcdef/0000000000000008/",
	}
	for _, dir := range orphans {
		for n := range 2 {
			if _, err := cli.Put(ctx, fmt.Sprintf("%s%06d", dir, n), "piece"); err != nil {
				t.Fatal(err)
			}
		}
	}
	created := time.Now()
	left := func() int64 {
		var n int64
		for _, dir := range orphans {
			n += countKeys(t, cli, dir)
		}
		return n
	}
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	if time.Since(created) < 2*timeout && left() != 4 {
		t.Fatalf("a compaction within twice Timeout of their creation swept orphaned chunks (%d of 4 left)", left())
	}
	waitFor(t, 20*time.Second, "orphaned chunks swept", func() bool {
		if err := s.Compact(); err != nil {
			t.Fatal(err)
		}
		return left() == 0
	})
	if v, err := s.Get([]byte("s/k")); err != nil || string(v) != "v" {
		t.Fatalf("s/k = %q, %v", v, err)
	}
}

// TestHistoryCompaction: with CompactHistory, etcd's history is compacted
// at a revision at least HistoryRetention old, and reads go on.
func TestHistoryCompaction(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	s := mustOpen(t, etcd.Options{Client: cli, Prefix: freshPrefix(),
		CompactHistory: true, HistoryRetention: 300 * time.Millisecond, CheckInterval: 50 * time.Millisecond})
	defer s.Close()
	if err := s.Apply(batchOf("k", "1")); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(context.Background(), "any")
	if err != nil {
		t.Fatal(err)
	}
	written := resp.Header.Revision
	if err := s.Apply(batchOf("k", "2")); err != nil { // k=1 is history now
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, 20*time.Second, "etcd's history compacted past the first write", func() bool {
		_, err := cli.Get(context.Background(), "any", clientv3.WithRev(written))
		if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
			t.Fatal(err)
		}
		return err != nil
	})
	if since := time.Since(start); since < 300*time.Millisecond {
		t.Fatalf("history compacted %v after the write, within the retention", since)
	}
	if err := s.Apply(batchOf("k", "3")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get([]byte("k")); err != nil || string(v) != "3" {
		t.Fatalf("k = %q, %v", v, err)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestQuota: on an etcd with a small quota, Usage and OnUsage report the
// size and the quota (Options.QuotaBytes: Debian's etcd 3.4 does not give
// its quota in Status; e2e/etcdserver checks the quota a newer etcd
// reports), a warning is logged past 80 %, and once etcd raises its
// NOSPACE alarm, writes fail with ErrQuota.
func TestQuota(t *testing.T) {
	const quota = 4 << 20
	ep, _ := startEtcdServer(t, fmt.Sprint("--quota-backend-bytes=", quota))
	var logs syncBuffer
	var reported atomic.Int64
	s := mustOpen(t, etcd.Options{
		Client:        newClient(t, ep),
		Prefix:        freshPrefix(),
		QuotaBytes:    quota,
		CheckInterval: 50 * time.Millisecond,
		OnUsage:       func(used, q int64) { reported.Store(q) },
		Logger:        slog.New(slog.NewTextHandler(&logs, nil)),
	})
	defer s.Close()
	waitFor(t, 10*time.Second, "a usage check", func() bool { used, _ := s.Usage(); return used > 0 })
	if _, q := s.Usage(); q != quota {
		t.Fatalf("Usage quota = %d, want %d", q, quota)
	}
	if reported.Load() != quota {
		t.Fatalf("OnUsage quota = %d, want %d", reported.Load(), quota)
	}

	value := bytes.Repeat([]byte("x"), 256<<10)
	var werr error
	for i := 0; i < 200 && werr == nil; i++ {
		var b store.Batch
		b.Put(fmt.Appendf(nil, "big/%d", i), value)
		werr = s.Apply(&b)
	}
	if !errors.Is(werr, etcd.ErrQuota) {
		t.Fatalf("write to a full etcd = %v, want ErrQuota", werr)
	}
	if !strings.Contains(werr.Error(), "alarm disarm") {
		t.Fatalf("the error does not tell the operator what to do: %v", werr)
	}
	waitFor(t, 10*time.Second, "a warning past 80% of the quota", func() bool {
		return strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "80%")
	})
	if used, q := s.Usage(); used*10 < q*8 {
		t.Fatalf("Usage = %d of %d after NOSPACE", used, q)
	}
}

// TestSweptChunksFailCommit: if a writer's chunks were swept before its
// commit (a writer slower than the sweep's bound), the commit fails and the
// batch is nowhere, rather than committed without its chunks.
func TestSweptChunksFailCommit(t *testing.T) {
	ep := startEtcd(t)
	cli := newClient(t, ep)
	prefix := freshPrefix()
	s := mustOpen(t, etcd.Options{Client: cli, Prefix: prefix})
	defer s.Close()
	h, err := s.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}
	etcd.SetChunksHook(s, func(dir string) {
		if _, err := cli.Delete(context.Background(), dir, clientv3.WithPrefix()); err != nil {
			t.Error(err)
		}
	})
	if err := h.Apply(bigBatch("s/k/", 3000, 1000, "swept")); err == nil || errors.Is(err, store.ErrFenced) {
		t.Fatalf("Apply whose chunks were swept = %v, want an error other than a fence", err)
	}
	etcd.SetChunksHook(s, nil)
	r := openPeer(t, ep, prefix)
	defer r.Close()
	if n, _ := countScan(t, r, "s/"); n != 0 {
		t.Fatalf("a loader found %d records of the batch", n)
	}
	if n := countKeys(t, cli, scopeRoot(prefix, "s/")+"/log/"); n != 0 {
		t.Fatalf("%d log entries committed", n)
	}
	if err := h.Apply(batchOf("s/after", "v")); err != nil {
		t.Fatalf("the handle after a failed commit: %v", err)
	}
}
