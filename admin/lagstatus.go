package admin

// Lag as time and as a status: the tracker keeps, for every committed
// offset of every group, a short history of samples (the committed
// offset, when it was committed, the partition's high watermark), and
// evaluates it the way Burrow evaluates a consumer's window of offsets,
// with two differences: Cohort is the coordinator, so it knows when each
// offset was committed (Burrow infers it from the order commits arrive
// on __consumer_offsets); and it also estimates how long the group will
// take to clear its lag, from how fast it consumed and how fast the
// partitions grew over the window.

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Status is a Burrow-like evaluation of a partition's or a group's lag.
type Status string

// The statuses, from best to worst; a group's is its worst partition's
// (groupStatus).
const (
	// StatusUnknown: the lag is not zero and there is not a full window
	// of samples yet (as Burrow, which evaluates only full windows).
	StatusUnknown Status = ""
	// StatusOK: no lag, or the consumer keeps up.
	StatusOK Status = "OK"
	// StatusWarn: the lag grew at every sample of the window while the
	// consumer committed progress: it is falling behind.
	StatusWarn Status = "WARN"
	// StatusStall: commits keep coming but repeat the same offset while
	// lag remains: the consumer is alive and stuck (a poison record, a
	// blocked handler).
	StatusStall Status = "STALL"
	// StatusStop: no commit for longer than the window while lag
	// remains: the consumer stopped (crashed, or left without a
	// replacement).
	StatusStop Status = "STOP"
	// StatusErr: the committed offset went backwards within the window
	// (Burrow's REWIND: a reset, or a consumer committing stale offsets).
	StatusErr Status = "ERR"
)

func (s Status) rank() int {
	switch s {
	case StatusOK:
		return 1
	case StatusWarn:
		return 2
	case StatusStall:
		return 3
	case StatusStop:
		return 4
	case StatusErr:
		return 5
	}
	return 0
}

