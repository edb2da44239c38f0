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

	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The protocols, as GroupEvent.Protocol names them.
const (
	protoClassic  = "classic"
	protoConsumer = "consumer"
)

// phase is a phase of a rebalance, as observe.Phases names them.
type phase uint8

const (
	phaseJoin       phase = iota // classic: PreparingRebalance
	phaseSync                    // classic: CompletingRebalance; consumer: reconciliation
	phaseAssignment              // consumer: the target lags the group epoch
	phaseRevocation              // consumer: a member still owns what its target moved
	phases
)

// trigger is why a rebalance starts, and which member (if one) made it.
type trigger struct {
	cause            observe.Cause
	member, instance string
}

func classicTrigger(c observe.Cause, m *member) trigger {
	t := trigger{cause: c}
	if m != nil {
		t.member, t.instance = m.id, orEmpty(m.instance)
	}
	return t
}

func consumerTrigger(c observe.Cause, m *consumerMember) trigger {
	t := trigger{cause: c}
	if m != nil {
		t.member, t.instance = m.id, orEmpty(m.instance)
	}
	return t
}

// owner names who owns a partition across a rebalance: a static member by
// its instance id, which a new instance keeps, others by member id.
type owner struct {
	static bool
	id     string
}

func ownerOf(instance *string, memberID string) owner {
	if instance != nil {
		return owner{true, *instance}
	}
	return owner{false, memberID}
}

// rebalance is a group's soft record of the rebalance under way (nil when
// none): when it started, why, the time spent in each phase, and the
// assignment before it. Memory only (see the top of this file).
type rebalance struct {
	since time.Time // the first start; zero: before the shard loaded, and nothing else is known
	why   trigger   // the first start's
	// phase is the phase the group is in since phaseAt; spent the time
	// of the phases before.
	phase   phase
	phaseAt time.Time
	spent   [phases]time.Duration
	// The assignment before the rebalance: a classic group's record at
	// the first start (nil: none yet), a consumer group's targets by
	// owner (nil: not known).
	classicBefore  *record.ClassicGroup
	consumerBefore map[owner]tps
}

// enter notes the group entering phase p at now.
func (r *rebalance) enter(p phase, now time.Time) {
	if r == nil || r.since.IsZero() {
		return
	}
	r.spent[r.phase] += now.Sub(r.phaseAt)
	r.phase, r.phaseAt = p, now
}

// complete fills in a completion's duration, phases, cause and who, and
// reports whether they are known: not for a rebalance that began before
// the shard loaded (Duration 0, PartitionsMoved -1).
func (r *rebalance) complete(e *observe.GroupEvent, now time.Time) bool {
	if r == nil || r.since.IsZero() {
		e.PartitionsMoved = -1
		return false
	}
	r.enter(r.phase, now)
	e.Duration = now.Sub(r.since)
	e.Phases = observe.Phases{
		Join: r.spent[phaseJoin], Sync: r.spent[phaseSync],
		Assignment: r.spent[phaseAssignment], Revocation: r.spent[phaseRevocation],
	}
	e.Cause, e.Member, e.InstanceID = r.why.cause, r.why.member, r.why.instance
	return true
}

// report adds an event to the output.
func (s *Shard) report(e observe.GroupEvent) {
	s.out.Events = append(s.out.Events, e)
}

// classicEvent reports what happened to classic group g at now: about
// member m (nil for a completion), for reason. A completion carries the
// rebalance's story and ends it.
func (s *Shard) classicEvent(g *classicGroup, kind observe.GroupEventKind, now time.Time, m *member, reason string) {
	e := observe.GroupEvent{
		Kind: kind, Tenant: g.tenant, Group: g.name, Protocol: protoClassic,
		Generation: g.generation, Members: len(g.members), Reason: reason, At: now,
	}
	if m != nil {
		e.Member, e.InstanceID = m.id, orEmpty(m.instance)
	}
	if kind == observe.RebalanceCompleted {
		r := g.rebalance
		g.rebalance = nil
		if r.complete(&e, now) {
			e.PartitionsMoved = classicMoved(r.classicBefore, g)
		}
		e.Leader = g.leader
	}
	s.report(e)
}

// classicStarted reports that classic group g started a rebalance at now
// (it has just entered PreparingRebalance), naming the generation being
// formed; a rebalance already under way goes on, keeping its story.
func (s *Shard) classicStarted(g *classicGroup, now time.Time, t trigger, reason string) {
	if g.rebalance == nil {
		g.rebalance = &rebalance{since: now, why: t, phase: phaseJoin, phaseAt: now, classicBefore: g.committed}
	}
	s.report(observe.GroupEvent{
		Kind: observe.RebalanceStarted, Tenant: g.tenant, Group: g.name, Protocol: protoClassic,
		Generation: g.generation + 1, Members: len(g.members), Reason: reason, At: now,
		Cause: t.cause, Member: t.member, InstanceID: t.instance,
	})
}

// classicPhase is the phase of a rebalance a classic group in state st is
// in.
func classicPhase(st state) phase {
	if st == preparingRebalance {
		return phaseJoin
	}
	return phaseSync
}

// classicMoved counts the partitions moved (see the top of this file)
// from before, the group's record when the rebalance started, to the
// members' assignments now.
func classicMoved(before *record.ClassicGroup, g *classicGroup) int {
	if len(g.members) == 0 {
		return 0
	}
	if g.protocolType != "consumer" {
		return -1
	}
	prev := map[assigned]owner{}
	if before != nil && len(before.Members) > 0 {
		if before.ProtocolType != "consumer" {
			return -1
		}
		for _, m := range before.Members {
			o := ownerOf(m.InstanceID, m.MemberID)
			if !eachAssigned(m.Assignment, func(a assigned) { prev[a] = o }) {
				return -1
			}
		}
	}
	n := 0
	for _, m := range g.members { // a count: the order does not matter
		o := ownerOf(m.instance, m.id)
		if !eachAssigned(m.assignment, func(a assigned) {
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

// consumerEvent reports what happened to consumer group g at now: about
// member m (nil for a completion), for reason. A completion carries the
// rebalance's story and ends it.
func (s *Shard) consumerEvent(g *consumerGroup, kind observe.GroupEventKind, now time.Time, m *consumerMember, reason string) {
	e := observe.GroupEvent{
		Kind: kind, Tenant: g.tenant, Group: g.name, Protocol: protoConsumer,
		Generation: g.epoch, Members: g.present(), Reason: reason, At: now,
	}
	if m != nil {
		e.Member, e.InstanceID = m.id, orEmpty(m.instance)
	}
	if kind == observe.RebalanceCompleted {
		r := g.rebalance
		g.rebalance = nil
		if r.complete(&e, now) {
			e.PartitionsMoved = consumerMoved(r.consumerBefore, g)
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
		g.rebalance = &rebalance{since: now, why: t, phase: phaseAssignment, phaseAt: now, consumerBefore: before}
	}
	s.report(observe.GroupEvent{
		Kind: observe.RebalanceStarted, Tenant: g.tenant, Group: g.name, Protocol: protoConsumer,
		Generation: g.epoch, Members: g.present(), Reason: reason, At: now,
		Cause: t.cause, Member: t.member, InstanceID: t.instance,
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
	return owner{false, id}
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
	g.rebalance.enter(g.consumerPhase(), now)
	if !g.reconciling() {
		s.consumerEvent(g, observe.RebalanceCompleted, now, nil, "")
	}
}
