package share

// The share group's events (observe.GroupEvents, protocol "share";
// grouptype's events.go says what the types share): MemberJoined for a
// member's first heartbeat, MemberLeft for a heartbeat with epoch -1,
// MemberExpired when its session runs out; RebalanceStarted when the
// group epoch is bumped, RebalanceCompleted when the target assignment
// catches up with it (in the same heartbeat, or at once when the last
// member leaves): members take their targets at once, so the one phase a
// share group's rebalance has is the assignment, which is done in the
// heartbeat that finds it due. PartitionsMoved counts the (partition,
// member) pairs of the new targets that the old ones did not have: a
// share group's partition may have several members.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/observe"
)

// rebalance is a share group's rebalance story: its Before is the targets
// by member when it started.
type rebalance = grouptype.Rebalance[map[string]Assignment]

// event reports what happened to share group g at now: about member m
// (nil for a completion), for reason.
func (s *Type) event(g *Group, kind observe.GroupEventKind, now time.Time, m *Member, reason string) {
	e := observe.GroupEvent{
		Kind: kind, Tenant: g.Tenant, Group: g.Name, Protocol: grouptype.ProtoShare,
		Generation: g.Epoch, Members: len(g.Members), Reason: reason, At: now,
	}
	if m != nil {
		e.Member = m.ID
	}
	if kind == observe.RebalanceCompleted {
		r := g.rebalance
		g.rebalance = nil
		if r.Complete(&e, now) {
			e.PartitionsMoved = moved(r.Before, g.Target)
		}
	}
	s.report(e)
}

// started reports that g started a rebalance at now (its epoch was just
// bumped); one under way goes on, keeping its story.
func (s *Type) started(g *Group, now time.Time, t grouptype.Trigger, reason string, before map[string]Assignment) {
	if g.rebalance == nil {
		g.rebalance = &rebalance{Since: now, Why: t, Phase: grouptype.PhaseAssignment, PhaseAt: now, Before: before}
	}
	s.report(observe.GroupEvent{
		Kind: observe.RebalanceStarted, Tenant: g.Tenant, Group: g.Name, Protocol: grouptype.ProtoShare,
		Generation: g.Epoch, Members: len(g.Members), Reason: reason, At: now,
		Cause: t.Cause, Member: t.Member,
	})
}

// completed reports the end of g's rebalance, if one is under way.
func (s *Type) completed(g *Group, now time.Time) {
	if g.rebalance != nil {
		s.event(g, observe.RebalanceCompleted, now, nil, "")
	}
}

// targetsBefore returns g's targets, to count what a rebalance about to
// start moves; nil if one is under way already (it keeps its own).
func (g *Group) targetsBefore() map[string]Assignment {
	if g.rebalance != nil {
		return nil
	}
	out := make(map[string]Assignment, len(g.Target))
	for id, a := range g.Target {
		out[id] = a // targets are replaced, never changed in place
	}
	return out
}

// moved counts the (partition, member) pairs of now that before lacks.
func moved(before, now map[string]Assignment) int {
	if before == nil {
		return -1
	}
	n := 0
	for id, a := range now { // a count: the order does not matter
		for _, t := range a {
			for _, p := range t.Partitions {
				if !before[id].Has(t.TopicID, p) {
					n++
				}
			}
		}
	}
	return n
}
