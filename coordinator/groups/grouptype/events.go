package grouptype

// What happens to groups, for the observer: observe.GroupEvents in the
// output, beside the records, in the order they happen. Each group type
// builds its events with two helpers, one for a rebalance starting
// (classic's started, the consumer group's: with its cause and who caused
// it) and one for the rest (each type's event), which fill the group's
// identity, generation and member count and keep the rebalance's story
// (Rebalance, below); mixed groups reuse the consumer group's. This file
// holds what the types share.
//
// Where they come from:
//   - classic (package classic): RebalanceStarted when the group enters
//     PreparingRebalance (PrepareRebalance, with Kafka's reason strings);
//     RebalanceCompleted when the leader's SyncGroup makes the new
//     generation Stable, or when a join phase ends with no member left
//     (Empty, Members 0); MemberJoined when a member is added (not when
//     it rejoins); MemberLeft on LeaveGroup; MemberExpired when its
//     session (or a new member's join timeout) runs out; MemberFenced when
//     the join phase drops a member that did not rejoin, the sync timer
//     drops one that did not sync, a static member's new instance replaces
//     it, or a join finds the group full. Ids handed out with
//     MEMBER_ID_REQUIRED are not members: nothing is reported for them.
//   - consumer (groups/consumer*.go): RebalanceStarted when the group epoch is
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
)

// The protocols, as GroupEvent.Protocol names them.
const (
	ProtoClassic  = "classic"
	ProtoConsumer = "consumer"
	ProtoShare    = "share"
)

// Phase is a phase of a rebalance, as observe.Phases names them.
type Phase uint8

// The phases.
const (
	PhaseJoin       Phase = iota // classic: PreparingRebalance
	PhaseSync                    // classic: CompletingRebalance; consumer: reconciliation
	PhaseAssignment              // consumer: the target lags the group epoch
	PhaseRevocation              // consumer: a member still owns what its target moved
	phases
)

// Trigger is why a rebalance starts, and which member (if one) made it.
type Trigger struct {
	Cause            observe.Cause
	Member, Instance string
}

// Owner names who owns a partition across a rebalance: a static member by
// its instance id, which a new instance keeps, others by member id.
type Owner struct {
	Static bool
	ID     string
}

// OwnerOf is the owner of a member's partitions.
func OwnerOf(instance *string, memberID string) Owner {
	if instance != nil {
		return Owner{true, *instance}
	}
	return Owner{false, memberID}
}

// Rebalance is a group's soft record of the rebalance under way (nil when
// none): when it started, why, the time spent in each phase, and the
// assignment before it, of the group type's kind B. Memory only (see the
// top of this file).
type Rebalance[B any] struct {
	Since time.Time // the first start; zero: before the shard loaded, and nothing else is known
	Why   Trigger   // the first start's
	// Phase is the phase the group is in since PhaseAt; spent the time
	// of the phases before.
	Phase   Phase
	PhaseAt time.Time
	spent   [phases]time.Duration
	// Before is the assignment before the rebalance: a classic group's
	// record at the first start (nil: none yet), a consumer group's
	// targets by owner (nil: not known).
	Before B
}

// Enter notes the group entering phase p at now.
func (r *Rebalance[B]) Enter(p Phase, now time.Time) {
	if r == nil || r.Since.IsZero() {
		return
	}
	r.spent[r.Phase] += now.Sub(r.PhaseAt)
	r.Phase, r.PhaseAt = p, now
}

// Complete fills in a completion's duration, phases, cause and who, and
// reports whether they are known: not for a rebalance that began before
// the shard loaded (Duration 0, PartitionsMoved -1).
func (r *Rebalance[B]) Complete(e *observe.GroupEvent, now time.Time) bool {
	if r == nil || r.Since.IsZero() {
		e.PartitionsMoved = -1
		return false
	}
	r.Enter(r.Phase, now)
	e.Duration = now.Sub(r.Since)
	e.Phases = observe.Phases{
		Join: r.spent[PhaseJoin], Sync: r.spent[PhaseSync],
		Assignment: r.spent[PhaseAssignment], Revocation: r.spent[PhaseRevocation],
	}
	e.Cause, e.Member, e.InstanceID = r.Why.Cause, r.Why.Member, r.Why.Instance
	return true
}
