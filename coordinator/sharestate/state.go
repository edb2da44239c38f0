package sharestate

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/cohort-dev/cohort/record"
)

// batch is a run of offsets in one durable state with one delivery count.
type batch = record.ShareBatch

// durable is a partition's durable state: exactly what replaying its
// records builds (Replay is the only code that changes it).
type durable struct {
	start      int64
	stateEpoch int32
	snapEpoch  uint32
	// updates is the number of updates applied since the snapshot: the
	// next one goes to slot updates+1.
	updates uint32
	// slots is the highest update slot the store holds for the
	// partition, stale ones included: a deletion deletes 1..slots.
	slots uint32
	// batches are the offsets at or above start whose state is not
	// "available, never delivered", sorted, disjoint, and merged where
	// neighbours agree (normalize).
	batches []batch
	// locks are the acquisitions as last written: the partition's
	// locks (part.locks) after every command, which a load restores.
	locks []lock
}

// apply overlays bs on the batches (a later state replaces an earlier
// one), moves the start to start (-1: it stays) and normalizes: what
// replaying an update does.
func (d *durable) apply(start int64, bs []batch) {
	if len(bs) > 0 {
		d.batches = overlay(d.batches, bs)
	}
	if start >= 0 {
		d.start = start
	}
	d.batches = normalize(d.batches, d.start)
}

// overlay returns base with every offset of delta (sorted, disjoint)
// taking delta's state. base is not modified.
func overlay(base, delta []batch) []batch {
	out := make([]batch, 0, len(base)+len(delta))
	i := 0
	// rest is what is left of a base batch a delta batch cut in two.
	var rest batch
	haveRest := false
	peek := func() (batch, bool) {
		if haveRest {
			return rest, true
		}
		if i < len(base) {
			return base[i], true
		}
		return batch{}, false
	}
	pop := func() {
		if haveRest {
			haveRest = false
		} else {
			i++
		}
	}
	for _, d := range delta {
		for {
			b, ok := peek()
			if !ok || b.First > d.Last {
				break
			}
			pop()
			if b.First < d.First {
				lo := b
				lo.Last = min(b.Last, d.First-1)
				out = append(out, lo)
			}
			if b.Last > d.Last {
				rest, haveRest = b, true
				rest.First = max(b.First, d.Last+1)
				break
			}
		}
		out = append(out, d)
	}
	for {
		b, ok := peek()
		if !ok {
			break
		}
		pop()
		out = append(out, b)
	}
	return out
}

// normalize drops what lies below start and the runs that say nothing
// (available, never delivered: the state of an offset no batch names),
// and merges neighbours in the same state with the same count, so that
// one state has one rendering.
func normalize(bs []batch, start int64) []batch {
	out := bs[:0:0]
	for _, b := range bs {
		if b.Last < start || b.State == record.ShareAvailable && b.DeliveryCount == 0 {
			continue
		}
		b.First = max(b.First, start)
		if n := len(out); n > 0 && out[n-1].Last+1 == b.First && out[n-1].State == b.State && out[n-1].DeliveryCount == b.DeliveryCount {
			out[n-1].Last = b.Last
			continue
		}
		out = append(out, b)
	}
	return out
}

// terminal reports whether a state is final: an offset in it is never
// delivered again, and the start offset may pass it.
func terminal(s record.ShareState) bool {
	return s == record.ShareAcknowledged || s == record.ShareArchived
}

// lock is an acquisition: offsets first to last delivered to member,
// with the delivery count of this delivery, until deadline. The limit
// and duration in force when it was taken stay with it, so that its
// release and renewal apply the group's configs of that time.
type lock struct {
	first, last int64
	member      string
	count       int16
	limit       int16
	dur         time.Duration
	deadline    time.Time
	// dlq: the group had a dead-letter topic when it was taken.
	dlq bool
}

func (l lock) same(o lock) bool {
	return l.member == o.member && l.count == o.count && l.limit == o.limit && l.dur == o.dur && l.deadline.Equal(o.deadline) && l.dlq == o.dlq
}

// deadlineAt is when a lock of d taken at now ends, without the
// monotonic reading, as its record gives it back.
func deadlineAt(now time.Time, d time.Duration) time.Time { return now.Add(d).Round(0) }

func locksEqual(a, b []lock) bool {
	return slices.EqualFunc(a, b, func(x, y lock) bool { return x.first == y.first && x.last == y.last && x.same(y) })
}

func (l lock) record() record.ShareLock {
	return record.ShareLock{First: l.first, Last: l.last, Member: l.member, DeliveryCount: l.count, Limit: l.limit,
		Duration: int64(l.dur), Deadline: l.deadline.UnixNano(), DeadLetter: l.dlq}
}

func locksOf(rs []record.ShareLock) []lock {
	out := make([]lock, len(rs))
	for i, r := range rs {
		out[i] = lock{first: r.First, last: r.Last, member: r.Member, count: r.DeliveryCount, limit: r.Limit,
			dur: time.Duration(r.Duration), deadline: time.Unix(0, r.Deadline), dlq: r.DeadLetter}
	}
	return out
}

