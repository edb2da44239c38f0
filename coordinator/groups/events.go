package groups

// What happens to groups, for the observer: observe.GroupEvents in the
// output, beside the records, in the order they happen. Each protocol
// builds its events with two helpers, one for a rebalance starting
// (classicStarted, consumerStarted: with its cause and who caused it) and
// one for the rest (classicEvent, consumerEvent), which fill the group's
// identity, generation and member count and keep the rebalance's story;
// mixed groups will reuse them.
//
// Where they come from:
//   - classic (classic*.go): RebalanceStarted when the group enters
//     PreparingRebalance (prepareRebalance, with Kafka's reason strings);
//     RebalanceCompleted when the leader's SyncGroup makes the new
//     generation Stable, or when a join phase ends with no member left
//     (Empty, Members 0); MemberJoined when a member is added (not when
//     it rejoins); MemberLeft on LeaveGroup; MemberExpired when its
//     session (or a new member's join timeout) runs out; MemberFenced when
//     the join phase drops a member that did not rejoin, the sync timer
//     drops one that did not sync, a static member's new instance replaces
//     it, or a join finds the group full. Ids handed out with
//     MEMBER_ID_REQUIRED are not members: nothing is reported for them.
//   - consumer (consumer*.go): RebalanceStarted when the group epoch is
//     bumped; RebalanceCompleted once no rebalance is under way
//     (reconciling); MemberJoined for a member's first heartbeat (epoch
//     0), a static member's new instance, or a static member back after
//     leaving with epoch -2; MemberLeft on a heartbeat with epoch -1 or
//     -2; MemberExpired when its session runs out; MemberFenced when its
//     rebalance timeout runs out before it revoked. A heartbeat answered
//     FENCED_MEMBER_EPOCH removes nobody (as in Kafka, the member rejoins
//     with epoch 0 and keeps its place), so it reports nothing.
//
// Replay and Loaded report nothing about the state they restore. The one
// event a load can report is a new rebalance: a classic group loaded over
// group.max.size starts one (as Kafka does). A consumer group loaded in
// the middle of a rebalance reports its completion later, with Duration 0:
// when it started is not durable.
//
// A rebalance's story (rebalance, below) is kept on the group while it
// runs, in memory only: why it started and who started it (the cause of
// its first start: a rebalance that starts over keeps it), the time spent
// in each phase, and the assignment before it, to count the partitions
// that moved. None of it is durable and none of it is derived from
// records: it is soft state, lost when the shard reloads (a classic
// rebalance is then forgotten; a consumer group's completes with
// CauseUnknown, no phases and PartitionsMoved -1). Writing it as records
// would cost every rebalance writes for a diagnostic.
//
// Partitions moved: the partitions that, after the rebalance, have an
// owner other than the one they had before (none counts as other), an
// owner being a member's group.instance.id if it has one, else its member
// id, so that a static member's new instance keeps its partitions. A
// partition given up and not reassigned does not count; the first
// rebalance of a group counts every partition it assigns; a classic
// cooperative rebalance counts each partition once, in the round that
// gives it to its new owner (the round that revokes it counts nothing).
// Classic groups compare the members' assignments, decoded as the
// consumer protocol's (kmsg.ConsumerMemberAssignment), with those of the
// group's record when the rebalance started: -1 for another protocol
// type, or an assignment that does not decode. Consumer groups compare
// target assignments.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/observe"
)

// The shared parts of a rebalance's story (grouptype's events.go).
type (
	phase   = grouptype.Phase
	trigger = grouptype.Trigger
	owner   = grouptype.Owner
)

const (
	protoConsumer   = grouptype.ProtoConsumer
	protoClassic    = grouptype.ProtoClassic
	phaseSync       = grouptype.PhaseSync
	phaseAssignment = grouptype.PhaseAssignment
	phaseRevocation = grouptype.PhaseRevocation
)

var ownerOf = grouptype.OwnerOf

// rebalance is a consumer group's rebalance story: its Before is the
// targets by owner when it started.
type rebalance = grouptype.Rebalance[map[owner]tps]

func consumerTrigger(c observe.Cause, m *consumerMember) trigger {
	t := trigger{Cause: c}
	if m != nil {
		t.Member, t.Instance = m.id, orEmpty(m.instance)
	}
	return t
}

