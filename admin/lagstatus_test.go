package admin

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"
)

// feed observes one partition of group g over steps samples, 5 s apart:
// at step i the committed offset is off(i), committed at commitAt(i)
// seconds, and the high watermark end(i). It returns the tracker and the
// time of the last sample.
func feed(t *testing.T, window, steps int, off, commitAt, end func(i int) int64) (*LagTracker, time.Time) {
	t.Helper()
	base := time.Unix(1_700_000_000, 0)
	tr := NewLagTracker(LagTrackerConfig{Window: window})
	var at time.Time
	for i := range steps {
		at = base.Add(time.Duration(i) * 5 * time.Second)
		tr.Observe(at, []GroupSample{{Group: "g", Partitions: map[PartitionRef]LagSample{
			{Topic: "t", Partition: 0}: {Committed: off(i), CommitAt: base.Add(time.Duration(commitAt(i)) * time.Second), End: end(i)},
		}}})
	}
	return tr, at
}

func TestLagStatus(t *testing.T) {
	constant := func(v int64) func(int) int64 { return func(int) int64 { return v } }
	step := func(start, by int64) func(int) int64 { return func(i int) int64 { return start + by*int64(i) } }
	commitEachSample := step(0, 5) // a commit at every sample
	cases := []struct {
		name              string
		steps             int
		off, commit, end  func(int) int64
		want              Status
		clears, notClears bool
	}{
		{"no lag", 10, step(100, 10), commitEachSample, step(100, 10), StatusOK, true, false},
		{"no lag, one sample", 1, constant(5), constant(0), constant(5), StatusOK, true, false},
		{"lag, window not full", 5, step(0, 10), commitEachSample, step(50, 10), StatusUnknown, false, true},
		{"keeping up with a steady lag", 10, step(0, 10), commitEachSample, step(50, 10), StatusOK, false, true},
		{"catching up", 10, step(0, 20), commitEachSample, step(500, 10), StatusOK, false, false},
		{"falling behind", 10, step(0, 5), commitEachSample, step(50, 10), StatusWarn, false, true},
		{"commits repeat one offset", 10, constant(40), commitEachSample, step(50, 1), StatusStall, false, true},
		{"commits stopped", 10, constant(40), constant(0), constant(50), StatusStop, false, true},
		{"offset went back", 10, func(i int) int64 {
			if i == 7 {
				return 10
			}
			return 30 + int64(i)
		}, commitEachSample, constant(100), StatusErr, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, last := feed(t, 10, c.steps, c.off, c.commit, c.end)
			g, ok := tr.Group("", "g", last)
			if !ok {
				t.Fatal("group not tracked")
			}
			p := g.Partitions[PartitionRef{Topic: "t", Partition: 0}]
			if p.Status != c.want || g.Status != c.want {
				t.Fatalf("partition status %q, group status %q, want %q", p.Status, g.Status, c.want)
			}
			if c.clears && (g.TimeToClear == nil || *g.TimeToClear != 0) {
				t.Fatalf("time to clear %v, want 0", g.TimeToClear)
			}
			if c.notClears && g.TimeToClear != nil && *g.TimeToClear != 0 {
				t.Fatalf("time to clear %v, want none", *g.TimeToClear)
			}
			if len(p.History) != c.steps || len(g.Trend) != c.steps {
				t.Fatalf("history %d, trend %d, want %d", len(p.History), len(g.Trend), c.steps)
			}
		})
	}
}

// TestTimeToClear: over a window of 45 s a group consumed 900 records
// (20/s) while 450 were produced (10/s); its lag of 1310 − 900 = 410
// clears at the net 10/s in 41 s.
func TestTimeToClear(t *testing.T) {
	tr, last := feed(t, 10, 10, func(i int) int64 { return int64(i) * 100 }, func(i int) int64 { return int64(i) * 5 }, func(i int) int64 { return 860 + int64(i)*50 })
	g, _ := tr.Group("", "g", last)
	if g.TimeToClear == nil || *g.TimeToClear != 41*time.Second {
		t.Fatalf("time to clear %v, want 41s", g.TimeToClear)
	}
}

