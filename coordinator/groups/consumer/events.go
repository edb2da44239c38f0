package consumer

// The consumer group's events (observe.GroupEvents; grouptype's events.go
// says where each comes from and what a rebalance's story holds): one
// helper for a rebalance starting (Started) and one for the rest (Event),
// which mixed groups share; Settle notes a rebalance's phase and reports
// its end.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/observe"
)

// rebalance is a consumer group's rebalance story: its Before is the
// targets by owner when it started.
type rebalance = grouptype.Rebalance[map[grouptype.Owner]Assignment]

// Trigger is a rebalance's trigger by member m (nil: none).
func Trigger(c observe.Cause, m *Member) grouptype.Trigger {
	t := grouptype.Trigger{Cause: c}
	if m != nil {
		t.Member, t.Instance = m.ID, grouptype.OrEmpty(m.Instance)
	}
	return t
}

// Event reports what happened to consumer group g at now: about
// member m (nil for a completion), for reason. A completion carries the
// rebalance's story and ends it.
func (s *Type) Event(g *Group, kind observe.GroupEventKind, now time.Time, m *Member, reason string) {
	e := observe.GroupEvent{
		Kind: kind, Tenant: g.Tenant, Group: g.Name, Protocol: grouptype.ProtoConsumer,
		Generation: g.Epoch, Members: g.Present(), Reason: reason, At: now,
	}
	if m != nil {
		e.Member, e.InstanceID = m.ID, grouptype.OrEmpty(m.Instance)
	}
	if kind == observe.RebalanceCompleted {
		r := g.Rebalance
		g.Rebalance = nil
		if r.Complete(&e, now) {
			e.PartitionsMoved = consumerMoved(r.Before, g)
		}
	}
	s.report(e)
}

// Started reports that consumer group g started a rebalance at
// now (its epoch was just bumped); a rebalance already under way goes on,
// keeping its story. before is the target assignment before the
// rebalance (consumerBefore), for a new one.
func (s *Type) Started(g *Group, now time.Time, t grouptype.Trigger, reason string, before map[grouptype.Owner]Assignment) {
	if g.Rebalance == nil {
		g.Rebalance = &rebalance{Since: now, Why: t, Phase: grouptype.PhaseAssignment, PhaseAt: now, Before: before}
	}
	s.report(observe.GroupEvent{
		Kind: observe.RebalanceStarted, Tenant: g.Tenant, Group: g.Name, Protocol: grouptype.ProtoConsumer,
		Generation: g.Epoch, Members: g.Present(), Reason: reason, At: now,
		Cause: t.Cause, Member: t.Member, InstanceID: t.Instance,
	})
}

// TargetsBefore returns g's target assignment by owner, to count the
// partitions a rebalance about to start moves; nil if one is under way
// already (it keeps its own). Call it before changing the targets: a
// member's removal takes its target with it.
func (g *Group) TargetsBefore() map[grouptype.Owner]Assignment {
	if g.Rebalance != nil {
		return nil
	}
	out := make(map[grouptype.Owner]Assignment, len(g.Target))
	for id, a := range g.Target {
		out[g.owner(id)] = a // targets are replaced, never changed in place
	}
	return out
}

// owner names member id's owner (grouptype.Owner).
func (g *Group) owner(id string) grouptype.Owner {
	if m := g.Members[id]; m != nil {
		return grouptype.OwnerOf(m.Instance, id)
	}
	return grouptype.Owner{ID: id}
}

// consumerMoved counts the partitions moved (see the top of this file)
// from before to g's targets now.
func consumerMoved(before map[grouptype.Owner]Assignment, g *Group) int {
	if before == nil {
		return -1
	}
	prev := map[tp]grouptype.Owner{}
	for o, a := range before {
		for _, at := range a {
			id, ps := at.TopicID, at.Partitions
			for _, p := range ps {
				prev[tp{id, p}] = o
			}
		}
	}
	n := 0
	for id, a := range g.Target { // a count: the order does not matter
		o := g.owner(id)
		for _, at := range a {
			tid, ps := at.TopicID, at.Partitions
			for _, p := range ps {
				if prev[tp{tid, p}] != o {
					n++
				}
			}
		}
	}
	return n
}

// consumerPhase is the phase of its rebalance consumer group g is in:
// assignment while the target lags the group epoch, revocation while a
// member (not one away with epoch -2) still owns a partition its target
// does not give it, else reconciliation (grouptype.PhaseSync).
func (g *Group) consumerPhase() grouptype.Phase {
	if g.TargetEpoch != g.Epoch {
		return grouptype.PhaseAssignment
	}
	for _, m := range g.Members { // any member will do: the order does not matter
		if m.Epoch == LeaveStaticEpoch {
			continue
		}
		if m.Revoking.count() > 0 {
			return grouptype.PhaseRevocation
		}
		// A member at the target epoch holds only its target's
		// partitions; one behind may hold partitions moved away.
		if m.Epoch != g.TargetEpoch && !subset(m.Assigned, g.Target[m.ID]) {
			return grouptype.PhaseRevocation
		}
	}
	return grouptype.PhaseSync
}

// Present counts the consumer group's members as events report them: a
// static member that left for a while (epoch -2) has been reported gone,
// though it keeps its place until its session ends or a new instance
// takes it.
func (g *Group) Present() int {
	n := 0
	for _, m := range g.Members {
		if m.Epoch != LeaveStaticEpoch {
			n++
		}
	}
	return n
}

// Reconciling reports whether a rebalance is under way in the consumer
// group: the target assignment lags the group epoch, or a member has not
// reached it (still revoking, waiting for partitions, or on an older
// epoch). A static member that left for a while (epoch -2) is not waited
// for. It depends on durable state only, so a load derives the same.
func (g *Group) Reconciling() bool {
	if g.TargetEpoch != g.Epoch {
		return true
	}
	for _, m := range g.Members {
		if m.Epoch != LeaveStaticEpoch && (m.Epoch != g.TargetEpoch || m.State != MemberStable) {
			return true
		}
	}
	return false
}

// Settle notes the phase g's rebalance is in, and reports its end
// once nothing is left to reconcile. Handlers call it after anything that
// may move a member.
func (s *Type) Settle(g *Group, now time.Time) {
	if g == nil || g.Rebalance == nil {
		return
	}
	g.Rebalance.Enter(g.consumerPhase(), now)
	if !g.Reconciling() {
		s.Event(g, observe.RebalanceCompleted, now, nil, "")
	}
}
