package coordinator_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/memtest"
	"github.com/cohort-dev/cohort/record"
)

// TestInspectQuietGroupBytes: the reading Inspect keeps (and the lag
// sampler with it) costs little a quiet group, as a node may hold a
// million: each group's summary and committed offsets, the names being
// the shard's. Measured at 20,000 commit-only groups of 4 offsets of one
// topic: 329 bytes a group, 168 of them its Summary and 160 its slice of
// OffsetSummary (40 bytes an offset); 201 with groups.Offsets (176 its
// Summary, 24 its varints, its topic's list shared); 161 with a Summary
// of 136 bytes (its counts int32, its type and state a byte each). The
// bound fails a Summary grown back by 8 bytes.
func TestInspectQuietGroupBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	const groups = 20_000
	st := quietStoreOf(t, groups, func(i int, p int32) record.Offset {
		return record.Offset{Offset: 1_000_000 + int64(i*10) + int64(p), LeaderEpoch: -1, CommitTimestamp: 1_699_999_000_000 + int64(i)}
	})
	co, err := coordinator.Start(coordinator.Config{}, coordinator.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	before := memtest.HeapAlloc()
	reading, err := co.Inspect(context.Background())
	if err != nil || len(reading) != groups {
		t.Fatalf("%d groups read, %v", len(reading), err)
	}
	after := memtest.HeapAlloc()
	runtime.KeepAlive(reading)
	per := float64(int64(after)-int64(before)) / groups
	t.Logf("%.0f bytes per quiet group of 4 offsets", per)
	if per > 168 {
		t.Errorf("%.0f bytes per quiet group of 4 offsets, want at most %d", per, 168)
	}
}
