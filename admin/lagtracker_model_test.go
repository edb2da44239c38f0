package admin

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestLagTrackerModel: over random readings of several groups (groups
// and partitions of several topics coming and going, readings at
// irregular times, commit times in ms and not, offsets of any size,
// evaluations in the middle of a reading), every evaluation equals one
// of a plain list of the last History samples of each partition.
func TestLagTrackerModel(t *testing.T) {
	for _, cfg := range []LagTrackerConfig{{Window: 3, History: 5}, {Window: 4, History: 12}, {Window: 20, History: 30}, {}} {
		t.Run(fmt.Sprintf("%d-%d", cfg.Window, cfg.History), func(t *testing.T) {
			testLagTrackerModel(t, cfg)
		})
	}
}

type modelGroup struct {
	parts     map[PartitionRef][]LagSample
	trend     []LagPoint
	unsampled int
}

func testLagTrackerModel(t *testing.T, cfg LagTrackerConfig) {
	rng := rand.New(rand.NewPCG(3, 4))
	tr := NewLagTracker(cfg)
	window, history := tr.cfg.Window, tr.cfg.History
	model := map[string]*modelGroup{}
	type state struct {
		committed, end int64
		commitAt       time.Time
	}
	states := map[string]map[PartitionRef]*state{}
	at := time.Unix(1_700_000_000, 0)
	check := func(step int, name string, m *modelGroup, now time.Time) {
		t.Helper()
		got, ok := tr.Group("", name, now)
		if !ok {
			t.Fatalf("step %d %s: not tracked", step, name)
		}
		if len(got.Trend) != len(m.trend) {
			t.Fatalf("step %d %s: trend of %d points, want %d", step, name, len(got.Trend), len(m.trend))
		}
		for k := range m.trend {
			if !got.Trend[k].At.Equal(m.trend[k].At) || got.Trend[k].Lag != m.trend[k].Lag {
				t.Fatalf("step %d %s: trend[%d] %+v, want %+v", step, name, k, got.Trend[k], m.trend[k])
			}
		}
		statuses := make([]Status, m.unsampled)
		for ref, ss := range m.parts {
			w := ss[max(0, len(ss)-window):]
			want := evaluate(w, now, window)
			pl, ok := got.Partitions[ref]
			if !ok || pl.Status != want || len(pl.History) != len(ss) {
				t.Fatalf("step %d %s %v: %+v, want status %q and %d points", step, name, ref, pl, want, len(ss))
			}
			first, last := w[0], w[len(w)-1]
			wantClear := timeToClear(last.Lag(), last.Committed-first.Committed, last.End-first.End, last.At.Sub(first.At))
			if (wantClear == nil) != (pl.TimeToClear == nil) || wantClear != nil && *wantClear != *pl.TimeToClear {
				t.Fatalf("step %d %s %v: time to clear %v, want %v", step, name, ref, pl.TimeToClear, wantClear)
			}
			for k, s := range ss {
				if !pl.History[k].At.Equal(s.At) || pl.History[k].Lag != s.Lag() {
					t.Fatalf("step %d %s %v: history[%d] %+v, want %v %d", step, name, ref, k, pl.History[k], s.At, s.Lag())
				}
			}
			statuses = append(statuses, want)
		}
		if len(got.Partitions) != len(m.parts) {
			t.Fatalf("step %d %s: %d partitions, want %d", step, name, len(got.Partitions), len(m.parts))
		}
		if st, _ := tr.GroupStatus("", name, now); st != groupStatus(statuses) || got.Status != st {
			t.Fatalf("step %d %s: status %q (GroupStatus %q), want %q", step, name, got.Status, st, groupStatus(statuses))
		}
	}
	topicNames := []string{"a", "b", "orders", "ab"}
	for step := range 600 {
		at = at.Add(time.Duration(1+rng.IntN(10_000))*time.Millisecond + time.Duration(rng.IntN(2)*rng.IntN(1e6)))
		var reading []GroupSample
		for gi := range 6 {
			name := fmt.Sprintf("g%d", gi)
			if rng.IntN(25) == 0 {
				continue // gone from this reading: forgotten
			}
			if states[name] == nil || model[name] == nil {
				states[name] = map[PartitionRef]*state{}
			}
			parts := map[PartitionRef]LagSample{}
			for _, topic := range topicNames[:1+gi%len(topicNames)] {
				for p := range int32(1 + gi%3) {
					ref := PartitionRef{Topic: topic, Partition: p * 1000}
					if rng.IntN(15) == 0 {
						continue // gone from this reading: forgotten
					}
					s := states[name][ref]
					if s == nil {
						s = &state{committed: rng.Int64N(1 << 40), commitAt: at.Add(-time.Hour)}
						s.end = s.committed
						if rng.IntN(4) == 0 {
							s.committed = -1 << 50 // any value is kept as it is
						}
						states[name][ref] = s
					}
					switch rng.IntN(8) {
					case 0:
						s.committed += int64(rng.IntN(5))
						s.commitAt = at
					case 1:
						s.end += int64(rng.IntN(7))
					case 2:
						s.committed -= int64(rng.IntN(2)) // a rewind now and then
						s.commitAt = at.Truncate(time.Millisecond)
					case 3:
						s.end += 1 << 35
					}
					parts[ref] = LagSample{Committed: s.committed, CommitAt: s.commitAt, End: max(s.end, s.committed)}
				}
			}
			reading = append(reading, GroupSample{Group: name, Partitions: parts, Unsampled: rng.IntN(2)})
		}
		tr.begin(at)
		for i, gs := range reading {
			if rng.IntN(4) == 0 {
				// In the middle of a reading, a group not reached yet
				// evaluates as at the last.
				for _, later := range reading[i:] {
					if m := model[later.Group]; m != nil {
						check(step, later.Group, m, at)
					}
				}
			}
			tr.observe(at, gs)
			m := model[gs.Group]
			if m == nil {
				m = &modelGroup{parts: map[PartitionRef][]LagSample{}}
				model[gs.Group] = m
			}
			for ref := range m.parts {
				if _, ok := gs.Partitions[ref]; !ok {
					delete(m.parts, ref)
					delete(states[gs.Group], ref)
				}
			}
			m.unsampled = gs.Unsampled
			var total int64
			for ref, s := range gs.Partitions {
				s.At = at
				m.parts[ref] = append(m.parts[ref], s)
				if len(m.parts[ref]) > history {
					m.parts[ref] = m.parts[ref][1:]
				}
				total += s.Lag()
			}
			m.trend = append(m.trend, LagPoint{At: at, Lag: total})
			if len(m.trend) > history {
				m.trend = m.trend[1:]
			}
		}
		tr.end()
		for name := range model {
			found := false
			for _, gs := range reading {
				found = found || gs.Group == name
			}
			if !found {
				delete(model, name)
				delete(states, name)
			}
		}
		if len(tr.groups) != len(model) {
			t.Fatalf("step %d: %d groups tracked, want %d", step, len(tr.groups), len(model))
		}
		now := at.Add(time.Duration(rng.IntN(60)) * time.Second)
		for name, m := range model {
			check(step, name, m, now)
		}
	}
}

// TestLagTrackerTwiceInAReading: a group twice in one reading has the
// later sample of it (one sample a reading), and a run it ended goes on.
func TestLagTrackerTwiceInAReading(t *testing.T) {
	tr := NewLagTracker(LagTrackerConfig{Window: 3})
	at := time.Unix(1_700_000_000, 0)
	ref := PartitionRef{Topic: "t"}
	sample := func(end int64) GroupSample {
		return GroupSample{Group: "g", Partitions: map[PartitionRef]LagSample{ref: {Committed: 1, CommitAt: at, End: end}}}
	}
	tr.Observe(at, []GroupSample{sample(5)})
	tr.Observe(at.Add(time.Second), []GroupSample{sample(6), sample(5)})
	tr.Observe(at.Add(2*time.Second), []GroupSample{sample(5), sample(7)})
	g, _ := tr.Group("", "g", at)
	h := g.Partitions[ref].History
	want := []int64{4, 4, 6}
	if len(h) != len(want) {
		t.Fatalf("history %+v, want lags %v", h, want)
	}
	for k, p := range h {
		if p.Lag != want[k] || !p.At.Equal(at.Add(time.Duration(k)*time.Second)) {
			t.Fatalf("history %+v, want lags %v a second apart", h, want)
		}
	}
	if parts, _ := tr.runsOf(tr.groupMap()[groupRef{"", "g"}]); len(parts[ref]) != 2 {
		t.Fatalf("runs %+v, want 2", parts[ref])
	}
}
