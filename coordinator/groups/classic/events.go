package classic

// The classic group's events (observe.GroupEvents; see package grouptype's
// events.go for where each comes from and the rebalance's story): one
// helper for a rebalance starting (started) and one for the rest (event).

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rebalance is a classic group's rebalance story: its Before is the
// group's record when the rebalance started.
type rebalance = grouptype.Rebalance[*record.ClassicGroup]

// Trigger is a rebalance's trigger by member m (nil: none).
func Trigger(c observe.Cause, m *Member) grouptype.Trigger {
	t := grouptype.Trigger{Cause: c}
	if m != nil {
		t.Member, t.Instance = m.ID, grouptype.OrEmpty(m.Instance)
	}
	return t
}

// Event reports what happened to classic group g at now: about
// member m (nil for a completion), for reason. A completion carries the
// rebalance's story and ends it.
func (s *Type) Event(g *Group, kind observe.GroupEventKind, now time.Time, m *Member, reason string) {
	e := observe.GroupEvent{
		Kind: kind, Tenant: g.Tenant, Group: g.Name, Protocol: grouptype.ProtoClassic,
		Generation: g.Generation, Members: len(g.Members()), Reason: reason, At: now,
	}
	if m != nil {
		e.Member, e.InstanceID = m.ID, grouptype.OrEmpty(m.Instance)
	}
	if kind == observe.RebalanceCompleted {
		var r *rebalance
		if g.ext != nil {
			r, g.ext.rebalance = g.ext.rebalance, nil
		}
		if r.Complete(&e, now) {
			e.PartitionsMoved = classicMoved(r.Before, g)
		}
		e.Leader = g.Leader()
	}
	s.report(e)
}

// started reports that classic group g started a rebalance at now
// (it has just entered PreparingRebalance), naming the generation being
// formed; a rebalance already under way goes on, keeping its story.
func (s *Type) started(g *Group, now time.Time, t grouptype.Trigger, reason string) {
	if x := g.more(); x.rebalance == nil {
		x.rebalance = &rebalance{Since: now, Why: t, Phase: grouptype.PhaseJoin, PhaseAt: now, Before: g.committedPtr()}
	}
	s.report(observe.GroupEvent{
		Kind: observe.RebalanceStarted, Tenant: g.Tenant, Group: g.Name, Protocol: grouptype.ProtoClassic,
		Generation: g.Generation + 1, Members: len(g.Members()), Reason: reason, At: now,
		Cause: t.Cause, Member: t.Member, InstanceID: t.Instance,
	})
}

// classicPhase is the phase of a rebalance a classic group in state st is
// in.
func classicPhase(st State) grouptype.Phase {
	if st == PreparingRebalance {
		return grouptype.PhaseJoin
	}
	return grouptype.PhaseSync
}

// classicMoved counts the partitions moved (see the top of this file)
// from before, the group's record when the rebalance started, to the
// members' assignments now.
func classicMoved(before *record.ClassicGroup, g *Group) int {
	if len(g.Members()) == 0 {
		return 0
	}
	if g.ProtocolType != "consumer" {
		return -1
	}
	prev := map[assigned]grouptype.Owner{}
	if before != nil && len(before.Members) > 0 {
		if before.ProtocolType != "consumer" {
			return -1
		}
		for _, m := range before.Members {
			o := grouptype.OwnerOf(m.InstanceID, m.MemberID)
			if !eachAssigned(m.Assignment, func(a assigned) { prev[a] = o }) {
				return -1
			}
		}
	}
	n := 0
	for _, m := range g.Members() { // a count: the order does not matter
		o := grouptype.OwnerOf(m.Instance, m.ID)
		if !eachAssigned(m.Assignment, func(a assigned) {
			if prev[a] != o {
				n++
			}
		}) {
			return -1
		}
	}
	return n
}

// assigned names a partition in a classic consumer-protocol assignment.
type assigned struct {
	topic string
	p     int32
}

// eachAssigned calls f for each partition of a consumer protocol
// assignment (empty bytes: none), and reports whether it decoded.
func eachAssigned(b []byte, f func(assigned)) bool {
	if len(b) == 0 {
		return true
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return false
	}
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			f(assigned{t.Topic, p})
		}
	}
	return true
}
