package record

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The warm-handoff assigner's records (kafka-assigner's etcd keys
// consumers/{name}, assignments/{topic}/{partition},
// handoffs/{topic}/{partition} and config/topics/{topic}, as Cohort
// records). A group's records use the same GroupKey as Kafka groups; the
// kinds keep them apart.
const (
	// KindAssignerConsumer is a registered consumer: its name and topic.
	KindAssignerConsumer Kind = 9
	// KindAssignerOwner is a partition's owner.
	KindAssignerOwner Kind = 10
	// KindAssignerHandoff is a partition moving from one consumer to
	// another.
	KindAssignerHandoff Kind = 11
	// KindAssignerTopic is a topic's partition count as last seen.
	KindAssignerTopic Kind = 12
)

// AssignerShard is the shard of the warm-handoff assigner's records: its
// own runtime shard, above every group coordinator shard (those are below
// 0x8000), so that neither machine loads the other's records.
const AssignerShard uint16 = 0x8000

// PartitionKey names one partition's record of an assigner group
// (KindAssignerOwner, KindAssignerHandoff).
type PartitionKey struct {
	GroupKey
	Kind      Kind
	Topic     string
	Partition int32
}

// Key encodes the key.
func (k PartitionKey) Key() []byte {
	b := appendKeyString(GroupPrefix(k.Kind, k.GroupKey), k.Topic)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// AssignerConsumer is a registered consumer's record value. Its lease is
// not stored: a consumer's stream does not survive a restart, so every
// consumer gets a fresh lease when its shard loads.
type AssignerConsumer struct {
	Topic string
}

// Encode returns the value's bytes.
func (c AssignerConsumer) Encode() []byte {
	return kbin.AppendCompactString([]byte{valueVersion1}, c.Topic)
}

// DecodeAssignerConsumer decodes an AssignerConsumer value.
func DecodeAssignerConsumer(v []byte) (AssignerConsumer, error) {
	var c AssignerConsumer
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return c, err
	}
	c.Topic = r.CompactString()
	return c, complete(r, "assigner consumer")
}

// AssignerOwner is a partition's owner.
type AssignerOwner struct {
	Owner string
}

// Encode returns the value's bytes.
func (o AssignerOwner) Encode() []byte {
	return kbin.AppendCompactString([]byte{valueVersion1}, o.Owner)
}

// DecodeAssignerOwner decodes an AssignerOwner value.
func DecodeAssignerOwner(v []byte) (AssignerOwner, error) {
	var o AssignerOwner
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return o, err
	}
	o.Owner = r.CompactString()
	return o, complete(r, "assigner owner")
}

// AssignerHandoff is a partition moving from From to To: warming until To
// says it is ready, then complete (To owns it) until From says it has
// released it.
type AssignerHandoff struct {
	From, To string
	Complete bool
}

// Encode returns the value's bytes.
func (h AssignerHandoff) Encode() []byte {
	b := kbin.AppendCompactString([]byte{valueVersion1}, h.From)
	b = kbin.AppendCompactString(b, h.To)
	return kbin.AppendBool(b, h.Complete)
}

// DecodeAssignerHandoff decodes an AssignerHandoff value.
func DecodeAssignerHandoff(v []byte) (AssignerHandoff, error) {
	var h AssignerHandoff
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return h, err
	}
	h.From = r.CompactString()
	h.To = r.CompactString()
	h.Complete = readBool(r)
	return h, complete(r, "assigner handoff")
}

// AssignerTopic is a topic's partition count.
type AssignerTopic struct {
	Partitions int32
}

// Encode returns the value's bytes.
func (t AssignerTopic) Encode() []byte {
	return kbin.AppendInt32([]byte{valueVersion1}, t.Partitions)
}

// DecodeAssignerTopic decodes an AssignerTopic value.
func DecodeAssignerTopic(v []byte) (AssignerTopic, error) {
	var t AssignerTopic
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return t, err
	}
	t.Partitions = r.Int32()
	return t, complete(r, "assigner topic")
}
