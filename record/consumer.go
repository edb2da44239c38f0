package record

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// ConsumerGroup is a KIP-848 consumer group's epoch, as Kafka's
// ConsumerGroupMetadataValue, plus Cohort's stable group id.
type ConsumerGroup struct {
	// ID is the group's stable id, cgp_<ULID>.
	ID string
	// Epoch is the group epoch: it advances when membership,
	// subscriptions or the subscribed topics' partitions change.
	Epoch int32
	// MetadataHash summarises the subscribed topics (ids and partition
	// counts) at Epoch, so that a change is noticed across a restart.
	MetadataHash uint64
}

// Encode returns the value's bytes.
func (g ConsumerGroup) Encode() []byte {
	b := []byte{valueVersion1}
	b = kbin.AppendCompactString(b, g.ID)
	b = kbin.AppendInt32(b, g.Epoch)
	return kbin.AppendInt64(b, int64(g.MetadataHash))
}

// DecodeConsumerGroup decodes a ConsumerGroup value.
func DecodeConsumerGroup(v []byte) (ConsumerGroup, error) {
	var g ConsumerGroup
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return g, err
	}
	g.ID = r.CompactString()
	g.Epoch = r.Int32()
	g.MetadataHash = uint64(r.Int64())
	return g, complete(r, "consumer group")
}

// ConsumerMember is a consumer group member's metadata, as Kafka's
// ConsumerGroupMemberMetadataValue.
type ConsumerMember struct {
	InstanceID *string
	RackID     *string
	ClientID   string
	ClientHost string
	// Topics are the subscribed topic names, sorted.
	Topics []string
	// Regex is the RE2 subscription pattern, "" for none.
	Regex            string
	RebalanceTimeout int32 // ms
	// Assignor is the server assignor the member asked for, "" for none.
	Assignor string
	// Classic is set for a member that speaks the classic protocol inside
	// the consumer group (a mixed group, KIP-848's online migration):
	// Kafka's ClassicMemberMetadata. Nil for a consumer-protocol member.
	// A value with it is version 2; without it, version 1 as before.
	Classic *ClassicMeta
}

// ClassicMeta is a classic member's part of its consumer-group member
// record.
type ClassicMeta struct {
	SessionTimeout int32 // ms, as its last JoinGroup asked
	// Protocols are its JoinGroup's protocols, all of them, in its order
	// of preference.
	Protocols []ClassicProtocol
}

// ClassicProtocol is one protocol of a classic member's JoinGroup.
type ClassicProtocol struct {
	Name     string
	Metadata []byte
}

// Encode returns the value's bytes.
func (m ConsumerMember) Encode() []byte {
	b := []byte{valueVersion1}
	b = kbin.AppendCompactNullableString(b, m.InstanceID)
	b = kbin.AppendCompactNullableString(b, m.RackID)
	b = kbin.AppendCompactString(b, m.ClientID)
	b = kbin.AppendCompactString(b, m.ClientHost)
	b = kbin.AppendCompactArrayLen(b, len(m.Topics))
	for _, t := range m.Topics {
		b = kbin.AppendCompactString(b, t)
	}
	b = kbin.AppendCompactString(b, m.Regex)
	b = kbin.AppendInt32(b, m.RebalanceTimeout)
	b = kbin.AppendCompactString(b, m.Assignor)
	if c := m.Classic; c != nil {
		b[0] = valueVersion2
		b = kbin.AppendInt32(b, c.SessionTimeout)
		b = kbin.AppendCompactArrayLen(b, len(c.Protocols))
		for _, p := range c.Protocols {
			b = kbin.AppendCompactString(b, p.Name)
			b = kbin.AppendCompactBytes(b, p.Metadata)
		}
	}
	return b
}

// DecodeConsumerMember decodes a ConsumerMember value.
func DecodeConsumerMember(v []byte) (ConsumerMember, error) {
	var m ConsumerMember
	version := byte(0)
	if len(v) > 0 {
		version = v[0]
	}
	if version == valueVersion2 {
		v = append([]byte{valueVersion1}, v[1:]...) // the same fields, then more
	}
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return m, err
	}
	m.InstanceID = r.CompactNullableString()
	m.RackID = r.CompactNullableString()
	m.ClientID = r.CompactString()
	m.ClientHost = r.CompactString()
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src) {
		return m, fmt.Errorf("%w: consumer member with %d topics in %d bytes", ErrCorrupt, n, len(r.Src))
	}
	for range n {
		m.Topics = append(m.Topics, r.CompactString())
	}
	m.Regex = r.CompactString()
	m.RebalanceTimeout = r.Int32()
	m.Assignor = r.CompactString()
	if version == valueVersion2 {
		c := &ClassicMeta{SessionTimeout: r.Int32()}
		n := r.CompactArrayLen()
		// A protocol takes at least two bytes.
		if n < 0 || int(n) > len(r.Src)/2 {
			return m, fmt.Errorf("%w: classic member with %d protocols in %d bytes", ErrCorrupt, n, len(r.Src))
		}
		for range n {
			c.Protocols = append(c.Protocols, ClassicProtocol{Name: r.CompactString(), Metadata: r.CompactBytes()})
		}
		m.Classic = c
	}
	return m, complete(r, "consumer member")
}

