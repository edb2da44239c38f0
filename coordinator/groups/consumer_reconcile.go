package groups

// Reconciliation: how one member moves toward its target assignment, one
// heartbeat at a time, as Kafka's CurrentAssignmentBuilder. Two rules make
// it safe: a member gives up partitions before it gets new ones (and stays
// on its epoch until it has), and a member never gets a partition another
// member still owns or is revoking.
//
// This follows Kafka's newer CurrentAssignmentBuilder (after 4.0): a member
// leaving UNREVOKED_PARTITIONS recomputes from its own epoch (no +1);
// partitions it was revoking itself do not count as owned by another; and
// partitions of topics it no longer subscribes to are revoked at once,
// without waiting for the next target.

import (
	"fmt"
	"slices"

	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
)

// current is a member's reconciliation state: what its current-assignment
// record holds.
type current struct {
	epoch, prevEpoch int32
	state            memberState
	assigned         tps
	revoking         tps
}

func (s *Shard) emitCurrent(g *consumerGroup, id string, c current) {
	v := record.ConsumerCurrent{
		MemberEpoch: c.epoch, PreviousMemberEpoch: c.prevEpoch, State: int8(c.state),
		Assigned: c.assigned.records(), Revoking: c.revoking.records(),
	}
	s.emit(s.memberKey(record.KindConsumerCurrent, g.Key, id), v.Encode())
}

// reconcile computes m's next state from its target; nil if nothing
// changes. owned is what the member says it owns (nil: not sent, which
// counts as still owning everything it must revoke).
func (s *Shard) reconcile(g *consumerGroup, m *consumerMember, owned tps) (*current, int16, string) {
	target := g.target[m.id]
	subscribed := map[[16]byte]bool{}
	if cat := s.catalog(g.Tenant); cat != nil {
		for _, t := range m.subscription(cat) {
			if meta, ok := cat.ByName[t]; ok {
				subscribed[meta.ID] = true
			}
		}
	}
	switch m.state {
	case memberStable:
		if m.epoch == g.targetEpoch && !ownsUnsubscribed(m.assigned, subscribed) {
			return nil, 0, ""
		}
	case memberUnrevoked:
		if ownsAny(owned, m.revoking) {
			if !ownsUnsubscribed(m.assigned, subscribed) {
				return nil, 0, ""
			}
			// Still revoking, and unsubscribed from a topic it
			// keeps: those partitions join the ones to revoke at
			// once (Kafka's updateCurrentAssignment).
			var keep, drop tps
			for _, t := range m.assigned {
				if subscribed[t.TopicID] {
					keep = append(keep, t)
				} else {
					drop = append(drop, t)
				}
			}
			if keep == nil {
				keep = tps{}
			}
			return &current{epoch: m.epoch, prevEpoch: m.epoch, state: memberUnrevoked, assigned: keep, revoking: union(m.revoking, drop)}, 0, ""
		}
	case memberUnreleased:
	default:
		if owned == nil || owned.count() > 0 {
			return nil, kerr.FencedMemberEpoch.Code, fmt.Sprintf("The consumer group member %s is in an unknown state and must rejoin.", m.id)
		}
	}
	next := s.nextAssignment(g, m, target, subscribed, owned)
	if next.epoch == m.epoch && next.prevEpoch == m.prevEpoch && next.state == m.state &&
		next.assigned.equal(m.assigned) && next.revoking.equal(m.revoking) {
		return nil, 0, ""
	}
	return &next, 0, ""
}

// nextAssignment is Kafka's computeNextAssignment.
func (s *Shard) nextAssignment(g *consumerGroup, m *consumerMember, target tps, subscribed map[[16]byte]bool, owned tps) current {
	keepM, revokeM, addM := map[[16]byte][]int32{}, map[[16]byte][]int32{}, map[[16]byte][]int32{}
	unreleased := false
	ids := map[[16]byte]bool{}
	for _, t := range target {
		ids[t.TopicID] = true
	}
	for _, t := range m.assigned {
		ids[t.TopicID] = true
	}
	for id := range ids {
		var want []int32
		if subscribed[id] {
			want = target.get(id)
		}
		have := m.assigned.get(id)
		for _, p := range have {
			if _, ok := slices.BinarySearch(want, p); ok {
				keepM[id] = append(keepM[id], p)
			} else {
				revokeM[id] = append(revokeM[id], p)
			}
		}
		for _, p := range want {
			if _, ok := slices.BinarySearch(have, p); ok {
				continue
			}
			if _, busy := g.owners[tp{id, p}]; busy && !m.revoking.has(id, p) {
				unreleased = true
				continue
			}
			addM[id] = append(addM[id], p)
		}
	}
	keep, revoke, add := tpsFrom(keepM), tpsFrom(revokeM), tpsFrom(addM)
	withEpoch := func(e int32) current { return current{epoch: e, prevEpoch: m.epoch, revoking: tps{}} }
	switch {
	case revoke.count() > 0 && ownsAny(owned, revoke):
		c := withEpoch(m.epoch)
		c.state, c.assigned, c.revoking = memberUnrevoked, keep, revoke
		return c
	case add.count() > 0:
		c := withEpoch(g.targetEpoch)
		c.assigned = union(keep, add)
		c.state = memberStable
		if unreleased {
			c.state = memberUnreleased
		}
		return c
	case unreleased:
		c := withEpoch(g.targetEpoch)
		c.state, c.assigned = memberUnreleased, keep
		return c
	}
	c := withEpoch(g.targetEpoch)
	c.state, c.assigned = memberStable, keep
	return c
}

// ownsAny reports whether owned overlaps set; a nil owned (the member did
// not say) counts as owning all of it.
func ownsAny(owned, set tps) bool {
	if set.count() == 0 {
		return false
	}
	if owned == nil {
		return true
	}
	for _, t := range set {
		for _, p := range t.Partitions {
			if owned.has(t.TopicID, p) {
				return true
			}
		}
	}
	return false
}

func ownsUnsubscribed(a tps, subscribed map[[16]byte]bool) bool {
	for _, t := range a {
		if !subscribed[t.TopicID] {
			return true
		}
	}
	return false
}

func union(a, b tps) tps {
	out := map[[16]byte][]int32{}
	for _, x := range []tps{a, b} {
		for _, t := range x {
			out[t.TopicID] = append(out[t.TopicID], t.Partitions...)
		}
	}
	for id := range out {
		slices.Sort(out[id])
		out[id] = slices.Compact(out[id])
	}
	return tpsFrom(out)
}
