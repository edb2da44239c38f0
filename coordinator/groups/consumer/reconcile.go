package consumer

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

// Current is a member's reconciliation state: what its current-assignment
// record holds.
type Current struct {
	Epoch, PrevEpoch int32
	State            MemberState
	Assigned         Assignment
	Revoking         Assignment
}

func (s *Type) EmitCurrent(g *Group, id string, c Current) {
	v := record.ConsumerCurrent{
		MemberEpoch: c.Epoch, PreviousMemberEpoch: c.PrevEpoch, State: int8(c.State),
		Assigned: c.Assigned.Records(), Revoking: c.Revoking.Records(),
	}
	s.emit(s.memberKey(record.KindConsumerCurrent, g.Key, id), v.Encode())
}

// reconcile computes m's next state from its target; nil if nothing
// changes. owned is what the member says it owns (nil: not sent, which
// counts as still owning everything it must revoke).
func (s *Type) reconcile(g *Group, m *Member, owned Assignment) (*Current, int16, string) {
	target := g.Target[m.ID]
	subscribed := map[[16]byte]bool{}
	if cat := s.catalog(g.Tenant); cat != nil {
		for _, t := range m.subscription(cat) {
			if meta, ok := cat.ByName[t]; ok {
				subscribed[meta.ID] = true
			}
		}
	}
	switch m.State {
	case MemberStable:
		if m.Epoch == g.TargetEpoch && !ownsUnsubscribed(m.Assigned, subscribed) {
			return nil, 0, ""
		}
	case MemberUnrevoked:
		if ownsAny(owned, m.Revoking) {
			if !ownsUnsubscribed(m.Assigned, subscribed) {
				return nil, 0, ""
			}
			// Still revoking, and unsubscribed from a topic it
			// keeps: those partitions join the ones to revoke at
			// once (Kafka's updateCurrentAssignment).
			var keep, drop Assignment
			for _, t := range m.Assigned {
				if subscribed[t.TopicID] {
					keep = append(keep, t)
				} else {
					drop = append(drop, t)
				}
			}
			if keep == nil {
				keep = Assignment{}
			}
			return &Current{Epoch: m.Epoch, PrevEpoch: m.Epoch, State: MemberUnrevoked, Assigned: keep, Revoking: union(m.Revoking, drop)}, 0, ""
		}
	case MemberUnreleased:
	default:
		if owned == nil || owned.count() > 0 {
			return nil, kerr.FencedMemberEpoch.Code, fmt.Sprintf("The consumer group member %s is in an unknown state and must rejoin.", m.ID)
		}
	}
	next := s.nextAssignment(g, m, target, subscribed, owned)
	if next.Epoch == m.Epoch && next.PrevEpoch == m.PrevEpoch && next.State == m.State &&
		next.Assigned.equal(m.Assigned) && next.Revoking.equal(m.Revoking) {
		return nil, 0, ""
	}
	return &next, 0, ""
}

// nextAssignment is Kafka's computeNextAssignment.
func (s *Type) nextAssignment(g *Group, m *Member, target Assignment, subscribed map[[16]byte]bool, owned Assignment) Current {
	keepM, revokeM, addM := map[[16]byte][]int32{}, map[[16]byte][]int32{}, map[[16]byte][]int32{}
	unreleased := false
	ids := map[[16]byte]bool{}
	for _, t := range target {
		ids[t.TopicID] = true
	}
	for _, t := range m.Assigned {
		ids[t.TopicID] = true
	}
	for id := range ids {
		var want []int32
		if subscribed[id] {
			want = target.get(id)
		}
		have := m.Assigned.get(id)
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
			if _, busy := g.owners[tp{id, p}]; busy && !m.Revoking.Has(id, p) {
				unreleased = true
				continue
			}
			addM[id] = append(addM[id], p)
		}
	}
	keep, revoke, add := AssignmentFrom(keepM), AssignmentFrom(revokeM), AssignmentFrom(addM)
	withEpoch := func(e int32) Current { return Current{Epoch: e, PrevEpoch: m.Epoch, Revoking: Assignment{}} }
	switch {
	case revoke.count() > 0 && ownsAny(owned, revoke):
		c := withEpoch(m.Epoch)
		c.State, c.Assigned, c.Revoking = MemberUnrevoked, keep, revoke
		return c
	case add.count() > 0:
		c := withEpoch(g.TargetEpoch)
		c.Assigned = union(keep, add)
		c.State = MemberStable
		if unreleased {
			c.State = MemberUnreleased
		}
		return c
	case unreleased:
		c := withEpoch(g.TargetEpoch)
		c.State, c.Assigned = MemberUnreleased, keep
		return c
	}
	c := withEpoch(g.TargetEpoch)
	c.State, c.Assigned = MemberStable, keep
	return c
}

// ownsAny reports whether owned overlaps set; a nil owned (the member did
// not say) counts as owning all of it.
func ownsAny(owned, set Assignment) bool {
	if set.count() == 0 {
		return false
	}
	if owned == nil {
		return true
	}
	for _, t := range set {
		for _, p := range t.Partitions {
			if owned.Has(t.TopicID, p) {
				return true
			}
		}
	}
	return false
}

func ownsUnsubscribed(a Assignment, subscribed map[[16]byte]bool) bool {
	for _, t := range a {
		if !subscribed[t.TopicID] {
			return true
		}
	}
	return false
}

func union(a, b Assignment) Assignment {
	out := map[[16]byte][]int32{}
	for _, x := range []Assignment{a, b} {
		for _, t := range x {
			out[t.TopicID] = append(out[t.TopicID], t.Partitions...)
		}
	}
	for id := range out {
		slices.Sort(out[id])
		out[id] = slices.Compact(out[id])
	}
	return AssignmentFrom(out)
}
