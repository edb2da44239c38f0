package sharestate

import (
	"slices"
	"sort"
	"time"

	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
)

// next begins a fetch (Kafka's maybeInitialize, updateCacheAndOffsets and
// nextFetchOffset): the partition is initialised if it has no state, its
// start offset follows the log's start, and the answer is where to read.
func (s *Shard) next(c NextCmd) Next {
	lim := c.Limits.or(s.cfg.Limits)
	p := s.parts[c.Key]
	if p == nil && s.full() {
		return Next{Code: kerr.GroupMaxSizeReached.Code, Offset: -1}
	}
	if p == nil {
		// As Kafka's startOffsetDuringInitialization: the reset
		// policy picks the start, from the log's offsets.
		start := c.Log.Latest
		switch c.Reset {
		case ResetEarliest:
			start = c.Log.Start
		case ResetByDuration:
			if c.Log.AtTime >= 0 {
				start = c.Log.AtTime
			}
		}
		start = max(start, c.Log.Start, 0)
		s.rec.Emit(s.snapshotKey(c.Key), record.ShareSnapshot{StartOffset: start}.Encode())
		p = s.parts[c.Key]
		p.end = start
	}
	if c.Log.Start > p.d.start {
		// The log's start moved past records in flight (retention,
		// DeleteRecords): they are gone, as Kafka archives them. A
		// record acquired below it is given up when its lock ends.
		s.commit(p, nil, c.Log.Start)
	}
	off := p.nextOffset()
	return Next{Offset: off, Full: off == p.end && p.end-p.d.start >= int64(lim.MaxInFlight)}
}

// acquire is Kafka's SharePartition.acquire: the available records among
// the batches read are acquired for the member, redeliveries first, then
// new records from the end offset, within MaxRecords (BatchOptimized may
// exceed it to finish a log batch) and the in-flight limit.
func (s *Shard) acquire(now time.Time, c AcquireCmd) Acquired {
	lim := c.Limits.or(s.cfg.Limits)
	p := s.parts[c.Key]
	if !sortedRanges(c.Batches) || !sortedRanges(c.Aborted) || c.Member == "" {
		return Acquired{Code: kerr.InvalidRequest.Code}
	}
	if p == nil || len(c.Batches) == 0 || c.MaxRecords <= 0 {
		return Acquired{LockDuration: lim.LockDuration}
	}
	first, last := c.Batches[0].First, c.Batches[len(c.Batches)-1].Last
	start := p.d.start
	var delta []batch

	// Records between the offset read from and the first batch are no
	// longer in the log (Kafka's maybeArchiveStaleBatches): the
	// available ones among them are archived, so that the start offset
	// can pass them.
	if from, to := max(c.FetchOffset, start), min(first, p.end)-1; from <= to {
		for _, sg := range p.segments(from, to) {
			if sg.state == record.ShareAvailable {
				delta = append(delta, batch{First: sg.first, Last: sg.last, State: record.ShareArchived, DeliveryCount: sg.count})
			}
		}
	}

	// The in-flight limit (Kafka's lastOffsetAndMaxRecordsToAcquire):
	// at it, only records already in flight are redelivered.
	budget := min(int64(c.MaxRecords), int64(lim.MaxInFlight)-(p.end-start))
	lastTo := last
	if budget <= 0 {
		if c.FetchOffset >= p.end {
			s.commit(p, delta, -1)
			return Acquired{LockDuration: lim.LockDuration}
		}
		budget = min(int64(c.MaxRecords), p.end-c.FetchOffset)
		lastTo = min(last, p.end-1)
	}

	var got []lock
	take := func(first, last int64, count int16) {
		got = append(got, lock{first: first, last: last, member: c.Member, count: count,
			limit: lim.DeliveryLimit, dur: lim.LockDuration, deadline: deadlineAt(now, lim.LockDuration), dlq: lim.DeadLetter})
	}
	acquired := int64(0)
	stop := false
	if from, to := max(first, start), min(lastTo, p.end-1); from <= to {
		for _, sg := range p.segments(from, to) {
			if acquired >= budget {
				break
			}
			if sg.state != record.ShareAvailable {
				continue
			}
			lo, hi := sg.first, sg.last
			if lim.DeliveryLimit > 2 && sg.count >= lim.DeliveryLimit-1 {
				// As Kafka 4.2: a record on its last delivery is
				// delivered alone, so that a poison record does not
				// take its neighbours to the archive with it.
				if acquired > 0 {
					stop = true
					break
				}
				hi, stop = lo, true
			} else if room := budget - acquired; hi-lo+1 > room {
				hi = lo + room - 1
				if c.Mode == BatchOptimized {
					hi = min(sg.last, batchEnd(c.Batches, hi))
				}
			}
			take(lo, hi, sg.count+1)
			acquired += hi - lo + 1
			if stop {
				break
			}
		}
	}

	if !stop && acquired < budget && lastTo >= p.end {
		nfirst := max(p.end, first)
		if nfirst > p.end {
			// The log holds nothing from the end offset to its first
			// batch: archived, so that the start offset passes.
			delta = append(delta, batch{First: p.end, Last: nfirst - 1, State: record.ShareArchived})
			p.end = nfirst
		}
		nlast, inflight := lastTo, lastTo
		if room := budget - acquired; nlast-nfirst+1 > room {
			cut := nfirst + room - 1
			// The log batch holding the last record the budget allows
			// comes into flight whole (Kafka's
			// lastOffsetFromBatchWithRequestOffset); RecordLimit
			// acquires only up to the budget and leaves the rest of
			// it available.
			inflight = batchEnd(c.Batches, cut)
			nlast = inflight
			if c.Mode == RecordLimit {
				nlast = cut
			}
		}
		for _, r := range split(c.Batches, nfirst, nlast, c.BatchSize, c.Mode) {
			take(r.First, r.Last, 1)
		}
		acquired += nlast - nfirst + 1
		p.end = inflight + 1
	}

	// read_committed: the records of aborted transactions are archived,
	// not delivered (Kafka's maybeFilterAbortedTransactionalAcquiredRecords),
	// with the delivery count they had.
	if len(c.Aborted) > 0 {
		var kept []lock
		for _, l := range got {
			for _, part := range cutRanges(l.first, l.last, c.Aborted) {
				x := l
				x.first, x.last = part.r.First, part.r.Last
				if part.in {
					delta = append(delta, batch{First: x.first, Last: x.last, State: record.ShareArchived, DeliveryCount: x.count - 1})
				} else {
					kept = append(kept, x)
				}
			}
		}
		got = kept
	}

	p.addLocks(got)
	slices.SortFunc(delta, func(a, b batch) int { return compare(a.First, b.First) })
	s.commit(p, delta, -1)
	s.arm(p)
	out := Acquired{LockDuration: lim.LockDuration, Records: make([]Records, 0, len(got))}
	for _, l := range got {
		out.Records = append(out.Records, Records{First: l.first, Last: l.last, DeliveryCount: l.count})
	}
	return out
}

