package etcd_test

import (
	"bytes"
	"context"
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

// The benchmarks run on one embedded etcd member with its data on local
// disk. Batches are of 10 records of about 100 bytes (a group commit of
// offset commits).

const benchRecords, benchValue = 10, 100

// benchWriters runs writers goroutines that together write b.N batches of
// benchRecords records through write(writer, batch), and reports records/s.
func benchWriters(b *testing.B, writers int, write func(w int, bt *store.Batch) error) {
	value := bytes.Repeat([]byte("v"), benchValue)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range writers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				var bt store.Batch
				for r := range benchRecords {
					bt.Put(fmt.Appendf(nil, "shard/%02d/key/%012d/%02d", w%16, i, r), value)
				}
				if err := write(w, &bt); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N*benchRecords)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkApply: concurrent Store.Apply of 10-record batches; each
// writer's batch is durable (committed by etcd) when Apply returns.
func BenchmarkApply(b *testing.B) {
	ep := startEtcd(b)
	for _, writers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := mustOpen(b, etcd.Options{Client: newClient(b, ep), Prefix: freshPrefix()})
			defer s.Close()
			benchWriters(b, writers, func(_ int, bt *store.Batch) error { return s.Apply(bt) })
		})
	}
}

// BenchmarkHandleApply is BenchmarkApply through 16 shard handles (writer
// w writes shard w mod 16), so that transactions carry owner-key compares.
func BenchmarkHandleApply(b *testing.B) {
	ep := startEtcd(b)
	for _, writers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := mustOpen(b, etcd.Options{Client: newClient(b, ep), Prefix: freshPrefix()})
			defer s.Close()
			var hs []store.Handle
			for i := range 16 {
				h, err := s.Acquire(fmt.Appendf(nil, "shard/%02d/", i))
				if err != nil {
					b.Fatal(err)
				}
				hs = append(hs, h)
			}
			benchWriters(b, writers, func(w int, bt *store.Batch) error { return hs[w%16].Apply(bt) })
		})
	}
}

