package admin

import (
	"testing"
	"time"
)

// TestLagTrackerHistoryBound: the histories stay within MaxBytes (give
// or take one reading's growth) when every group changes at every
// reading, by keeping fewer readings of history, never fewer than a
// window, so that statuses are still evaluated; once the groups go
// quiet and their histories shrink, the tracker keeps a full history
// again. Without a bound the same readings take several times the
// bytes.
func TestLagTrackerHistoryBound(t *testing.T) {
	const groups, nParts = 500, 4
	base := time.Unix(1_700_000_000, 0)
	names := make([]string, groups)
	for i := range names {
		names[i] = string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
	}
	// reading observes every group: busy ones commit and grow at every
	// reading, quiet ones repeat their last sample.
	reading := func(tr *LagTracker, r int, busy bool) {
		at := base.Add(time.Duration(r) * 5 * time.Second)
		tr.begin(at)
		parts := map[PartitionRef]LagSample{}
		for i, name := range names {
			clear(parts)
			n := int64(r)
			if !busy {
				n = 0
			}
			for p := range int32(nParts) {
				c := 1000 + n*7 + int64(i)
				parts[PartitionRef{Topic: "orders", Partition: p}] = LagSample{Committed: c, CommitAt: base.Add(time.Duration(n) * 5 * time.Second), End: c + 3 + n%5}
			}
			tr.observe(at, GroupSample{Tenant: "acme", Group: name, Partitions: parts})
		}
		tr.end()
	}
	unbounded := NewLagTracker(LagTrackerConfig{MaxBytes: -1})
	for r := range 80 {
		reading(unbounded, r, true)
	}
	full, _ := unbounded.HistoryBytes()

	// A third of what they take unbounded: more than a window's worth.
	max := full / 3
	tr := NewLagTracker(LagTrackerConfig{MaxBytes: max})
	var slack int64
	for r := range 80 {
		before, _ := tr.HistoryBytes()
		reading(tr, r, true)
		b, keep := tr.HistoryBytes()
		slack = max64(slack, b-before)
		if keep < tr.cfg.Window || keep > tr.cfg.History {
			t.Fatalf("reading %d: keeps %d readings of history", r, keep)
		}
		if r >= 40 && b > max+2*slack {
			t.Fatalf("reading %d: %d bytes of history, bound %d (a reading grows them by up to %d)", r, b, max, slack)
		}
	}
	if _, keep := tr.HistoryBytes(); keep >= tr.cfg.History {
		t.Errorf("busy: keeps %d readings, want fewer than %d", keep, tr.cfg.History)
	}
	now := base.Add(80 * 5 * time.Second)
	for _, name := range names[:20] {
		if st, ok := tr.GroupStatus("acme", name, now); !ok || st == StatusUnknown {
			t.Errorf("%s: status %q (%v) with a bounded history", name, st, ok)
		}
		if g, ok := tr.Group("acme", name, now); !ok || len(g.Trend) < tr.cfg.Window {
			t.Errorf("%s: %d trend points, want at least a window", name, len(g.Trend))
		}
	}
	// Quiet: the runs age out, the histories shrink, and the full
	// history comes back.
	for r := 80; r < 300; r++ {
		reading(tr, r, false)
	}
	if b, keep := tr.HistoryBytes(); keep != tr.cfg.History || b > max/2 {
		t.Errorf("quiet: %d bytes, %d readings of history; want under %d and %d", b, keep, max/2, tr.cfg.History)
	}
	t.Logf("unbounded %d bytes; bounded %d at most a reading's growth %d", full, max, slack)
}

func max64(a, b int64) int64 { return max(a, b) }

// TestLagTrackerHistoryBytesCounted: the bytes the tracker counts are
// those of the histories it holds, however they grew and shrank.
func TestLagTrackerHistoryBytesCounted(t *testing.T) {
	tr := quietTracker([]string{"a", "b", "c"}, 3)
	var sum int64
	for _, g := range tr.groupMap() {
		sum += int64(cap(g))
	}
	if b, _ := tr.HistoryBytes(); b != sum || b == 0 {
		t.Errorf("counted %d bytes, the histories hold %d", b, sum)
	}
	tr.Observe(time.Unix(1_800_000_000, 0), []GroupSample{{Tenant: "acme", Group: "a"}})
	sum = 0
	for _, g := range tr.groupMap() {
		sum += int64(cap(g))
	}
	if b, _ := tr.HistoryBytes(); b != sum || len(tr.groups) != 1 {
		t.Errorf("after a reading of one group: counted %d bytes, the histories hold %d (%d groups)", b, sum, len(tr.groups))
	}
}