// consumerEvent reports what happened to consumer group g at now: about
// member m (nil for a completion), for reason. A completion carries the
// rebalance's story and ends it.
func (s *Shard) consumerEvent(g *consumerGroup, kind observe.GroupEventKind, now time.Time, m *consumerMember, reason string) {
	e := observe.GroupEvent{
		Kind: kind, Tenant: g.Tenant, Group: g.Name, Protocol: protoConsumer,
		Generation: g.epoch, Members: g.present(), Reason: reason, At: now,
	}
	if m != nil {
		e.Member, e.InstanceID = m.id, orEmpty(m.instance)
	}
	if kind == observe.RebalanceCompleted {
		r := g.rebalance
		g.rebalance = nil
		if r.Complete(&e, now) {
			e.PartitionsMoved = consumerMoved(r.Before, g)
		}
	}
	s.report(e)
}

// consumerStarted reports that consumer group g started a rebalance at
// now (its epoch was just bumped); a rebalance already under way goes on,
// keeping its story. before is the target assignment before the
// rebalance (consumerBefore), for a new one.
func (s *Shard) consumerStarted(g *consumerGroup, now time.Time, t trigger, reason string, before map[owner]tps) {
	if g.rebalance == nil {
		g.rebalance = &rebalance{Since: now, Why: t, Phase: phaseAssignment, PhaseAt: now, Before: before}
	}
	s.report(observe.GroupEvent{
		Kind: observe.RebalanceStarted, Tenant: g.Tenant, Group: g.Name, Protocol: protoConsumer,
		Generation: g.epoch, Members: g.present(), Reason: reason, At: now,
		Cause: t.Cause, Member: t.Member, InstanceID: t.Instance,
	})
}

// consumerBefore returns g's target assignment by owner, to count the
// partitions a rebalance about to start moves; nil if one is under way
// already (it keeps its own). Call it before changing the targets: a
// member's removal takes its target with it.
func (g *consumerGroup) consumerBefore() map[owner]tps {
	if g.rebalance != nil {
		return nil
	}
	out := make(map[owner]tps, len(g.target))
	for id, a := range g.target {
		out[g.owner(id)] = a // targets are replaced, never changed in place
	}
	return out
}

// owner names member id's owner (see owner).
func (g *consumerGroup) owner(id string) owner {
	if m := g.members[id]; m != nil {
		return ownerOf(m.instance, id)
	}
	return owner{ID: id}
}

// consumerMoved counts the partitions moved (see the top of this file)
// from before to g's targets now.
func consumerMoved(before map[owner]tps, g *consumerGroup) int {
	if before == nil {
		return -1
	}
	prev := map[tp]owner{}
	for o, a := range before {
		for _, at := range a {
			id, ps := at.TopicID, at.Partitions
			for _, p := range ps {
				prev[tp{id, p}] = o
			}
		}
	}
	n := 0
	for id, a := range g.target { // a count: the order does not matter
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
// does not give it, else reconciliation (phaseSync).
func (g *consumerGroup) consumerPhase() phase {
	if g.targetEpoch != g.epoch {
		return phaseAssignment
	}
	for _, m := range g.members { // any member will do: the order does not matter
		if m.epoch == leaveStaticEpoch {
			continue
		}
		if m.revoking.count() > 0 {
			return phaseRevocation
		}
		// A member at the target epoch holds only its target's
		// partitions; one behind may hold partitions moved away.
		if m.epoch != g.targetEpoch && !subset(m.assigned, g.target[m.id]) {
			return phaseRevocation
		}
	}
	return phaseSync
}

// present counts the consumer group's members as events report them: a
// static member that left for a while (epoch -2) has been reported gone,
// though it keeps its place until its session ends or a new instance
// takes it.
func (g *consumerGroup) present() int {
	n := 0
	for _, m := range g.members {
		if m.epoch != leaveStaticEpoch {
			n++
		}
	}
	return n
}

// reconciling reports whether a rebalance is under way in the consumer
// group: the target assignment lags the group epoch, or a member has not
// reached it (still revoking, waiting for partitions, or on an older
// epoch). A static member that left for a while (epoch -2) is not waited
// for. It depends on durable state only, so a load derives the same.
func (g *consumerGroup) reconciling() bool {
	if g.targetEpoch != g.epoch {
		return true
	}
	for _, m := range g.members {
		if m.epoch != leaveStaticEpoch && (m.epoch != g.targetEpoch || m.state != memberStable) {
			return true
		}
	}
	return false
}

// settleConsumer notes the phase g's rebalance is in, and reports its end
// once nothing is left to reconcile. Handlers call it after anything that
// may move a member.
func (s *Shard) settleConsumer(g *consumerGroup, now time.Time) {
	if g == nil || g.rebalance == nil {
		return
	}
	g.rebalance.Enter(g.consumerPhase(), now)
	if !g.reconciling() {
		s.consumerEvent(g, observe.RebalanceCompleted, now, nil, "")
	}
}