func TestLagTrackerForgets(t *testing.T) {
	tr := NewLagTracker(LagTrackerConfig{Window: 3, History: 4})
	at := time.Unix(1_700_000_000, 0)
	two := map[PartitionRef]LagSample{{Topic: "t", Partition: 0}: {End: 1}, {Topic: "t", Partition: 1}: {End: 1}}
	for i := range 6 {
		tr.Observe(at.Add(time.Duration(i)*time.Second), []GroupSample{{Group: "a", Partitions: two}, {Group: "b", Partitions: two}})
	}
	g, _ := tr.Group("", "a", at)
	if len(g.Trend) != 4 || len(g.Partitions[PartitionRef{Topic: "t", Partition: 0}].History) != 4 {
		t.Fatalf("history not bounded at 4: trend %d", len(g.Trend))
	}
	tr.Observe(at, []GroupSample{{Group: "a", Partitions: map[PartitionRef]LagSample{{Topic: "t", Partition: 1}: {End: 1}}}})
	if _, ok := tr.Group("", "b", at); ok {
		t.Fatal("group b missing from the reading is still tracked")
	}
	g, _ = tr.Group("", "a", at)
	if _, ok := g.Partitions[PartitionRef{Topic: "t", Partition: 0}]; ok || len(g.Partitions) != 1 {
		t.Fatalf("partition missing from the reading still tracked: %v", g.Partitions)
	}
	if refs := tr.groupRefs(); len(refs) != 1 || refs[0].Group != "a" {
		t.Fatalf("refs %v", refs)
	}
}

// TestGroupStatus: a group takes its worst evaluated partition's status,
// and none while no partition is evaluated: it cannot be better than its
// partitions allow.
func TestGroupStatus(t *testing.T) {
	for _, c := range []struct {
		parts []Status
		want  Status
	}{
		{nil, StatusOK}, // no partitions, no lag
		{[]Status{StatusUnknown}, StatusUnknown},
		{[]Status{StatusUnknown, StatusUnknown}, StatusUnknown},
		{[]Status{StatusOK}, StatusOK},
		{[]Status{StatusUnknown, StatusOK}, StatusOK},
		{[]Status{StatusOK, StatusWarn, StatusUnknown}, StatusWarn},
		{[]Status{StatusErr, StatusStop, StatusStall}, StatusErr},
	} {
		if got := groupStatus(c.parts); got != c.want {
			t.Errorf("groupStatus(%q) = %q, want %q", c.parts, got, c.want)
		}
	}
}

// TestLagTrackerUnsampled: a group whose only partition has no sample
// (its high watermark not known here) has no status, not OK; with no
// partitions at all it is OK; an unsampled partition beside an evaluated
// one leaves the evaluated one's status.
func TestLagTrackerUnsampled(t *testing.T) {
	tr := NewLagTracker(LagTrackerConfig{Window: 3})
	at := time.Unix(1_700_000_000, 0)
	ok := map[PartitionRef]LagSample{{Topic: "t", Partition: 0}: {Committed: 5, End: 5}}
	tr.Observe(at, []GroupSample{
		{Group: "unsampled", Partitions: map[PartitionRef]LagSample{}, Unsampled: 1},
		{Group: "empty", Partitions: map[PartitionRef]LagSample{}},
		{Group: "mixed", Partitions: ok, Unsampled: 1},
	})
	for group, want := range map[string]Status{"unsampled": StatusUnknown, "empty": StatusOK, "mixed": StatusOK} {
		if g, _ := tr.Group("", group, at); g.Status != want {
			t.Errorf("group %s: status %q, want %q", group, g.Status, want)
		}
	}
	// Sampled at last: the next reading's count replaces the last's.
	tr.Observe(at.Add(time.Second), []GroupSample{{Group: "unsampled", Partitions: ok}})
	if g, _ := tr.Group("", "unsampled", at.Add(time.Second)); g.Status != StatusOK {
		t.Errorf("group sampled at last: status %q, want OK", g.Status)
	}
}

