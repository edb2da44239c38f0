package admin

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/memtest"
)

// quietTracker builds a tracker of groups quiet groups, each with 4
// committed partitions of one topic, sampled readings times as the
// sampler does (one map reused for every group's reading).
func quietTracker(names []string, readings int) *LagTracker {
	base := time.Unix(1_700_000_000, 0)
	tr := NewLagTracker(LagTrackerConfig{})
	parts := map[PartitionRef]LagSample{}
	for r := range readings {
		tr.begin(base.Add(time.Duration(r) * 5 * time.Second))
		for i, name := range names {
			clear(parts)
			for p := range int32(4) {
				c := int64(1_000_000 + i*10 + int(p))
				parts[PartitionRef{Topic: "orders", Partition: p}] = LagSample{Committed: c, CommitAt: time.UnixMilli(1_699_999_000_000 + int64(i)), End: c + int64(i%7)}
			}
			tr.observe(base.Add(time.Duration(r)*5*time.Second), GroupSample{Tenant: "acme", Group: name, Partitions: parts})
		}
		tr.end()
	}
	return tr
}

// TestLagTrackerQuietGroupBytes: a quiet group of 4 partitions costs the
// tracker little memory (a node may hold a million groups, most quiet).
// The bytes counted are the tracker's own: its groups and histories, not
// the group names, which the reading owns. Measured at 20,000 groups: 575
// bytes a group with a slice of runs a partition and the groups' trends,
// 191 with each group's runs encoded in one slice of varints, 159 with
// each run against the one before it in the group, 153 with the group's
// last reading in its slice, the map's value (132 at 100,000 groups, as
// the map's load varies; 129 for the map alone at a million), 116 with
// the groups in a sorted slice, not a map.
func TestLagTrackerQuietGroupBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	const groups = 20_000
	// The names, built outside the measure: the tracker shares them.
	names := make([]string, groups)
	for i := range names {
		names[i] = fmt.Sprintf("group-%07d", i)
	}
	before := memtest.HeapAlloc()
	tr := quietTracker(names, 3)
	after := memtest.HeapAlloc()
	runtime.KeepAlive(tr)
	runtime.KeepAlive(names)
	per := float64(int64(after)-int64(before)) / groups
	t.Logf("%.0f bytes per quiet group of 4 partitions", per)
	if per > 140 {
		t.Errorf("%.0f bytes per quiet group of 4 partitions, want at most %d", per, 140)
	}
}

// TestListEntrySize: a list entry, which every group of the last sample
// has (a million on a node), stays 16 bytes: its status a byte, no
// history of its own (the tracker finds a quiet group's where the
// reading is).
func TestListEntrySize(t *testing.T) {
	if n := reflect.TypeFor[listEntry]().Size(); n > 16 {
		t.Errorf("listEntry is %d bytes, want at most 16", n)
	}
	for _, s := range []Status{StatusUnknown, StatusOK, StatusWarn, StatusStall, StatusStop, StatusErr} {
		if got := codeOf(s).status(); got != s {
			t.Errorf("status %q is %q through its code", s, got)
		}
	}
}