// lockChange returns the offsets first to last outside which the locks
// before and after are the same, and ok false if they are the same
// everywhere: after's locks within that span are what an update writes
// (so that it carries what changed, not every lock of the partition).
// Both lists are sorted and disjoint; the span covers every lock that is
// not in both, whole.
func lockChange(before, after []lock) (first, last int64, ok bool) {
	same := func(x, y lock) bool { return x.first == y.first && x.last == y.last && x.same(y) }
	i := 0
	for i < len(before) && i < len(after) && same(before[i], after[i]) {
		i++
	}
	if i == len(before) && i == len(after) {
		return 0, 0, false
	}
	j, k := len(before)-1, len(after)-1
	for j >= i && k >= i && same(before[j], after[k]) {
		j, k = j-1, k-1
	}
	first, last = int64(-1), int64(-1)
	widen := func(l lock) {
		if first < 0 || l.first < first {
			first = l.first
		}
		last = max(last, l.last)
	}
	for _, l := range before[i : j+1] {
		widen(l)
	}
	for _, l := range after[i : k+1] {
		widen(l)
	}
	return first, last, true
}

// within returns the locks of ls that lie within first to last (all of
// each, as lockChange's span holds them).
func within(ls []lock, first, last int64) []lock {
	i := sort.Search(len(ls), func(i int) bool { return ls[i].last >= first })
	j := sort.Search(len(ls), func(i int) bool { return ls[i].first > last })
	return ls[i:j]
}

// replaceLocks is ls with the locks within first to last replaced by
// with (which lie there): what replaying an update's locks does. A lock
// reaching across an edge of the span keeps its part outside.
func replaceLocks(ls []lock, first, last int64, with []lock) []lock {
	out := make([]lock, 0, len(ls)+len(with))
	for _, l := range ls {
		if l.last < first {
			out = append(out, l)
		} else if l.first < first {
			x := l
			x.last = first - 1
			out = append(out, x)
		}
	}
	out = append(out, with...)
	for _, l := range ls {
		if l.first > last {
			out = append(out, l)
		} else if l.last > last {
			x := l
			x.first = last + 1
			out = append(out, x)
		}
	}
	return out
}

func recordLocks(ls []lock) []record.ShareLock {
	out := make([]record.ShareLock, len(ls))
	for i, l := range ls {
		out[i] = l.record()
	}
	return out
}

// part is one share partition: its durable state and the soft state
// around it, which a load rebuilds (end, locks).
type part struct {
	key Key
	d   durable
	// end is the share-partition end offset (SPEO): the first offset
	// never taken into flight. Soft: a load sets it past the last
	// durable batch, and offsets above it are read from the log again.
	end int64
	// locks are the acquisitions, sorted and disjoint. They lie below
	// end; below the start only when the log start moved past them.
	// Every command that changes them writes them (d.locks), so that
	// an acquisition outlives its shard's node: a member's
	// acknowledgement that a client retries after the shard moved
	// settles the records it was given, never a later delivery of them.
	locks []lock
	// armed is when the partition's lock timer is set to fire (zero:
	// not set). It may fire early; it is re-armed then.
	armed time.Time
}

// end is the end a load gives the partition: past its last durable
// batch and its last lock, and at least its start.
func (d *durable) end() int64 {
	e := d.start
	if n := len(d.batches); n > 0 {
		e = max(e, d.batches[n-1].Last+1)
	}
	if n := len(d.locks); n > 0 {
		e = max(e, d.locks[n-1].last+1)
	}
	return e
}

// seg is a run of offsets in one effective state: acquired (lock ≥ 0,
// the index in part.locks), or the durable state, or available and
// never delivered where no batch says otherwise.
type seg struct {
	first, last int64
	state       record.ShareState
	count       int16
	lock        int
}

// segments returns the effective states of from to to, in order.
func (p *part) segments(from, to int64) []seg {
	var out []seg
	li := sort.Search(len(p.locks), func(i int) bool { return p.locks[i].last >= from })
	bs := p.d.batches
	bi := sort.Search(len(bs), func(i int) bool { return bs[i].Last >= from })
	for o := from; o <= to; {
		end := to
		if li < len(p.locks) && p.locks[li].first <= o {
			l := p.locks[li]
			end = min(end, l.last)
			out = append(out, seg{o, end, record.ShareAcquired, l.count, li})
			if end == l.last {
				li++
			}
			o = end + 1
			continue
		}
		if li < len(p.locks) {
			end = min(end, p.locks[li].first-1)
		}
		for bi < len(bs) && bs[bi].Last < o {
			bi++
		}
		if bi < len(bs) && bs[bi].First <= o {
			end = min(end, bs[bi].Last)
			out = append(out, seg{o, end, bs[bi].State, bs[bi].DeliveryCount, -1})
		} else {
			if bi < len(bs) {
				end = min(end, bs[bi].First-1)
			}
			out = append(out, seg{o, end, record.ShareAvailable, 0, -1})
		}
		o = end + 1
	}
	return out
}

