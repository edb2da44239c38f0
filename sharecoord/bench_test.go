package sharecoord_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/sharecoord"
	"github.com/cohort-dev/cohort/store/memstore"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cohort-dev/cohort/internal/memtest"
)

// BenchmarkAck measures acknowledgements through the host on Pebble (the
// node's store, fsynced) with 16 shards, as a node has: consumers each
// fetch up to 100 records (Next, Acquire) and accept them in one
// acknowledgement, answered once durable. b.N is records acknowledged;
// acks/s are records, ackreqs/s acknowledgement requests.
//
//	go test ./sharecoord -run '^$' -bench Ack -benchtime 200000x
func BenchmarkAck(b *testing.B) {
	for _, c := range []struct{ parts, consumers int }{{1, 1}, {1, 16}, {16, 16}, {16, 64}} {
		b.Run(fmt.Sprintf("partitions=%d/consumers=%d", c.parts, c.consumers), func(b *testing.B) {
			benchAck(b, c.parts, c.consumers)
		})
	}
}

func benchAck(b *testing.B, parts, consumers int) {
	st, err := pebble.Open(filepath.Join(b.TempDir(), "store"), pebble.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	h, err := sharecoord.Start(sharecoord.Config{Store: st, Shards: 16})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	l := plog{end: 1 << 40, batch: 10}
	var acked, reqs atomic.Int64
	var failed atomic.Value
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range consumers {
		k := key("g", int32(c%parts))
		member := fmt.Sprint("m", c)
		wg.Go(func() {
			for acked.Load() < int64(b.N) {
				a, code := tryFetch(ctx, h, k, member, l, 100, sharestate.Limits{})
				if code != 0 {
					failed.Store(kerr.ErrorForCode(code))
					return
				}
				if len(a.Records) == 0 {
					continue
				}
				acks := make([]sharestate.Ack, len(a.Records))
				n := int64(0)
				for i, r := range a.Records {
					acks[i] = sharestate.Ack{First: r.First, Last: r.Last, Types: []sharestate.AckType{sharestate.AckAccept}}
					n += r.Last - r.First + 1
				}
				if r := h.Ack(ctx, sharestate.AckCmd{Key: k, Member: member, Acks: acks}); r.Code != 0 {
					failed.Store(kerr.ErrorForCode(r.Code))
					return
				}
				acked.Add(n)
				reqs.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(acked.Load())/took.Seconds(), "acks/s")
	b.ReportMetric(float64(reqs.Load())/took.Seconds(), "ackreqs/s")
}

// BenchmarkInFlightMemory measures the heap a record in flight costs:
// 16 partitions of 10,000 acquired records each (MaxRecordLocks raised to
// that), as a consumer's fetches of 100 leave them (a lock per fetch),
// and fragmented (every other record acknowledged and the rest acquired
// one by one: a durable batch and a lock per record, the worst case).
// Acquisitions are not written, so the store holds nothing of them.
//
//	go test ./sharecoord -run '^$' -bench InFlightMemory -benchtime 1x
func BenchmarkInFlightMemory(b *testing.B) {
	const parts, inflight = 16, 10_000
	for _, shape := range []string{"fetches", "fragmented"} {
		b.Run(shape, func(b *testing.B) {
			var perRecord float64
			for range b.N {
				h, err := sharecoord.Start(sharecoord.Config{Store: memstore.New(memstore.Options{}), MaxRecordLocks: inflight,
					Machine: sharestate.Config{Limits: sharestate.Limits{MaxInFlight: inflight, LockDuration: time.Hour}}})
				if err != nil {
					b.Fatal(err)
				}
				before := memtest.HeapAlloc()
				records := 0
				for p := range int32(parts) {
					k := key("g", p)
					if shape == "fetches" {
						for range inflight / 100 {
							records += len100(fetch(b, h, k, "m", plog{end: 1 << 40, batch: 10}, 100, sharestate.Limits{}))
						}
						continue
					}
					// The records between the start and end offsets.
					records += fragment(b, h, k, inflight, sharestate.Limits{})
				}
				after := memtest.HeapAlloc()
				perRecord = float64(after-before) / float64(records)
				h.Close()
			}
			b.ReportMetric(perRecord, "B/record")
		})
	}
}

// len100 counts the records acquired.
func len100(a sharestate.Acquired) int {
	n := 0
	for _, r := range a.Records {
		n += int(r.Last - r.First + 1)
	}
	return n
}