// ConsumerTargetEpoch is the epoch of a consumer group's target
// assignment and when it was computed, as Kafka's
// ConsumerGroupTargetAssignmentMetadataValue.
type ConsumerTargetEpoch struct {
	Epoch int32
	// Timestamp is when the assignor ran (Unix ms); 0 lets the next
	// computation run at once.
	Timestamp int64
}

// Encode returns the value's bytes.
func (t ConsumerTargetEpoch) Encode() []byte {
	b := []byte{valueVersion1}
	b = kbin.AppendInt32(b, t.Epoch)
	return kbin.AppendInt64(b, t.Timestamp)
}

// DecodeConsumerTargetEpoch decodes a ConsumerTargetEpoch value.
func DecodeConsumerTargetEpoch(v []byte) (ConsumerTargetEpoch, error) {
	var t ConsumerTargetEpoch
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return t, err
	}
	t.Epoch = r.Int32()
	t.Timestamp = r.Int64()
	return t, complete(r, "consumer target epoch")
}

// TopicPartitions is one topic's partitions in an assignment, by topic id,
// partitions ascending.
type TopicPartitions struct {
	TopicID    [16]byte
	Partitions []int32
}

func appendTopicPartitions(b []byte, tps []TopicPartitions) []byte {
	b = kbin.AppendCompactArrayLen(b, len(tps))
	for _, tp := range tps {
		b = kbin.AppendUuid(b, tp.TopicID)
		b = kbin.AppendCompactArrayLen(b, len(tp.Partitions))
		for _, p := range tp.Partitions {
			b = kbin.AppendInt32(b, p)
		}
	}
	return b
}

func readTopicPartitions(r *kbin.Reader) ([]TopicPartitions, error) {
	n := r.CompactArrayLen()
	// A topic takes at least 17 bytes and a partition 4: bounds before
	// allocating, so a corrupt count cannot ask for gigabytes.
	if n < 0 || int(n) > len(r.Src)/17 {
		return nil, fmt.Errorf("%w: %d topics in %d bytes", ErrCorrupt, n, len(r.Src))
	}
	var out []TopicPartitions
	for range n {
		tp := TopicPartitions{TopicID: r.Uuid()}
		k := r.CompactArrayLen()
		if k < 0 || int(k) > len(r.Src)/4 {
			return nil, fmt.Errorf("%w: %d partitions in %d bytes", ErrCorrupt, k, len(r.Src))
		}
		tp.Partitions = make([]int32, k)
		for i := range tp.Partitions {
			tp.Partitions[i] = r.Int32()
		}
		out = append(out, tp)
	}
	return out, nil
}

// ConsumerTarget is one member's target assignment, as Kafka's
// ConsumerGroupTargetAssignmentMemberValue.
type ConsumerTarget struct {
	Topics []TopicPartitions
}

// Encode returns the value's bytes.
func (t ConsumerTarget) Encode() []byte {
	return appendTopicPartitions([]byte{valueVersion1}, t.Topics)
}

// DecodeConsumerTarget decodes a ConsumerTarget value.
func DecodeConsumerTarget(v []byte) (ConsumerTarget, error) {
	var t ConsumerTarget
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return t, err
	}
	if t.Topics, err = readTopicPartitions(r); err != nil {
		return t, err
	}
	return t, complete(r, "consumer target")
}

// ConsumerCurrent is a member's reconciliation state, as Kafka's
// ConsumerGroupCurrentMemberAssignmentValue.
type ConsumerCurrent struct {
	MemberEpoch, PreviousMemberEpoch int32
	// State is the member state: 0 stable, 1 unrevoked partitions, 2
	// unreleased partitions (Kafka's MemberState values).
	State    int8
	Assigned []TopicPartitions
	// Revoking are the partitions the member must give up before it
	// advances.
	Revoking []TopicPartitions
}

// Encode returns the value's bytes.
func (c ConsumerCurrent) Encode() []byte {
	b := []byte{valueVersion1}
	b = kbin.AppendInt32(b, c.MemberEpoch)
	b = kbin.AppendInt32(b, c.PreviousMemberEpoch)
	b = kbin.AppendInt8(b, c.State)
	b = appendTopicPartitions(b, c.Assigned)
	return appendTopicPartitions(b, c.Revoking)
}

// DecodeConsumerCurrent decodes a ConsumerCurrent value.
func DecodeConsumerCurrent(v []byte) (ConsumerCurrent, error) {
	var c ConsumerCurrent
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
	if c.Revoking, err = readTopicPartitions(r); err != nil {
		return c, err
	}
	return c, complete(r, "consumer current assignment")
}