// worse returns the worse of a and b; StatusUnknown is better than any.
func worse(a, b Status) Status {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// groupStatus is the status of a group whose partitions have the
// statuses parts, one for each partition it has, evaluated or not: the
// worst evaluated one's; StatusUnknown when none is evaluated, since a
// group's status cannot be better than its partitions allow; StatusOK
// for a group with no partitions, which has no lag.
func groupStatus(parts []Status) Status {
	if len(parts) == 0 {
		return StatusOK
	}
	s := StatusUnknown
	for _, p := range parts {
		s = worse(s, p)
	}
	return s
}

// LagSample is one partition's reading: the group's committed offset and
// when it was committed, and the partition's high watermark.
type LagSample struct {
	At        time.Time
	Committed int64
	CommitAt  time.Time
	End       int64
}

// Lag is the high watermark less the committed offset, never below 0.
func (s LagSample) Lag() int64 { return max(0, s.End-s.Committed) }

// LagPoint is a lag at a time, for trends.
type LagPoint struct {
	At  time.Time `json:"at"`
	Lag int64     `json:"lag"`
}

// LagTrackerConfig configures NewLagTracker.
type LagTrackerConfig struct {
	// Window is how many samples a status is evaluated over. Default 10
	// (with the default 5 s sampling, 45 s between its first and last).
	Window int
	// History is how many samples are kept for trends (at least Window).
	// Default 60.
	History int
}

// LagTracker keeps the samples. It is not safe for concurrent use; the
// API serialises it.
//
// A partition's history is kept as runs of equal samples (the same
// committed offset, commit time and high watermark), each with the times
// of its first and last sample and how many it covers: a quiet group,
// whose readings repeat, costs one run a partition however long the
// history, not History samples. The samples a run stands for are
// expanded when a group is evaluated, at times spread evenly from its
// first to its last (exact when the sampler reads at a steady interval,
// as it does). The groups' trends are runs likewise, and topic names are
// shared between groups.
type LagTracker struct {
	cfg    LagTrackerConfig
	groups map[groupRef]*groupLag
	names  map[string]string // interned topic names
}

type groupRef struct{ Tenant, Group string }

// PartitionRef names a group's partition.
type PartitionRef = TopicPartition

type groupLag struct {
	parts []partHist // by partition ref
	trend []lagRun   // the group's total lag (in end; committed 0), oldest first
	// unsampled is the last reading's GroupSample.Unsampled.
	unsampled int32
	seen      bool
}

// partHist is a partition's history, oldest first, covering at most
// History samples.
type partHist struct {
	ref  PartitionRef
	runs []lagRun
}

// lagRun is n equal samples (n >= 1), the first at first and the last at
// last (Unix ns).
type lagRun struct {
	first, last int64
	n           int32
	committed   int64
	commitAt    int64 // Unix ns
	end         int64
}

// at is the time of the run's k-th sample (0 <= k < n).
func (r lagRun) at(k int32) int64 {
	if r.n <= 1 {
		return r.last
	}
	return r.first + (r.last-r.first)*int64(k)/int64(r.n-1)
}

// sample is the run's k-th sample.
func (r lagRun) sample(k int32) LagSample {
	return LagSample{At: time.Unix(0, r.at(k)), Committed: r.committed, CommitAt: time.Unix(0, r.commitAt), End: r.end}
}

// addSample adds a sample at at to runs, keeping at most max samples.
func addSample(runs []lagRun, at int64, committed, commitAt, end int64, limit int) []lagRun {
	if k := len(runs) - 1; k >= 0 && runs[k].committed == committed && runs[k].commitAt == commitAt && runs[k].end == end {
		runs[k].last = at
		runs[k].n++
	} else {
		runs = append(runs, lagRun{first: at, last: at, n: 1, committed: committed, commitAt: commitAt, end: end})
	}
	total := 0
	for _, r := range runs {
		total += int(r.n)
	}
	for total > limit {
		drop := min(int32(total-limit), runs[0].n)
		if drop == runs[0].n {
			runs = slices.Delete(runs, 0, 1)
		} else {
			runs[0].first = runs[0].at(drop)
			runs[0].n -= drop
		}
		total -= int(drop)
	}
	return runs
}

// expand returns the last n samples of runs (all if fewer), oldest first.
func expand(runs []lagRun, n int) []LagSample {
	return expandInto(nil, runs, n)
}

// expandInto is expand appending to out (which, with room enough, a
// caller can keep on its stack: the sampler evaluates every group at
// every reading).
func expandInto(out []LagSample, runs []lagRun, n int) []LagSample {
	total := 0
	for _, r := range runs {
		total += int(r.n)
	}
	skip := max(0, total-n)
	if out == nil {
		out = make([]LagSample, 0, min(total, n))
	}
	for _, r := range runs {
		for k := range r.n {
			if skip > 0 {
				skip--
				continue
			}
			out = append(out, r.sample(k))
		}
	}
	return out
}

// NewLagTracker returns an empty tracker.
func NewLagTracker(cfg LagTrackerConfig) *LagTracker {
	if cfg.Window < 2 {
		cfg.Window = 10
	}
	if cfg.History < cfg.Window {
		cfg.History = max(60, cfg.Window)
	}
	return &LagTracker{cfg: cfg, groups: map[groupRef]*groupLag{}, names: map[string]string{}}
}

// GroupSample is one group's reading: a sample per committed offset
// whose partition's high watermark is known.
type GroupSample struct {
	Tenant, Group string
	Partitions    map[PartitionRef]LagSample
	// Unsampled counts the group's other partitions, which have no
	// sample: a committed offset on a partition whose high watermark is
	// not known here. They have no status (StatusUnknown).
	Unsampled int
}

// Observe records one reading of every group. A group missing from it is
// forgotten (deleted, or moved to another node), as is a partition
// missing from its group's reading (offsets deleted).
func (t *LagTracker) Observe(at time.Time, groups []GroupSample) {
	t.begin()
	for _, gs := range groups {
		t.observe(at, gs)
	}
	t.end()
}

// begin starts a reading: observe each group of it, then end.
func (t *LagTracker) begin() {
	for _, g := range t.groups {
		g.seen = false
	}
}

// observe records one group's sample of a reading; gs may be reused once
// it returns.
func (t *LagTracker) observe(at time.Time, gs GroupSample) {
	ns := at.UnixNano()
	ref := groupRef{gs.Tenant, gs.Group}
	g := t.groups[ref]
	if g == nil {
		g = &groupLag{}
		t.groups[ref] = g
	}
	g.seen, g.unsampled = true, int32(gs.Unsampled)
	// Partitions gone from the reading go; the rest are kept in
	// order, new ones added.
	g.parts = slices.DeleteFunc(g.parts, func(h partHist) bool {
		_, ok := gs.Partitions[h.ref]
		return !ok
	})
	var total int64
	for p, s := range gs.Partitions {
		i, found := slices.BinarySearchFunc(g.parts, p, func(h partHist, p PartitionRef) int {
			return cmp.Or(cmp.Compare(h.ref.Topic, p.Topic), cmp.Compare(h.ref.Partition, p.Partition))
		})
		if !found {
			p.Topic = t.intern(p.Topic)
			g.parts = slices.Insert(g.parts, i, partHist{ref: p})
		}
		g.parts[i].runs = addSample(g.parts[i].runs, ns, s.Committed, s.CommitAt.UnixNano(), s.End, t.cfg.History)
		total += s.Lag()
	}
	g.trend = addSample(g.trend, ns, 0, 0, total, t.cfg.History)
}

// end ends a reading: a group not in it is forgotten.
func (t *LagTracker) end() {
	for ref, g := range t.groups {
		if !g.seen {
			delete(t.groups, ref)
		}
	}
}

// intern returns the tracker's copy of a topic name.
func (t *LagTracker) intern(s string) string {
	if v, ok := t.names[s]; ok {
		return v
	}
	s = strings.Clone(s)
	t.names[s] = s
	return s
}

// PartitionLag is a partition's evaluation.
type PartitionLag struct {
	Status Status
	// TimeToClear is the estimated time until the lag is consumed at the
	// window's rates; 0 with no lag; nil when it is not shrinking.
	TimeToClear *time.Duration
	History     []LagPoint // oldest first
}

// GroupLag is a group's evaluation.
type GroupLag struct {
	Status      Status
	TimeToClear *time.Duration
	Trend       []LagPoint
	Partitions  map[PartitionRef]PartitionLag
}

// Group evaluates a group at now; ok is false if it has no samples.
func (t *LagTracker) Group(tenant, group string, now time.Time) (GroupLag, bool) {
	g := t.groups[groupRef{tenant, group}]
	if g == nil {
		return GroupLag{}, false
	}
	out := GroupLag{Partitions: make(map[PartitionRef]PartitionLag, len(g.parts))}
	for _, s := range expand(g.trend, t.cfg.History) {
		out.Trend = append(out.Trend, LagPoint{At: s.At, Lag: s.End})
	}
	var lag, consumed, produced int64
	var span time.Duration
	statuses := make([]Status, 0, len(g.parts)+int(g.unsampled))
	for range g.unsampled {
		statuses = append(statuses, StatusUnknown)
	}
	for _, h := range g.parts {
		ss := expand(h.runs, t.cfg.History)
		w := ss[max(0, len(ss)-t.cfg.Window):]
		pl := PartitionLag{Status: evaluate(w, now, t.cfg.Window)}
		first, last := w[0], w[len(w)-1]
		pl.TimeToClear = timeToClear(last.Lag(), last.Committed-first.Committed, last.End-first.End, last.At.Sub(first.At))
		for _, s := range ss {
			pl.History = append(pl.History, LagPoint{At: s.At, Lag: s.Lag()})
		}
		out.Partitions[h.ref] = pl
		statuses = append(statuses, pl.Status)
		lag += last.Lag()
		consumed += last.Committed - first.Committed
		produced += last.End - first.End
		span = max(span, last.At.Sub(first.At))
	}
	out.Status = groupStatus(statuses)
	out.TimeToClear = timeToClear(lag, consumed, produced, span)
	return out, true
}

// GroupStatus is Group's Status alone, without the history and time to
// clear it also builds; ok is false if the group has no samples.
func (t *LagTracker) GroupStatus(tenant, group string, now time.Time) (Status, bool) {
	g := t.groups[groupRef{tenant, group}]
	if g == nil {
		return StatusUnknown, false
	}
	statuses := make([]Status, 0, len(g.parts)+int(g.unsampled))
	for range g.unsampled {
		statuses = append(statuses, StatusUnknown)
	}
	var buf [16]LagSample
	for _, h := range g.parts {
		w := buf[:0]
		if t.cfg.Window > len(buf) {
			w = nil
		}
		statuses = append(statuses, evaluate(expandInto(w, h.runs, t.cfg.Window), now, t.cfg.Window))
	}
	return groupStatus(statuses), true
}

// timeToClear estimates how long lag takes to clear when consumed grew
// and produced were added over span: lag over the net consumption rate.
func timeToClear(lag, consumed, produced int64, span time.Duration) *time.Duration {
	if lag == 0 {
		d := time.Duration(0)
		return &d
	}
	if span <= 0 || consumed <= produced {
		return nil
	}
	d := time.Duration(float64(lag) / float64(consumed-produced) * float64(span)).Round(time.Millisecond)
	return &d
}

// evaluate is Burrow's evaluation of a window of samples (oldest first),
// in this order: no lag now is OK; fewer samples than a full window (of
// size window) is unknown; a committed offset that went back is
// ERR; no commit for longer than the window spans is STOP; commits that
// did not move the offset are STALL; a lag that grew at every step is
// WARN; anything else is OK.
func evaluate(w []LagSample, now time.Time, window int) Status {
	last := w[len(w)-1]
	if last.Lag() == 0 {
		return StatusOK
	}
	if len(w) < max(2, window) {
		return StatusUnknown
	}
	first := w[0]
	for i := 1; i < len(w); i++ {
		if w[i].Committed < w[i-1].Committed {
			return StatusErr
		}
	}
	span := last.At.Sub(first.At)
	if now.Sub(last.CommitAt) > span || !last.CommitAt.After(first.CommitAt) {
		return StatusStop
	}
	if last.Committed == first.Committed {
		return StatusStall
	}
	growing := last.Lag() > first.Lag()
	for i := 1; i < len(w) && growing; i++ {
		growing = w[i].Lag() >= w[i-1].Lag()
	}
	if growing {
		return StatusWarn
	}
	return StatusOK
}

// groupRefs returns the tracked groups, sorted.
func (t *LagTracker) groupRefs() []groupRef {
	out := make([]groupRef, 0, len(t.groups))
	for r := range t.groups {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b groupRef) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Group, b.Group))
	})
	return out
}