// sortedRanges reports whether rs are well formed, sorted and disjoint.
func sortedRanges(rs []Range) bool {
	for i, r := range rs {
		if r.First < 0 || r.Last < r.First || i > 0 && r.First <= rs[i-1].Last {
			return false
		}
	}
	return true
}

// batchEnd is the last offset of the log batch holding o, or o if none
// does.
func batchEnd(bs []Range, o int64) int64 {
	i := sort.Search(len(bs), func(i int) bool { return bs[i].Last >= o })
	if i < len(bs) && bs[i].First <= o {
		return bs[i].Last
	}
	return o
}

// split cuts first..last into the runs a ShareFetch returns: with
// BatchOptimized, a new run at each log batch once the run holds
// batchSize records (Kafka's createBatches), else one run.
func split(bs []Range, first, last int64, batchSize int, mode Mode) []Range {
	if mode != BatchOptimized || batchSize <= 0 || last-first+1 <= int64(batchSize) {
		return []Range{{first, last}}
	}
	var out []Range
	cur := first
	for _, b := range bs {
		if b.First > last {
			break
		}
		if b.First > cur && b.First-cur >= int64(batchSize) {
			out = append(out, Range{cur, b.First - 1})
			cur = b.First
		}
	}
	return append(out, Range{cur, last})
}

// piece is part of a range, inside the cutting ranges or not.
type piece struct {
	r  Range
	in bool
}

// cutRanges splits first..last by rs (sorted, disjoint).
func cutRanges(first, last int64, rs []Range) []piece {
	var out []piece
	o := first
	for _, r := range rs {
		if r.Last < o {
			continue
		}
		if r.First > last {
			break
		}
		if r.First > o {
			out = append(out, piece{Range{o, r.First - 1}, false})
			o = r.First
		}
		hi := min(r.Last, last)
		out = append(out, piece{Range{o, hi}, true})
		o = hi + 1
	}
	if o <= last {
		out = append(out, piece{Range{o, last}, false})
	}
	return out
}

// full reports whether the shard holds its maximum of partitions
// (Config.MaxPartitions): no new one gets state.
func (s *Shard) full() bool { return len(s.parts) >= s.cfg.MaxPartitions }