// BenchmarkApplyAsync: one writer keeping 16 batches of 100 records in
// flight, as a coordinator shard's writer does.
func BenchmarkApplyAsync(b *testing.B) {
	ep := startEtcd(b)
	s := mustOpen(b, etcd.Options{Client: newClient(b, ep), Prefix: freshPrefix()})
	defer s.Close()
	h, err := s.Acquire([]byte("shard/00/"))
	if err != nil {
		b.Fatal(err)
	}
	value := bytes.Repeat([]byte("v"), benchValue)
	b.ResetTimer()
	pipeline(b, h, b.N, func(i int, bt *store.Batch) {
		for r := range 100 {
			bt.Put(fmt.Appendf(nil, "shard/00/key/%012d/%03d", i, r), value)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkKeyPerRecord is the layout not chosen, for comparison: each
// 10-record batch is one etcd transaction of 10 puts, one key per record,
// from concurrent writers each waiting for its own transaction.
func BenchmarkKeyPerRecord(b *testing.B) {
	ep := startEtcd(b)
	for _, writers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			cli := newClient(b, ep)
			prefix := freshPrefix()
			benchWriters(b, writers, func(_ int, bt *store.Batch) error {
				ops := make([]clientv3.Op, 0, bt.Len())
				for _, op := range bt.Ops {
					ops = append(ops, clientv3.OpPut(prefix+"/"+string(op.Key), string(op.Value)))
				}
				_, err := cli.Txn(context.Background()).Then(ops...).Commit()
				return err
			})
		})
	}
}

// BenchmarkLoad measures a shard's load by a new Store (a node taking the
// shard over: Acquire, then Scan) of 200,000 records of 100-byte values,
// replayed from the log, or from a snapshot after Compact.
func BenchmarkLoad(b *testing.B) {
	for _, compact := range []bool{false, true} {
		name := "from=log"
		if compact {
			name = "from=snapshot"
		}
		b.Run(name, func(b *testing.B) {
			value := bytes.Repeat([]byte("v"), benchValue)
			benchLoadScope(b, compact, 200_000, []byte("shard/00/"), func(n int) ([]byte, []byte) {
				return fmt.Appendf(nil, "shard/00/key/%012d/%03d", n/100, n%100), value
			})
		})
	}
}

// BenchmarkLoadScope measures a coordinator shard's load by a new Store (a
// node taking the shard over: Acquire, then Scan of the scope) holding
// 1,000,000 offset-sized records (keys of 38 bytes under a 3-byte shard
// prefix, values of 30), written by the shard's writer pipelining
// 100-record batches 16 deep: replayed from the scope's log (group commit
// makes the 10,000 batches about 1,300 entries; background compaction off),
// or from its snapshot after Compact.
func BenchmarkLoadScope(b *testing.B) {
	for _, compact := range []bool{false, true} {
		name := "from=log"
		if compact {
			name = "from=snapshot"
		}
		b.Run(name, func(b *testing.B) {
			scope, value := []byte("g\x00\x05"), bytes.Repeat([]byte("o"), 30)
			benchLoadScope(b, compact, 1_000_000, scope, func(n int) ([]byte, []byte) {
				return fmt.Appendf(bytes.Clone(scope), "offsets/group-%05d/topic-%03d/%05d", n/1000, n/100%10, n%100), value
			})
		})
	}
}

// pipeline writes n batches through h, batch i filled by fill, keeping 16
// in flight as the coordinator runtime does, and waits for them all.
func pipeline(b *testing.B, h store.Handle, n int, fill func(i int, bt *store.Batch)) {
	var waits []func() error
	for i := range n {
		var bt store.Batch
		fill(i, &bt)
		wait, err := h.ApplyAsync(&bt)
		if err != nil {
			b.Fatal(err)
		}
		waits = append(waits, wait)
		if len(waits) == 16 {
			if err := waits[0](); err != nil {
				b.Fatal(err)
			}
			waits = waits[1:]
		}
	}
	for _, w := range waits {
		if err := w(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchLoadScope writes records records record(n) under scope through a
// handle, pipelining 100-record batches 16 deep, compacts if asked, then
// times a new Store's Acquire and Scan of the scope.
func benchLoadScope(b *testing.B, compact bool, records int, scope []byte, record func(n int) (key, value []byte)) {
	const perBatch = 100
	ep := startEtcd(b)
	cli := newClient(b, ep)
	prefix := freshPrefix()
	opts := etcd.Options{Client: cli, Prefix: prefix, CompactEntries: -1, CompactBytes: -1}
	s := mustOpen(b, opts)
	h, err := s.Acquire(scope)
	if err != nil {
		b.Fatal(err)
	}
	pipeline(b, h, records/perBatch, func(i int, bt *store.Batch) {
		for r := range perBatch {
			bt.Put(record(i*perBatch + r))
		}
	})
	if compact {
		if err := s.Compact(); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	root := scopeRoot(prefix, string(scope))
	resp, err := cli.Get(context.Background(), root+"/log/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		r := mustOpen(b, opts)
		if _, err := r.Acquire(scope); err != nil {
			b.Fatal(err)
		}
		n := 0
		if err := r.Scan(scope, func(k, v []byte) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		r.Close()
		if n != records {
			b.Fatalf("loaded %d records, want %d", n, records)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(records*b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(resp.Count), "log-entries")
}

// BenchmarkClusterHandleApply is BenchmarkHandleApply as cluster mode
// runs it: three etcd member processes, and three Stores (nodes) on
// clients of their own, each owning a third of 16 shard handles (writer w
// writes shard w mod 16 through the Store that owns it). It reports the
// latency of Apply too.
func BenchmarkClusterHandleApply(b *testing.B) {
	c := etcdtest.StartProcs(b, 3)
	for _, writers := range []int{16, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			prefix := freshPrefix()
			var hs []store.Handle
			var stores []*etcd.Store
			for range 3 {
				s := mustOpen(b, etcd.Options{Client: etcdtest.NewClient(b, c.Endpoints()), Prefix: prefix})
				defer s.Close()
				stores = append(stores, s)
			}
			for i := range 16 {
				h, err := stores[i%3].Acquire(fmt.Appendf(nil, "shard/%02d/", i))
				if err != nil {
					b.Fatal(err)
				}
				hs = append(hs, h)
			}
			var mu sync.Mutex
			var lat []time.Duration
			benchWriters(b, writers, func(w int, bt *store.Batch) error {
				start := time.Now()
				err := hs[w%16].Apply(bt)
				d := time.Since(start)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
				return err
			})
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