// TestLagTrackerRuns: the tracker keeps runs of equal samples, and its
// evaluations equal those of a plain list of the last History samples
// (naive, here), sample for sample, over random readings with many
// repeats, partitions appearing and going, at a steady interval.
func TestLagTrackerRuns(t *testing.T) {
	const window, history = 4, 12
	rng := rand.New(rand.NewPCG(1, 2))
	tr := NewLagTracker(LagTrackerConfig{Window: window, History: history})
	naive := map[PartitionRef][]LagSample{}
	var trend []LagPoint
	base := time.Unix(1_700_000_000, 0)
	committed, ends := map[int32]int64{}, map[int32]int64{}
	commitAt := map[int32]time.Time{}
	for i := range 400 {
		at := base.Add(time.Duration(i) * 5 * time.Second)
		parts := map[PartitionRef]LagSample{}
		for p := range int32(3) {
			if rng.IntN(20) == 0 && i > 0 {
				continue // gone from this reading: forgotten
			}
			switch rng.IntN(6) {
			case 0:
				committed[p] += int64(rng.IntN(5))
				commitAt[p] = at
			case 1:
				ends[p] += int64(rng.IntN(7))
			case 2:
				committed[p] -= int64(rng.IntN(2)) // a rewind now and then
				commitAt[p] = at
			}
			parts[PartitionRef{Topic: "t", Partition: p}] = LagSample{Committed: committed[p], CommitAt: commitAt[p], End: max(ends[p], committed[p])}
		}
		tr.Observe(at, []GroupSample{{Group: "g", Partitions: parts}})
		var total int64
		for ref := range naive {
			if _, ok := parts[ref]; !ok {
				delete(naive, ref)
			}
		}
		for ref, s := range parts {
			s.At = at
			naive[ref] = append(naive[ref], s)
			if len(naive[ref]) > history {
				naive[ref] = naive[ref][1:]
			}
			total += s.Lag()
		}
		trend = append(trend, LagPoint{At: at, Lag: total})
		if len(trend) > history {
			trend = trend[1:]
		}

		now := at.Add(time.Second)
		got, _ := tr.Group("", "g", now)
		if len(got.Trend) != len(trend) {
			t.Fatalf("step %d: trend of %d points, want %d", i, len(got.Trend), len(trend))
		}
		for k := range trend {
			if !got.Trend[k].At.Equal(trend[k].At) || got.Trend[k].Lag != trend[k].Lag {
				t.Fatalf("step %d: trend[%d] %+v, want %+v", i, k, got.Trend[k], trend[k])
			}
		}
		var statuses []Status
		for ref, ss := range naive {
			w := ss[max(0, len(ss)-window):]
			want := evaluate(w, now, window)
			pl, ok := got.Partitions[ref]
			if !ok || pl.Status != want || len(pl.History) != len(ss) {
				t.Fatalf("step %d %v: %+v, want status %q and %d points", i, ref, pl, want, len(ss))
			}
			for k, s := range ss {
				if !pl.History[k].At.Equal(s.At) || pl.History[k].Lag != s.Lag() {
					t.Fatalf("step %d %v: history[%d] %+v, want %v %d", i, ref, k, pl.History[k], s.At, s.Lag())
				}
			}
			statuses = append(statuses, want)
		}
		if len(got.Partitions) != len(naive) {
			t.Fatalf("step %d: %d partitions, want %d", i, len(got.Partitions), len(naive))
		}
		if st, _ := tr.GroupStatus("", "g", now); st != groupStatus(statuses) || got.Status != st {
			t.Fatalf("step %d: status %q (GroupStatus %q), want %q", i, got.Status, st, groupStatus(statuses))
		}
	}
}

// quietPartitions is the sample of a quiet group's 4 partitions: the
// same at every reading, committed at base.
func quietPartitions(base time.Time) map[PartitionRef]LagSample {
	parts := map[PartitionRef]LagSample{}
	for p := range int32(4) {
		parts[PartitionRef{Topic: "t", Partition: p}] = LagSample{Committed: 5, CommitAt: base, End: 9}
	}
	return parts
}