// nextOffset is where the next fetch reads: the first available offset
// in flight, else the end (Kafka's nextFetchOffset).
func (p *part) nextOffset() int64 {
	if p.d.start < p.end {
		for _, s := range p.segments(p.d.start, p.end-1) {
			if s.state == record.ShareAvailable {
				return s.first
			}
		}
	}
	return p.end
}

// splitLocks makes o begin a lock if a lock spans o-1 and o.
func (p *part) splitLocks(o int64) {
	i := sort.Search(len(p.locks), func(i int) bool { return p.locks[i].last >= o })
	if i < len(p.locks) && p.locks[i].first < o {
		hi := p.locks[i]
		hi.first = o
		p.locks[i].last = o - 1
		p.locks = slices.Insert(p.locks, i+1, hi)
	}
}

// lockSpan splits the locks at first and last+1 and returns the indexes
// [i, j) of those within first..last.
func (p *part) lockSpan(first, last int64) (int, int) {
	p.splitLocks(first)
	p.splitLocks(last + 1)
	i := sort.Search(len(p.locks), func(i int) bool { return p.locks[i].first >= first })
	j := sort.Search(len(p.locks), func(i int) bool { return p.locks[i].first > last })
	return i, j
}

// addLocks merges new locks (sorted, disjoint from the present ones)
// into the partition's.
func (p *part) addLocks(ls []lock) {
	if len(ls) == 0 {
		return
	}
	p.locks = append(p.locks, ls...)
	slices.SortFunc(p.locks, func(a, b lock) int { return compare(a.first, b.first) })
	p.mergeLocks()
}

// mergeLocks joins neighbouring locks that agree in everything, so that
// per-offset acknowledgements do not leave the partition with a lock per
// offset.
func (p *part) mergeLocks() {
	out := p.locks[:0]
	for _, l := range p.locks {
		if n := len(out); n > 0 && out[n-1].last+1 == l.first && out[n-1].same(l) {
			out[n-1].last = l.last
			continue
		}
		out = append(out, l)
	}
	clear(p.locks[len(out):])
	p.locks = out
}

// earliest is the earliest lock deadline, zero with no lock.
func (p *part) earliest() time.Time {
	var t time.Time
	for _, l := range p.locks {
		if t.IsZero() || l.deadline.Before(t) {
			t = l.deadline
		}
	}
	return t
}

func compare(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// check is the partition's invariants (Shard.Check).
func (p *part) check(snapshotEvery int) error {
	d := &p.d
	if d.start < 0 {
		return fmt.Errorf("start offset %d", d.start)
	}
	if got := normalize(slices.Clone(d.batches), d.start); !slices.Equal(got, d.batches) {
		return fmt.Errorf("batches not normalized: %v", d.batches)
	}
	for i, b := range d.batches {
		if b.First > b.Last || i > 0 && b.First <= d.batches[i-1].Last {
			return fmt.Errorf("batches out of order: %v", d.batches)
		}
	}
	if len(d.batches) > 0 && d.batches[0].First == d.start && terminal(d.batches[0].State) {
		return fmt.Errorf("start offset %d not moved past the finished records %v", d.start, d.batches[0])
	}
	if d.updates > uint32(snapshotEvery) || d.slots < d.updates {
		return fmt.Errorf("%d updates since the snapshot, %d slots", d.updates, d.slots)
	}
	if p.end < d.end() {
		return fmt.Errorf("end offset %d below the durable end %d", p.end, d.end())
	}
	if !locksEqual(p.locks, d.locks) {
		return fmt.Errorf("locks %v, written %v", p.locks, d.locks)
	}
	for i, l := range p.locks {
		switch {
		case l.first > l.last || i > 0 && l.first <= p.locks[i-1].last:
			return fmt.Errorf("locks out of order: %v", p.locks)
		case l.last >= p.end:
			return fmt.Errorf("lock %d-%d at or past the end offset %d", l.first, l.last, p.end)
		case l.count < 1 || l.count > l.limit:
			return fmt.Errorf("lock %d-%d with delivery count %d, limit %d", l.first, l.last, l.count, l.limit)
		case p.armed.IsZero() || p.armed.After(l.deadline):
			return fmt.Errorf("lock %d-%d due %v, timer armed for %v", l.first, l.last, l.deadline, p.armed)
		}
	}
	// An acquired offset is available in the durable state, one
	// delivery behind its lock.
	if lo := p.d.start; lo < p.end {
		for _, s := range p.segments(lo, p.end-1) {
			if s.lock < 0 {
				continue
			}
			bare := part{d: p.d}
			for _, u := range bare.segments(s.first, s.last) {
				if u.state != record.ShareAvailable || u.count != s.count-1 {
					return fmt.Errorf("offsets %d-%d acquired at delivery %d over durable %s/%d", u.first, u.last, s.count, u.state, u.count)
				}
			}
		}
	}
	return nil
}
