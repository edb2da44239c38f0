package sharestate

import (
	"slices"
	"time"

	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ack is Kafka's SharePartition.acknowledge: every offset acknowledged at
// or above the start offset must be acquired by the member
// (INVALID_RECORD_STATE otherwise), none may lie past the end offset
// (INVALID_REQUEST), and either all of them take effect or none does.
func (s *Shard) ack(now time.Time, c AckCmd) Result {
	p := s.parts[c.Key]
	for i, a := range c.Acks {
		if a.First < 0 || a.Last < a.First || i > 0 && a.First <= c.Acks[i-1].Last ||
			len(a.Types) != 1 && int64(len(a.Types)) != a.Last-a.First+1 {
			return Result{Code: kerr.InvalidRequest.Code}
		}
		for _, t := range a.Types {
			if t < AckGap || t > AckRenew {
				return Result{Code: kerr.InvalidRequest.Code}
			}
		}
	}
	if p == nil {
		return Result{Code: kerr.InvalidRecordState.Code}
	}
	start := p.d.start
	for _, a := range c.Acks {
		if a.Last < start {
			continue // finished already, as Kafka skips them
		}
		if a.Last >= p.end {
			return Result{Code: kerr.InvalidRequest.Code}
		}
		for _, sg := range p.segments(max(a.First, start), a.Last) {
			if sg.lock < 0 || p.locks[sg.lock].member != c.Member {
				return Result{Code: kerr.InvalidRecordState.Code}
			}
		}
	}
	var delta []batch
	for _, a := range c.Acks {
		// A lock below the start offset (the log's start passed it)
		// ends with the acknowledgement, whatever it says.
		if lo, hi := a.First, min(a.Last, start-1); lo <= hi {
			i, j := p.lockSpan(lo, hi)
			others := slices.DeleteFunc(slices.Clone(p.locks[i:j]), func(l lock) bool { return l.member == c.Member })
			p.locks = slices.Replace(p.locks, i, j, others...)
		}
		lo := max(a.First, start)
		if lo > a.Last {
			continue
		}
		for o := lo; o <= a.Last; {
			t, hi := a.Types[0], a.Last
			if len(a.Types) > 1 {
				// One type per offset: a run of the same type.
				t, hi = a.Types[o-a.First], o
				for hi < a.Last && a.Types[hi+1-a.First] == t {
					hi++
				}
			}
			i, j := p.lockSpan(o, hi)
			if t == AckRenew {
				// KIP-1222: the lock starts again, nothing else changes.
				for k := i; k < j; k++ {
					p.locks[k].deadline = deadlineAt(now, p.locks[k].dur)
				}
			} else {
				for _, l := range p.locks[i:j] {
					delta = append(delta, settled(l, t))
				}
				p.locks = slices.Delete(p.locks, i, j)
			}
			o = hi + 1
		}
	}
	p.mergeLocks()
	s.commit(p, delta, -1)
	s.arm(p)
	return Result{}
}

// settled is the durable state an acquisition ends in, by how it ends:
// accepted, rejected or a gap, or released (acknowledged RELEASE, lock
// expired, member gone), which makes its records available again with
// their delivery count, or archives them at the delivery limit (Kafka's
// InFlightState.tryUpdateState). Under a dead-letter topic a rejection
// or a release at the limit is ARCHIVING instead (KIP-1191's
// recordStateWithDlq); a gap never is.
func settled(l lock, t AckType) batch {
	b := batch{First: l.first, Last: l.last, DeliveryCount: l.count}
	switch {
	case t == AckAccept:
		b.State = record.ShareAcknowledged
	case t == AckRelease && l.count < l.limit:
		b.State = record.ShareAvailable
	case l.dlq && (t == AckReject || t == AckRelease):
		b.State = record.ShareArchiving
	default:
		b.State = record.ShareArchived
	}
	return b
}

// deadLettered archives the ARCHIVING records among c's offsets.
func (s *Shard) deadLettered(c DeadLetteredCmd) Result {
	p := s.parts[c.Key]
	if p == nil || c.First < 0 || c.Last < c.First {
		return Result{Code: kerr.InvalidRequest.Code}
	}
	var delta []batch
	if lo := max(c.First, p.d.start); lo <= c.Last && lo < p.end {
		for _, sg := range p.segments(lo, min(c.Last, p.end-1)) {
			if sg.lock < 0 && sg.state == record.ShareArchiving {
				delta = append(delta, batch{First: sg.first, Last: sg.last, State: record.ShareArchived, DeliveryCount: sg.count})
			}
		}
	}
	s.commit(p, delta, -1)
	return Result{}
}

// release gives back every record a member holds in the partitions
// named (all the group's on the shard if none is), as Kafka's
// releaseAcquiredRecords on a member's leaving or its share session's
// end: available again with the delivery count kept, or archived at the
// limit.
func (s *Shard) release(c ReleaseCmd) Result {
	keep := func(p *part) bool { return p.key.Tenant == c.Tenant && p.key.Group == c.Group }
	if c.Partitions != nil {
		keep = func(p *part) bool { return slices.Contains(c.Partitions, p.key) }
	}
	for _, p := range s.sorted(keep) {
		s.settleLocks(p, func(l lock) bool { return l.member == c.Member })
	}
	return Result{}
}

// expire releases the locks due (Kafka's releaseAcquisitionLockOnTimeout).
func (s *Shard) expire(now time.Time, p *part) {
	s.settleLocks(p, func(l lock) bool { return !l.deadline.After(now) })
}

// settleLocks releases the partition's locks that match.
func (s *Shard) settleLocks(p *part, match func(lock) bool) {
	var delta []batch
	p.locks = slices.DeleteFunc(p.locks, func(l lock) bool {
		if match(l) {
			delta = append(delta, settled(l, AckRelease))
			return true
		}
		return false
	})
	s.commit(p, delta, -1)
	s.arm(p)
}

// commit writes a partition's change: delta (sorted, disjoint) gives its
// offsets new states and start (-1: none) moves its start offset; then
// the start offset moves past every finished record after it, never past
// an unfinished one (Kafka's maybeUpdateCachedStateAndOffsets). The
// change is an update record, or a snapshot when the partition has
// written SnapshotEvery updates since the last, or when its whole state
// is smaller than the change.
func (s *Shard) commit(p *part, delta []batch, start int64) {
	delta = normalizeDelta(delta)
	if slices.ContainsFunc(delta, func(b batch) bool { return b.State == record.ShareArchiving }) {
		s.letters[p.key] = true
	}
	next := p.d
	next.apply(start, delta)
	o := next.start
	for _, b := range next.batches {
		if b.First != o || !terminal(b.State) {
			break
		}
		o = b.Last + 1
	}
	if o != next.start {
		next.apply(o, nil)
	}
	// What lies below the new start says nothing any more.
	delta = normalizeDelta(clipBelow(delta, next.start))
	lockFirst, lockLast, locks := lockChange(p.d.locks, p.locks)
	if next.start == p.d.start && len(delta) == 0 && !locks {
		return
	}
	if p.d.updates >= uint32(s.cfg.SnapshotEvery) || len(next.batches) < len(delta) {
		s.rec.Emit(s.snapshotKey(p.key), record.ShareSnapshot{StateEpoch: next.stateEpoch, SnapshotEpoch: next.snapEpoch + 1,
			StartOffset: next.start, Batches: next.batches, Locks: recordLocks(p.locks)}.Encode())
	} else {
		u := record.ShareUpdate{SnapshotEpoch: p.d.snapEpoch, StartOffset: -1, Batches: delta, HasLocks: locks}
		if locks {
			u.LockFirst, u.LockLast = lockFirst, lockLast
			u.Locks = recordLocks(within(p.locks, lockFirst, lockLast))
		}
		if next.start != p.d.start {
			u.StartOffset = next.start
		}
		s.rec.Emit(s.updateKey(p.key, p.d.updates+1), u.Encode())
	}
	p.end = max(p.end, p.d.start)
}

// normalizeDelta merges a delta's neighbours that agree; unlike
// normalize it keeps "available, never delivered" runs, which say
// something in a delta.
func normalizeDelta(bs []batch) []batch {
	out := bs[:0:0]
	for _, b := range bs {
		if n := len(out); n > 0 && out[n-1].Last+1 == b.First && out[n-1].State == b.State && out[n-1].DeliveryCount == b.DeliveryCount {
			out[n-1].Last = b.Last
			continue
		}
		out = append(out, b)
	}
	return out
}

// clipBelow drops what lies below start.
func clipBelow(bs []batch, start int64) []batch {
	out := bs[:0:0]
	for _, b := range bs {
		if b.Last < start {
			continue
		}
		b.First = max(b.First, start)
		out = append(out, b)
	}
	return out
}

// alter is AlterShareGroupOffsets (Kafka's InitializeShareGroupState with
// the state epoch bumped): a snapshot at the new start offset, nothing in
// flight.
func (s *Shard) alter(c AlterCmd) Result {
	if c.StartOffset < 0 {
		return Result{Code: kerr.InvalidRequest.Code}
	}
	snap := record.ShareSnapshot{StartOffset: c.StartOffset}
	if s.parts[c.Key] == nil && s.full() {
		return Result{Code: kerr.GroupMaxSizeReached.Code}
	}
	if p := s.parts[c.Key]; p != nil {
		snap.StateEpoch, snap.SnapshotEpoch = p.d.stateEpoch+1, p.d.snapEpoch+1
		p.locks = nil
		s.arm(p)
	}
	s.rec.Emit(s.snapshotKey(c.Key), snap.Encode())
	p := s.parts[c.Key]
	p.end = c.StartOffset
	return Result{}
}

// delete is DeleteShareGroupOffsets: the partition's records are
// deleted, the snapshot first, so that a crash in between leaves only
// update slots with no snapshot, which a load deletes (Loaded).
func (s *Shard) delete(c DeleteCmd) Result {
	p := s.parts[c.Key]
	if p == nil {
		return Result{Code: kerr.GroupIDNotFound.Code}
	}
	p.locks = nil
	s.arm(p)
	slots := p.d.slots
	s.rec.Emit(s.snapshotKey(c.Key), nil)
	for slot := uint32(1); slot <= slots; slot++ {
		s.rec.Emit(s.updateKey(c.Key, slot), nil)
	}
	return Result{}
}

// describe is DescribeShareGroupOffsets' view of partitions, with every
// run of states in flight.
func (s *Shard) describe(c DescribeCmd) []Description {
	keys := c.Partitions
	if keys == nil {
		for _, p := range s.sorted(func(p *part) bool { return p.key.Tenant == c.Tenant && p.key.Group == c.Group }) {
			keys = append(keys, p.key)
		}
	}
	out := make([]Description, 0, len(keys))
	for _, k := range keys {
		p := s.parts[k]
		if p == nil {
			out = append(out, Description{Key: k, Code: kerr.GroupIDNotFound.Code, StartOffset: -1, EndOffset: -1})
			continue
		}
		d := Description{Key: k, StartOffset: p.d.start, EndOffset: p.end, StateEpoch: p.d.stateEpoch}
		if p.d.start < p.end {
			for _, sg := range p.segments(p.d.start, p.end-1) {
				r := Run{First: sg.first, Last: sg.last, State: sg.state, DeliveryCount: sg.count}
				if sg.lock >= 0 {
					r.Member, r.Deadline = p.locks[sg.lock].member, p.locks[sg.lock].deadline
				}
				if n := len(d.Runs); n > 0 {
					if q := &d.Runs[n-1]; q.Last+1 == r.First && q.State == r.State && q.DeliveryCount == r.DeliveryCount &&
						q.Member == r.Member && q.Deadline.Equal(r.Deadline) {
						q.Last = r.Last
						continue
					}
				}
				d.Runs = append(d.Runs, r)
			}
		}
		out = append(out, d)
	}
	return out
}
