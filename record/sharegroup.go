package record

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Share group records (kinds 50–59): a share group's membership and
// assignment (KIP-932), written by the group shard that owns the group, as
// Kafka's group coordinator writes its share-group records to
// __consumer_offsets. They mirror Kafka's ShareGroupMetadata (Kafka's
// record type 11), ShareGroupMemberMetadata (10),
// ShareGroupTargetAssignmentMetadata (12), ShareGroupTargetAssignmentMember
// (13), ShareGroupCurrentMemberAssignment (14) and
// ShareGroupStatePartitionMetadata (15); Kafka's numbers 9–15 are taken
// here by the assigner's and the offsets topic's records, and 40–49 by the
// share-partition state (sharestate.go), so these take 50 up. Keys sort
// the group's epoch first, which is the order replay needs: a member's
// records attach to the group the epoch record made.
//
// Group-level records are keyed by GroupKey.KindKey, member-level ones by
// MemberKey.
const (
	// KindShareGroup is a share group's id and epoch (Kafka's
	// ShareGroupMetadata).
	KindShareGroup Kind = 50
	// KindShareMember is a share group member's metadata: its
	// subscription and client details (ShareGroupMemberMetadata).
	KindShareMember Kind = 51
	// KindShareTargetEpoch is the epoch of a share group's target
	// assignment (ShareGroupTargetAssignmentMetadata).
	KindShareTargetEpoch Kind = 52
	// KindShareTarget is one member's part of the target assignment
	// (ShareGroupTargetAssignmentMember).
	KindShareTarget Kind = 53
	// KindShareCurrent is a member's current assignment and epochs
	// (ShareGroupCurrentMemberAssignment).
	KindShareCurrent Kind = 54
	// KindShareGroupPartitions is the partitions a share group may hold
	// share-partition state on, and those whose state is to be deleted
	// (ShareGroupStatePartitionMetadata).
	KindShareGroupPartitions Kind = 55
)

// IsShareGroupKind reports whether kind is a share group record.
func IsShareGroupKind(kind Kind) bool {
	return kind >= KindShareGroup && kind <= KindShareGroupPartitions
}

// ShareGroup is a share group's epoch, as Kafka's ShareGroupMetadataValue,
// plus Cohort's stable group id: the fields, and so the value, of a
// consumer group's (ConsumerGroup), as Kafka's two values agree.
type ShareGroup = ConsumerGroup

// DecodeShareGroup decodes a ShareGroup value.
func DecodeShareGroup(v []byte) (ShareGroup, error) { return DecodeConsumerGroup(v) }

// ShareMember is a share group member's metadata, as Kafka's
// ShareGroupMemberMetadataValue.
type ShareMember struct {
	RackID     *string
	ClientID   string
	ClientHost string
	// Topics are the subscribed topic names, sorted.
	Topics []string
}

// Encode returns the value's bytes.
func (m ShareMember) Encode() []byte {
	b := []byte{valueVersion1}
	b = kbin.AppendCompactNullableString(b, m.RackID)
	b = kbin.AppendCompactString(b, m.ClientID)
	b = kbin.AppendCompactString(b, m.ClientHost)
	b = kbin.AppendCompactArrayLen(b, len(m.Topics))
	for _, t := range m.Topics {
		b = kbin.AppendCompactString(b, t)
	}
	return b
}

// DecodeShareMember decodes a ShareMember value.
func DecodeShareMember(v []byte) (ShareMember, error) {
	var m ShareMember
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return m, err
	}
	m.RackID = r.CompactNullableString()
	m.ClientID = r.CompactString()
	m.ClientHost = r.CompactString()
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src) {
		return m, fmt.Errorf("%w: share member with %d topics in %d bytes", ErrCorrupt, n, len(r.Src))
	}
	for range n {
		m.Topics = append(m.Topics, r.CompactString())
	}
	return m, complete(r, "share member")
}

// ShareTargetEpoch is the epoch of a share group's target assignment, as
// Kafka's ShareGroupTargetAssignmentMetadataValue.
type ShareTargetEpoch struct {
	Epoch int32
}

// Encode returns the value's bytes.
func (t ShareTargetEpoch) Encode() []byte {
	return kbin.AppendInt32([]byte{valueVersion1}, t.Epoch)
}

// DecodeShareTargetEpoch decodes a ShareTargetEpoch value.
func DecodeShareTargetEpoch(v []byte) (ShareTargetEpoch, error) {
	var t ShareTargetEpoch
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return t, err
	}
	t.Epoch = r.Int32()
	return t, complete(r, "share target epoch")
}

// ShareTarget is one member's target assignment, as Kafka's
// ShareGroupTargetAssignmentMemberValue: topics by id, partitions
// ascending; the value of a consumer group member's (ConsumerTarget), as
// Kafka's two values agree.
type ShareTarget = ConsumerTarget