// groupRefs returns the tracked groups, sorted.
func (t *LagTracker) groupRefs() []groupRef {
	out := make([]groupRef, 0, len(t.groups))
	for _, x := range t.groups {
		out = append(out, x.ref)
	}
	return out
}

// groupMap is the tracked groups' histories, by group, each with the
// number of its last reading as lastOf has it (a partial reading leaves
// the number in a group it does not read as it was).
func (t *LagTracker) groupMap() map[groupRef]groupLag {
	out := make(map[groupRef]groupLag, len(t.groups))
	for _, x := range t.groups {
		g := bytes.Clone(x.hist)
		binary.LittleEndian.PutUint32(g, t.lastOf(x.hist))
		out[x.ref] = g
	}
	return out
}

// TestLagTrackerQuietCostsOneRun: a group whose readings repeat keeps one
// run a partition and one for its trend, however many readings.
func TestLagTrackerQuietCostsOneRun(t *testing.T) {
	tr := NewLagTracker(LagTrackerConfig{})
	base := time.Unix(1_700_000_000, 0)
	parts := quietPartitions(base)
	for i := range 1000 {
		tr.Observe(base.Add(time.Duration(i)*5*time.Second), []GroupSample{{Group: "g", Partitions: parts}})
	}
	hist, trend := tr.runsOf(tr.groupMap()[groupRef{"", "g"}])
	if len(trend) != 1 || trend[0].n != 60 {
		t.Errorf("trend runs %+v, want one of the last 60 samples", trend)
	}
	if len(hist) != 4 {
		t.Errorf("%d partitions, want 4", len(hist))
	}
	for ref, runs := range hist {
		if len(runs) != 1 || runs[0].n != 60 {
			t.Errorf("%v: runs %+v, want one of 60 samples", ref, runs)
		}
	}
	if l, _ := tr.Group("", "g", base.Add(5000*time.Second)); l.Status != StatusStop || len(l.Trend) != 60 {
		t.Errorf("status %q, %d trend points; want STOP and 60", l.Status, len(l.Trend))
	}
}

// TestGroupStatusAllocates: the sampler evaluates every group at every
// reading; a quiet group's status costs no more than its list of
// statuses.
func TestGroupStatusAllocates(t *testing.T) {
	tr := NewLagTracker(LagTrackerConfig{})
	base := time.Unix(1_700_000_000, 0)
	parts := quietPartitions(base)
	for i := range 20 {
		tr.Observe(base.Add(time.Duration(i)*5*time.Second), []GroupSample{{Group: "g", Partitions: parts}})
	}
	now := base.Add(100 * time.Second)
	if n := testing.AllocsPerRun(100, func() { tr.GroupStatus("", "g", now) }); n > 1 {
		t.Errorf("GroupStatus allocates %v times, want at most 1 (its statuses)", n)
	}
}

// countedRun is a run with the number of its samples in the history.
type countedRun struct {
	lagRun
	n int
}

// runsOf decodes a group's history: its partitions' runs, and its
// trend's, each with the number of its samples in the history.
func (t *LagTracker) runsOf(g groupLag) (map[PartitionRef][]countedRun, []countedRun) {
	lo := since(t.lastOf(g), t.cfg.History)
	r, _ := g.reader()
	read := func(n int) []countedRun {
		var out []countedRun
		for range n {
			x := r.run()
			if k := len(out) - 1; k >= 0 {
				out[k].n = int(x.start - max(out[k].start, lo))
			}
			out = append(out, countedRun{lagRun: x})
		}
		if k := len(out) - 1; k >= 0 {
			out[k].n = int(t.lastOf(g) - max(out[k].start, lo) + 1)
		}
		return out
	}
	parts := map[PartitionRef][]countedRun{}
	for range r.uvarint() {
		topic, partition, n := r.part()
		parts[PartitionRef{Topic: t.topics[topic], Partition: partition}] = read(n)
	}
	return parts, read(r.trend())
}
