package sharecoord_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/sharecoord"
	"github.com/cohort-dev/cohort/store/memstore"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cohort-dev/cohort/internal/memtest"
)

// The memory test's shard: partitions it keeps, records each holds in
// flight. Small, because under the invariants build tag the runtime
// checks the whole shard after every event.
const (
	maxParts = 10
	maxLocks = 200
)

// fragment fills partition k (a log of one-record batches) up to max
// records or its in-flight limit and leaves it in its most expensive
// shape: every other record accepted, the others released and acquired
// again one at a time, each its own durable batch and its own lock. It
// returns the records the first fetch acquired.
func fragment(t testing.TB, h *sharecoord.Host, k sharestate.Key, max int, lim sharestate.Limits) int {
	t.Helper()
	l := plog{end: 1 << 40, batch: 1}
	a := fetch(t, h, k, "m", l, max, lim)
	n := 0
	for _, r := range a.Records {
		types := make([]sharestate.AckType, r.Last-r.First+1)
		for i := range types {
			types[i] = sharestate.AckAccept
			if (r.First+int64(i))%2 == 1 {
				types[i] = sharestate.AckRelease
			}
		}
		res := h.Ack(context.Background(), sharestate.AckCmd{Key: k, Member: "m", Acks: []sharestate.Ack{{First: r.First, Last: r.Last, Types: types}}})
		if res.Code != 0 {
			t.Fatalf("ack: %v", kerr.ErrorForCode(res.Code))
		}
		n += len(types)
	}
	// The released records, one by one: a lock each.
	for range n / 2 {
		if got := fetch(t, h, k, "m2", l, 1, lim); len(got.Records) != 1 {
			break
		}
	}
	return n
}

// TestMemoryBounded floods a shard with partitions and acquisitions and
// shows its memory bounded: each partition holds at most the in-flight
// limit (MaxRecordLocks caps what a group's config asks for), and once
// the shard holds MaxPartitions, a fetch of a new partition is answered
// GROUP_MAX_SIZE_REACHED and costs nothing; more acquisitions on full
// partitions and watches come and gone cost nothing either.
func TestMemoryBounded(t *testing.T) {
	h := startHost(t, sharecoord.Config{Store: memstore.New(memstore.Options{}), MaxRecordLocks: maxLocks,
		// Locks outlast the test: no expiry changes the partitions.
		Machine: sharestate.Config{MaxPartitions: maxParts, Limits: sharestate.Limits{LockDuration: time.Hour}}})
	// A group config asking for a billion records in flight.
	l := plog{end: 1 << 40, batch: 1}
	lim := sharestate.Limits{MaxInFlight: 1 << 30}
	ctx := context.Background()
	before := memtest.HeapAlloc()
	for p := range int32(maxParts) {
		if n := fragment(t, h, key("g", p), 2*maxLocks, lim); n != maxLocks {
			t.Fatalf("partition %d: %d records in flight, want the cap %d", p, n, maxLocks)
		}
	}
	full := memtest.HeapAlloc()

	// The flood: ten times as many partitions, of other groups too,
	// each refused; a hundred more fetches of every full partition;
	// ten thousand watches.
	for p := range int32(10 * maxParts) {
		k := key(fmt.Sprint("flood", p%7), p)
		if _, code := tryFetch(ctx, h, k, "m", l, 100, lim); code != kerr.GroupMaxSizeReached.Code {
			t.Fatalf("partition %d beyond the shard's %d: %v", p, maxParts, kerr.ErrorForCode(code))
		}
	}
	for range 100 {
		for p := range int32(maxParts) {
			fetch(t, h, key("g", p), "m3", l, 2*maxLocks, lim)
		}
	}
	for _, d := range h.Describe(ctx, sharestate.DescribeCmd{Group: "g"}) {
		if d.EndOffset-d.StartOffset > maxLocks {
			t.Fatalf("partition %d holds %d records in flight, above the cap %d", d.Key.Partition, d.EndOffset-d.StartOffset, maxLocks)
		}
	}
	for p := range 10_000 {
		h.Watch(key("g", int32(p%maxParts)), key("w", int32(p))).Stop()
	}
	after := memtest.HeapAlloc()
	grown := int64(after) - int64(full)
	perPart := (int64(full) - int64(before)) / maxParts
	t.Logf("%d partitions at their limit of %d records, fragmented: %d bytes each (%d per record); after the flood the heap grew %d bytes",
		maxParts, maxLocks, perPart, perPart/maxLocks, grown)
	if grown > max(int64(full-before)/10, 1<<20) {
		t.Fatalf("the heap grew %d bytes in the flood, from %d (the shard's partitions take %d)", grown, full, full-before)
	}
	if h.Watching() != 0 {
		t.Fatalf("%d watch entries left", h.Watching())
	}
}
