package groups_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/internal/memtest"
	"github.com/cohort-dev/cohort/record"
)

// heapAlloc is the live heap after a full collection.

// TestQuietClassicGroupBytes: the classic part of a commit-only group
// (a record without members, loaded as a restart does) costs little (a
// node may hold a million groups, most of them quiet). The bytes counted
// are what the group's record and Loaded add to a shard that already
// holds the group's 4 offsets: the classic part, its record, the id
// string (32 bytes) and the group's place in the shard's sorted list (8).
// Measured at 20,000 groups: 328 bytes a group with a 184-byte Group and
// its decoded record, 120 with the memberless record inline in an 80-byte
// Group, 88 with a 48-byte Group whose live fields are the record.
func TestQuietClassicGroupBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	const n = 20_000
	const limit = 100
	s := groups.New(testConfig())
	offs := make([]machine.Record, 0, 4*n)
	recs := make([]machine.Record, 0, n)
	for i := range n {
		gk := record.GroupKey{Group: fmt.Sprintf("quiet-%07d", i)}
		recs = append(recs, machine.Record{Key: gk.Key(), Value: record.ClassicGroup{ID: fmt.Sprintf("cgp_%026d", i), StateTimestamp: epoch.UnixMilli()}.Encode()})
		for p := range int32(4) {
			offs = append(offs, machine.Record{Key: record.OffsetKey{GroupKey: gk, Topic: "quiet", Partition: p}.Key(), Value: record.Offset{Offset: 1, LeaderEpoch: -1, CommitTimestamp: epoch.UnixMilli()}.Encode()})
		}
	}
	for _, r := range offs {
		if err := s.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	offs = nil
	before := memtest.HeapAlloc()
	for _, r := range recs {
		if err := s.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	s.Loaded(epoch)
	after := memtest.HeapAlloc()
	runtime.KeepAlive(s)
	runtime.KeepAlive(recs) // in both measures, as the records are not the group's
	if got := strings.Count(s.DurableState(), `classic type="" generation=0`); got != n {
		t.Fatalf("%d classic records loaded, want %d", got, n)
	}
	per := float64(int64(after)-int64(before)) / n
	t.Logf("%.0f bytes per commit-only group's classic part", per)
	if per > limit {
		t.Errorf("%.0f bytes per commit-only group's classic part, want at most %d", per, limit)
	}
}
