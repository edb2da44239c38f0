package admin

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestEvaluateOfIsGroups: the status and time to clear a scrape reports
// (evaluateOf) are those of a group's detail (Group), over random
// histories: groups that consume, stall, stop, rewind and grow, windows
// not yet full and full, and partitions coming and going.
func TestEvaluateOfIsGroups(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	tr := NewLagTracker(LagTrackerConfig{Window: 4, History: 9})
	base := time.Unix(1_700_000_000, 0)
	type part struct{ committed, end int64 }
	state := map[string]map[int32]*part{}
	compared := 0
	for r := range 60 {
		at := base.Add(time.Duration(r) * 5 * time.Second)
		var gss []GroupSample
		for g := range 12 {
			name := fmt.Sprintf("g%02d", g)
			if state[name] == nil {
				state[name] = map[int32]*part{}
			}
			gs := GroupSample{Group: name, Partitions: map[PartitionRef]LagSample{}, Unsampled: rng.IntN(2)}
			for p := range int32(1 + rng.IntN(4)) {
				st := state[name][p]
				if st == nil {
					st = &part{committed: 100, end: 100}
					state[name][p] = st
				}
				switch rng.IntN(5) {
				case 0: // consumes
					st.committed = min(st.end, st.committed+int64(rng.IntN(20)))
				case 1: // rewinds
					st.committed -= int64(rng.IntN(10))
				}
				st.end += int64(rng.IntN(15))
				commitAt := at.Add(-time.Duration(rng.IntN(20)) * time.Second)
				gs.Partitions[PartitionRef{Topic: "t", Partition: p}] = LagSample{Committed: st.committed, CommitAt: commitAt, End: st.end}
			}
			gss = append(gss, gs)
		}
		tr.Observe(at, gss)
		now := at.Add(time.Duration(rng.IntN(30)) * time.Second)
		for _, gs := range gss {
			l, ok := tr.Group(gs.Tenant, gs.Group, now)
			if !ok {
				t.Fatalf("reading %d: %s not tracked", r, gs.Group)
			}
			st, clear := tr.evaluateOf(tr.history(gs.Tenant, gs.Group), now)
			if st != l.Status || (clear == nil) != (l.TimeToClear == nil) || clear != nil && *clear != *l.TimeToClear {
				t.Fatalf("reading %d, %s: evaluateOf %q %v, Group %q %v", r, gs.Group, st, clear, l.Status, l.TimeToClear)
			}
			compared++
		}
	}
	t.Logf("%d evaluations compared", compared)
}
