package coordinator_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quietStore writes groups commit-only groups (a group record and 4
// offsets each) of a 16-shard coordinator into a Pebble store under dir,
// and opens it again, as a restart finds it.
func quietStore(b testing.TB, groups int) store.Store {
	return quietStoreOf(b, groups, func(int, int32) record.Offset {
		return record.Offset{Offset: 1, LeaderEpoch: -1, CommitTimestamp: 1_700_000_000_000}
	})
}

// quietStoreOf is quietStore with group i's offset of partition p.
func quietStoreOf(b testing.TB, groups int, offset func(i int, p int32) record.Offset) store.Store {
	const parts = 4
	dir := filepath.Join(b.TempDir(), "store")
	st, err := pebble.Open(dir, pebble.Options{})
	if err != nil {
		b.Fatal(err)
	}
	co, err := coordinator.Start(coordinator.Config{}, coordinator.Options{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	co.Close()
	batch := &store.Batch{}
	for i := range groups {
		name := fmt.Sprintf("quiet-%07d", i)
		gk := record.GroupKey{Shard: uint16(co.ShardFor("", name)), Group: name}
		batch.Put(gk.Key(), record.ClassicGroup{ID: fmt.Sprintf("cgp_%026d", i), Generation: 0, StateTimestamp: 1_700_000_000_000}.Encode())
		for p := range int32(parts) {
			batch.Put(record.OffsetKey{GroupKey: gk, Topic: "quiet", Partition: p}.Key(), offset(i, p).Encode())
		}
		if batch.Len() >= 50000 {
			if err := st.Apply(batch); err != nil {
				b.Fatal(err)
			}
			batch = &store.Batch{}
		}
	}
	if err := st.Apply(batch); err != nil {
		b.Fatal(err)
	}
	// Opened again, as a restart finds it: the journal folded into
	// Pebble.
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	if st, err = pebble.Open(dir, pebble.Options{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkLoadQuietGroups: loading a node's 16 shards of 100,000
// commit-only groups from Pebble, as a restart does; -cpuprofile shows
// where a load's time goes.
func BenchmarkLoadQuietGroups(b *testing.B) {
	const groups = 100000
	st := quietStore(b, groups)
	for b.Loop() {
		co, err := coordinator.Start(coordinator.Config{}, coordinator.Options{Store: st})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		co.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/groups, "ns/group")
}

// BenchmarkReconcileQuiet: a start's reconciliation of 100,000 quiet
// groups' offsets with the broker's topics (node.Start, after the load),
// which finds nothing to delete.
func BenchmarkReconcileQuiet(b *testing.B) {
	const groups = 100000
	co := quietCoordinator(b, groups)
	live := map[string]map[string][16]byte{"": {"quiet": {}}}
	for b.Loop() {
		co.ReconcileTopics(live)
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(7) // no topics: all of them
	req.Group = "quiet-0000001"
	if resp := co.Handle(context.Background(), coordinator.Request{Msg: req})().(*kmsg.OffsetFetchResponse); len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 4 {
		b.Fatalf("the offsets went: %+v", resp.Topics)
	}
}

// quietCoordinator is a coordinator serving quietStore's groups.
func quietCoordinator(b *testing.B, groups int) *coordinator.Coordinator {
	co, err := coordinator.Start(coordinator.Config{}, coordinator.Options{Store: quietStore(b, groups)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(co.Close)
	return co
}

// BenchmarkListGroupsQuiet: ListGroups of 100,000 quiet groups, answered
// and encoded as the wire server does.
func BenchmarkListGroupsQuiet(b *testing.B) {
	const groups = 100000
	co := quietCoordinator(b, groups)
	var buf []byte
	for b.Loop() {
		req := kmsg.NewPtrListGroupsRequest()
		req.SetVersion(5)
		resp := co.Handle(context.Background(), coordinator.Request{Msg: req})().(*kmsg.ListGroupsResponse)
		if len(resp.Groups) != groups {
			b.Fatalf("%d groups listed", len(resp.Groups))
		}
		buf = resp.AppendTo(buf[:0])
	}
	b.ReportMetric(float64(len(buf))/groups, "B/group")
}

// BenchmarkInspectQuiet: the lag sampler's reading of 100,000 quiet
// groups: in full (the first reading, or after a shard moved), and
// again with nothing changed.
func BenchmarkInspectQuiet(b *testing.B) {
	const groups = 100000
	co := quietCoordinator(b, groups)
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			co.ForgetInspected()
			sums, err := co.Inspect(context.Background())
			if err != nil || len(sums) != groups {
				b.Fatalf("%d groups, %v", len(sums), err)
			}
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		for b.Loop() {
			sums, err := co.Inspect(context.Background())
			if err != nil || len(sums) != groups {
				b.Fatalf("%d groups, %v", len(sums), err)
			}
		}
	})
	// A hundred of the groups commit between readings, as an estate's
	// few busy groups do: the reading is copied anew around them
	// (hundred-changed), or they are written into it in place (the
	// sampler's reading, hundred-changed-in-place).
	for _, inPlace := range []bool{false, true} {
		name := "hundred-changed"
		if inPlace {
			name += "-in-place"
		}
		b.Run(name, func(b *testing.B) { inspectChanged(b, co, groups, inPlace) })
	}
}

// inspectChanged reads co's groups after a hundred of them committed.
func inspectChanged(b *testing.B, co *coordinator.Coordinator, n int, inPlace bool) {
	var mu sync.Mutex
	next := int64(2)
	for b.Loop() {
		b.StopTimer()
		for i := range 100 {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.SetVersion(8)
			req.Group, req.Generation = fmt.Sprintf("quiet-%07d", i*(n/100)), -1
			req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "quiet", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: next, LeaderEpoch: -1}}}}
			resp := co.Handle(context.Background(), coordinator.Request{Msg: req})().(*kmsg.OffsetCommitResponse)
			if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
				b.Fatalf("commit: error %d", code)
			}
		}
		next++
		b.StartTimer()
		var r groups.Reading
		var err error
		if inPlace {
			r, err = co.InspectInPlace(context.Background(), &mu)
		} else {
			r.Groups, err = co.Inspect(context.Background())
		}
		if err != nil || len(r.Groups) != n {
			b.Fatalf("%d groups, %v", len(r.Groups), err)
		}
	}
}