// DecodeShareTarget decodes a ShareTarget value.
func DecodeShareTarget(v []byte) (ShareTarget, error) { return DecodeConsumerTarget(v) }

// ShareCurrent is a share group member's epochs and assignment, as
// Kafka's ShareGroupCurrentMemberAssignmentValue. A share member takes its
// target at once (no revocation step), so State is always 0 (stable) as
// Kafka writes it; it is kept for the format's sake.
type ShareCurrent struct {
	MemberEpoch, PreviousMemberEpoch int32
	State                            int8
	Assigned                         []TopicPartitions
}

// Encode returns the value's bytes.
func (c ShareCurrent) Encode() []byte {
	b := []byte{valueVersion1}
	b = kbin.AppendInt32(b, c.MemberEpoch)
	b = kbin.AppendInt32(b, c.PreviousMemberEpoch)
	b = kbin.AppendInt8(b, c.State)
	return appendTopicPartitions(b, c.Assigned)
}

// DecodeShareCurrent decodes a ShareCurrent value.
func DecodeShareCurrent(v []byte) (ShareCurrent, error) {
	var c ShareCurrent
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return c, err
	}
	c.MemberEpoch = r.Int32()
	c.PreviousMemberEpoch = r.Int32()
	c.State = r.Int8()
	if c.Assigned, err = readTopicPartitions(r); err != nil {
		return c, err
	}
	return c, complete(r, "share current assignment")
}

// ShareGroupPartitions is what share-partition state a share group may
// have, as Kafka's ShareGroupStatePartitionMetadataValue: the partitions
// being initialized, those initialized, and those whose state is to be
// deleted. It is keyed by the group's name and outlives the group while
// Deleting is not empty: a deleted group's state is dropped by the
// share-state shards after the group is gone (the host confirms it).
//
// Cohort's share-partition state is initialized lazily, by the first
// ShareFetch of a partition (coordinator/sharestate's NextCmd), so
// Initializing stays empty and Initialized lists every partition the
// group's target assignment ever gave a member: every partition whose
// state may exist. Deleting names partitions, not only topics as Kafka's
// TopicInfo does, because each share-partition state is a key of its own
// to delete, and the topic may have shrunk or gone by then.
type ShareGroupPartitions struct {
	Initializing, Initialized, Deleting []ShareStateTopic
}

// ShareStateTopic is one topic of a ShareGroupPartitions list.
type ShareStateTopic struct {
	TopicID [16]byte
	// Name is the topic's name when it was listed, for operators.
	Name       string
	Partitions []int32 // ascending
	// Timestamp is when the topic was added to the list (Unix ms;
	// Kafka's CreateTimestamp).
	Timestamp int64
}

// Encode returns the value's bytes.
func (p ShareGroupPartitions) Encode() []byte {
	b := []byte{valueVersion1}
	for _, l := range [][]ShareStateTopic{p.Initializing, p.Initialized, p.Deleting} {
		b = kbin.AppendCompactArrayLen(b, len(l))
		for _, t := range l {
			b = kbin.AppendUuid(b, t.TopicID)
			b = kbin.AppendCompactString(b, t.Name)
			b = kbin.AppendCompactArrayLen(b, len(t.Partitions))
			for _, p := range t.Partitions {
				b = kbin.AppendInt32(b, p)
			}
			b = kbin.AppendInt64(b, t.Timestamp)
		}
	}
	return b
}

// DecodeShareGroupPartitions decodes a ShareGroupPartitions value.
func DecodeShareGroupPartitions(v []byte) (ShareGroupPartitions, error) {
	var p ShareGroupPartitions
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return p, err
	}
	for _, l := range []*[]ShareStateTopic{&p.Initializing, &p.Initialized, &p.Deleting} {
		n := r.CompactArrayLen()
		// A topic takes at least 26 bytes and a partition 4: bounds
		// before allocating.
		if n < 0 || int(n) > len(r.Src)/26 {
			return p, fmt.Errorf("%w: share group partitions with %d topics in %d bytes", ErrCorrupt, n, len(r.Src))
		}
		for range n {
			t := ShareStateTopic{TopicID: r.Uuid(), Name: r.CompactString()}
			k := r.CompactArrayLen()
			if k < 0 || int(k) > len(r.Src)/4 {
				return p, fmt.Errorf("%w: %d partitions in %d bytes", ErrCorrupt, k, len(r.Src))
			}
			t.Partitions = make([]int32, k)
			for i := range t.Partitions {
				t.Partitions[i] = r.Int32()
			}
			t.Timestamp = r.Int64()
			*l = append(*l, t)
		}
	}
	return p, complete(r, "share group partitions")
}
