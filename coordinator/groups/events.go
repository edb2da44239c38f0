package groups

// What happens to groups, for the observer: observe.GroupEvents in the
// output, beside the records, in the order they happen. Each protocol
// builds its events with one helper (classicEvent, consumerEvent), which
// fills the group's identity, generation and member count and keeps the
// rebalance's clock; mixed groups will reuse both.
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

import (
	"time"

	"github.com/cohort-dev/cohort/observe"
)

// The protocols, as GroupEvent.Protocol names them.
const (
	protoClassic  = "classic"
	protoConsumer = "consumer"
)

// rebalanceClock is a group's soft record of the rebalance under way:
// whether there is one, and since when (zero: since before the shard
// loaded).
type rebalanceClock struct {
	on    bool
	since time.Time
}

// start notes a rebalance starting at now, unless one is already under
// way: a rebalance that starts over keeps its first start.
func (c *rebalanceClock) start(now time.Time) {
	if !c.on {
		c.on, c.since = true, now
	}
}

// stop ends the rebalance and returns how long it took (0 if unknown).
func (c *rebalanceClock) stop(now time.Time) time.Duration {
	var d time.Duration
	if c.on && !c.since.IsZero() {
		d = now.Sub(c.since)
	}
	*c = rebalanceClock{}
	return d
}

// report adds an event to the output.
func (s *Shard) report(e observe.GroupEvent) {
	s.out.Events = append(s.out.Events, e)
}

// classicEvent reports what happened to classic group g at now: about
// member m (nil for a rebalance event), for reason. RebalanceStarted names
// the generation being formed.
func (s *Shard) classicEvent(g *classicGroup, kind observe.GroupEventKind, now time.Time, m *member, reason string) {
	e := observe.GroupEvent{
		Kind: kind, Tenant: g.tenant, Group: g.name, Protocol: protoClassic,
		Generation: g.generation, Members: len(g.members), Reason: reason, At: now,
	}
	if m != nil {
		e.Member = m.id
		if m.instance != nil {
			e.InstanceID = *m.instance
		}
	}
	switch kind {
	case observe.RebalanceStarted:
		e.Generation++
		g.rebalance.start(now)
	case observe.RebalanceCompleted:
		e.Duration = g.rebalance.stop(now)
		e.Leader = g.leader
	}
	s.report(e)
}

// consumerEvent reports what happened to consumer group g at now: about
// member m (nil for a rebalance event), for reason. The generation is the
// group epoch (for RebalanceStarted, the one just bumped).
func (s *Shard) consumerEvent(g *consumerGroup, kind observe.GroupEventKind, now time.Time, m *consumerMember, reason string) {
	e := observe.GroupEvent{
		Kind: kind, Tenant: g.tenant, Group: g.name, Protocol: protoConsumer,
		Generation: g.epoch, Members: g.present(), Reason: reason, At: now,
	}
	if m != nil {
		e.Member = m.id
		if m.instance != nil {
			e.InstanceID = *m.instance
		}
	}
	switch kind {
	case observe.RebalanceStarted:
		g.rebalance.start(now)
	case observe.RebalanceCompleted:
		e.Duration = g.rebalance.stop(now)
	}
	s.report(e)
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

// settleConsumer reports the end of g's rebalance once nothing is left to
// reconcile. Handlers call it after anything that may move a member.
func (s *Shard) settleConsumer(g *consumerGroup, now time.Time) {
	if g != nil && g.rebalance.on && !g.reconciling() {
		s.consumerEvent(g, observe.RebalanceCompleted, now, nil, "")
	}
}
