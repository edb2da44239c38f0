package offsetstopic

// The KIP-848 consumer group records of __consumer_offsets, which kmsg
// (v1.15) does not have: encoded with kbin's primitives exactly as Apache
// Kafka's group coordinator schemas say
// (group-coordinator/src/main/resources/common/message/ConsumerGroup*.json).
//
// As every coordinator record, a key is its version (int16, which is also
// the record type) then the key's fields; a value is its version (int16)
// then the value's fields. The keys are not flexible (int16-length
// strings); the values are flexible from version 0: compact strings and
// arrays, and a tagged-field section closing every struct.
//
//	key  3 ConsumerGroupMetadataKey                  GroupId
//	key  5 ConsumerGroupMemberMetadataKey            GroupId, MemberId
//	key  6 ConsumerGroupTargetAssignmentMetadataKey  GroupId
//	key  7 ConsumerGroupTargetAssignmentMemberKey    GroupId, MemberId
//	key  8 ConsumerGroupCurrentMemberAssignmentKey   GroupId, MemberId
//
// Type 4, ConsumerGroupPartitionMetadata (the subscribed topics' names,
// ids and partition counts), is not here: Cohort keeps a hash of them in
// the group's record instead, as KIP-1101 does from Kafka 4.1, and
// writes no such record.
//
// Decoders accept unknown tagged fields (a newer writer's) and skip them,
// and refuse trailing bytes.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// ErrMalformed is returned by the decoders for bytes that are not a valid
// record of the type (truncated, a bad length, trailing bytes, a version
// the type does not have).
var ErrMalformed = errors.New("offsetstopic: malformed record")

// Coordinator record types (the key versions) of the KIP-848 records.
const (
	TypeConsumerGroupMetadata                 int16 = 3
	TypeConsumerGroupPartitionMetadata        int16 = 4
	TypeConsumerGroupMemberMetadata           int16 = 5
	TypeConsumerGroupTargetAssignmentMetadata int16 = 6
	TypeConsumerGroupTargetAssignmentMember   int16 = 7
	TypeConsumerGroupCurrentMemberAssignment  int16 = 8
)

// reader wraps kbin.Reader with the checks the schemas need.
type reader struct{ kbin.Reader }

func newReader(b []byte) *reader { return &reader{kbin.Reader{Src: b}} }

func (r *reader) fail() { r.Span(-1) } // marks the reader bad

// version reads the leading version and checks it is want.
func (r *reader) version(want int16) {
	if v := r.Int16(); v != want {
		r.fail()
	}
}

// arrayLen reads a compact array length; a null array reads as empty.
func (r *reader) arrayLen() int {
	n := r.CompactArrayLen()
	if n < -1 {
		r.fail()
		return 0
	}
	return max(int(n), 0)
}

// skipTags reads a tagged-field section, handing fn (if any) every tag
// and its bytes; a tag fn does not know it ignores, so it is skipped.
func (r *reader) skipTags(fn func(tag uint32, b []byte)) {
	n := r.Uvarint()
	var last int64 = -1
	for range n {
		if !r.Ok() {
			return
		}
		tag := r.Uvarint()
		if int64(tag) <= last { // tags are strictly ascending
			r.fail()
			return
		}
		last = int64(tag)
		b := r.Span(int(r.Uvarint()))
		if fn != nil {
			fn(tag, b)
		}
	}
}

func (r *reader) done(what string) error {
	if err := r.Complete(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformed, what, err)
	}
	if len(r.Src) != 0 {
		return fmt.Errorf("%w: %s: %d bytes left over", ErrMalformed, what, len(r.Src))
	}
	return nil
}

// appendNoTags closes a flexible struct with an empty tagged-field section.
func appendNoTags(b []byte) []byte { return kbin.AppendUvarint(b, 0) }

// ConsumerGroupMetadataKey is the key of a consumer group's epoch record
// (type 3).
type ConsumerGroupMetadataKey struct {
	Group string
}

// AppendTo appends the key, version 3.
func (k *ConsumerGroupMetadataKey) AppendTo(b []byte) []byte {
	return (*groupKey)(k).appendTo(b, TypeConsumerGroupMetadata)
}

// ReadFrom decodes the key.
func (k *ConsumerGroupMetadataKey) ReadFrom(src []byte) error {
	return (*groupKey)(k).readFrom(src, TypeConsumerGroupMetadata, "ConsumerGroupMetadataKey")
}

// ConsumerGroupMetadataValue is a consumer group's epoch (value version 0).
type ConsumerGroupMetadataValue struct {
	Epoch int32
}

// AppendTo appends the value, version 0.
func (v *ConsumerGroupMetadataValue) AppendTo(b []byte) []byte {
	return (*epochValue)(v).appendTo(b)
}

// ReadFrom decodes the value.
func (v *ConsumerGroupMetadataValue) ReadFrom(src []byte) error {
	return (*epochValue)(v).readFrom(src, "ConsumerGroupMetadataValue")
}

// groupKey is the shape of the group-scoped keys (types 3 and 6).
type groupKey struct {
	Group string
}

func (k *groupKey) appendTo(b []byte, typ int16) []byte {
	b = kbin.AppendInt16(b, typ)
	return kbin.AppendString(b, k.Group)
}

func (k *groupKey) readFrom(src []byte, typ int16, what string) error {
	r := newReader(src)
	r.version(typ)
	k.Group = r.String()
	return r.done(what)
}

// epochValue is the shape of the values that hold one epoch (version 0
// of types 3 and 6).
type epochValue struct {
	Epoch int32
}

func (v *epochValue) appendTo(b []byte) []byte {
	b = kbin.AppendInt16(b, 0)
	b = kbin.AppendInt32(b, v.Epoch)
	return appendNoTags(b)
}

func (v *epochValue) readFrom(src []byte, what string) error {
	r := newReader(src)
	r.version(0)
	v.Epoch = r.Int32()
	r.skipTags(nil)
	return r.done(what)
}

// memberKey is the shape of the member-scoped keys (types 5, 7 and 8).
type memberKey struct {
	Group, Member string
}

func (k *memberKey) appendTo(b []byte, typ int16) []byte {
	b = kbin.AppendInt16(b, typ)
	b = kbin.AppendString(b, k.Group)
	return kbin.AppendString(b, k.Member)
}

func (k *memberKey) readFrom(src []byte, typ int16, what string) error {
	r := newReader(src)
	r.version(typ)
	k.Group = r.String()
	k.Member = r.String()
	return r.done(what)
}

// ConsumerGroupMemberMetadataKey is the key of a member's metadata record
// (type 5).
type ConsumerGroupMemberMetadataKey struct {
	Group, Member string
}

// AppendTo appends the key, version 5.
func (k *ConsumerGroupMemberMetadataKey) AppendTo(b []byte) []byte {
	return (*memberKey)(k).appendTo(b, TypeConsumerGroupMemberMetadata)
}

// ReadFrom decodes the key.
func (k *ConsumerGroupMemberMetadataKey) ReadFrom(src []byte) error {
	return (*memberKey)(k).readFrom(src, TypeConsumerGroupMemberMetadata, "ConsumerGroupMemberMetadataKey")
}

// ConsumerGroupMemberMetadataValue is a member's subscription and client
// details (value version 0).
type ConsumerGroupMemberMetadataValue struct {
	InstanceID           *string
	RackID               *string
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	// SubscribedTopicRegex is nil when the member subscribes by name.
	SubscribedTopicRegex *string
	// RebalanceTimeoutMillis defaults to -1.
	RebalanceTimeoutMillis int32
	// ServerAssignor is nil when the member asked for none.
	ServerAssignor *string
	// ClassicMemberMetadata (tag 0) is set only for a classic member of
	// a consumer group (a mixed group).
	ClassicMemberMetadata *ClassicMemberMetadata
}

// ClassicMemberMetadata is a classic member's part of a consumer group
// (ConsumerGroupMemberMetadataValue's tagged field 0).
type ClassicMemberMetadata struct {
	SessionTimeoutMillis int32
	SupportedProtocols   []ClassicProtocol
}

// ClassicProtocol is one protocol a classic member supports.
type ClassicProtocol struct {
	Name     string
	Metadata []byte
}

func (c *ClassicMemberMetadata) appendTo(b []byte) []byte {
	b = kbin.AppendInt32(b, c.SessionTimeoutMillis)
	b = kbin.AppendCompactArrayLen(b, len(c.SupportedProtocols))
	for _, p := range c.SupportedProtocols {
		b = kbin.AppendCompactString(b, p.Name)
		b = kbin.AppendCompactBytes(b, p.Metadata)
		b = appendNoTags(b)
	}
	return appendNoTags(b)
}

func (c *ClassicMemberMetadata) readFrom(r *reader) {
	c.SessionTimeoutMillis = r.Int32()
	n := r.arrayLen()
	for range n {
		if !r.Ok() {
			return
		}
		var p ClassicProtocol
		p.Name = r.CompactString()
		p.Metadata = r.CompactBytes()
		r.skipTags(nil)
		c.SupportedProtocols = append(c.SupportedProtocols, p)
	}
	r.skipTags(nil)
}

// AppendTo appends the value, version 0.
func (v *ConsumerGroupMemberMetadataValue) AppendTo(b []byte) []byte {
	b = kbin.AppendInt16(b, 0)
	b = kbin.AppendCompactNullableString(b, v.InstanceID)
	b = kbin.AppendCompactNullableString(b, v.RackID)
	b = kbin.AppendCompactString(b, v.ClientID)
	b = kbin.AppendCompactString(b, v.ClientHost)
	b = kbin.AppendCompactArrayLen(b, len(v.SubscribedTopicNames))
	for _, t := range v.SubscribedTopicNames {
		b = kbin.AppendCompactString(b, t)
	}
	b = kbin.AppendCompactNullableString(b, v.SubscribedTopicRegex)
	b = kbin.AppendInt32(b, v.RebalanceTimeoutMillis)
	b = kbin.AppendCompactNullableString(b, v.ServerAssignor)
	if v.ClassicMemberMetadata == nil {
		return appendNoTags(b)
	}
	tag := v.ClassicMemberMetadata.appendTo(nil)
	b = kbin.AppendUvarint(b, 1) // one tagged field
	b = kbin.AppendUvarint(b, 0) // tag 0
	b = kbin.AppendUvarint(b, uint32(len(tag)))
	return append(b, tag...)
}

// ReadFrom decodes the value.
func (v *ConsumerGroupMemberMetadataValue) ReadFrom(src []byte) error {
	*v = ConsumerGroupMemberMetadataValue{}
	r := newReader(src)
	r.version(0)
	v.InstanceID = r.CompactNullableString()
	v.RackID = r.CompactNullableString()
	v.ClientID = r.CompactString()
	v.ClientHost = r.CompactString()
	n := r.arrayLen()
	for range n {
		if !r.Ok() {
			break
		}
		v.SubscribedTopicNames = append(v.SubscribedTopicNames, r.CompactString())
	}
	v.SubscribedTopicRegex = r.CompactNullableString()
	v.RebalanceTimeoutMillis = r.Int32()
	v.ServerAssignor = r.CompactNullableString()
	r.skipTags(func(tag uint32, b []byte) {
		if tag != 0 {
			return
		}
		tr := newReader(b)
		var c ClassicMemberMetadata
		c.readFrom(tr)
		if err := tr.done("ClassicMemberMetadata"); err != nil {
			r.fail()
			return
		}
		v.ClassicMemberMetadata = &c
	})
	return r.done("ConsumerGroupMemberMetadataValue")
}

// ConsumerGroupTargetAssignmentMetadataKey is the key of a consumer
// group's target assignment epoch record (type 6).
type ConsumerGroupTargetAssignmentMetadataKey struct {
	Group string
}

// AppendTo appends the key, version 6.
func (k *ConsumerGroupTargetAssignmentMetadataKey) AppendTo(b []byte) []byte {
	return (*groupKey)(k).appendTo(b, TypeConsumerGroupTargetAssignmentMetadata)
}

// ReadFrom decodes the key.
func (k *ConsumerGroupTargetAssignmentMetadataKey) ReadFrom(src []byte) error {
	return (*groupKey)(k).readFrom(src, TypeConsumerGroupTargetAssignmentMetadata, "ConsumerGroupTargetAssignmentMetadataKey")
}

// ConsumerGroupTargetAssignmentMetadataValue is the epoch of a consumer
// group's target assignment (value version 0).
type ConsumerGroupTargetAssignmentMetadataValue struct {
	AssignmentEpoch int32
}

// AppendTo appends the value, version 0.
func (v *ConsumerGroupTargetAssignmentMetadataValue) AppendTo(b []byte) []byte {
	return (&epochValue{v.AssignmentEpoch}).appendTo(b)
}

// ReadFrom decodes the value.
func (v *ConsumerGroupTargetAssignmentMetadataValue) ReadFrom(src []byte) error {
	var e epochValue
	err := e.readFrom(src, "ConsumerGroupTargetAssignmentMetadataValue")
	v.AssignmentEpoch = e.Epoch
	return err
}

// TopicPartitions is one topic's partitions, by topic id.
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
		b = appendNoTags(b)
	}
	return b
}

func readTopicPartitions(r *reader) []TopicPartitions {
	var out []TopicPartitions
	n := r.arrayLen()
	for range n {
		if !r.Ok() {
			break
		}
		tp := TopicPartitions{TopicID: r.Uuid()}
		k := r.arrayLen()
		if k > len(r.Src)/4 {
			r.fail()
			break
		}
		tp.Partitions = make([]int32, k)
		for i := range tp.Partitions {
			tp.Partitions[i] = r.Int32()
		}
		r.skipTags(nil)
		out = append(out, tp)
	}
	return out
}

// ConsumerGroupTargetAssignmentMemberKey is the key of a member's target
// assignment record (type 7).
type ConsumerGroupTargetAssignmentMemberKey struct {
	Group, Member string
}

// AppendTo appends the key, version 7.
func (k *ConsumerGroupTargetAssignmentMemberKey) AppendTo(b []byte) []byte {
	return (*memberKey)(k).appendTo(b, TypeConsumerGroupTargetAssignmentMember)
}

// ReadFrom decodes the key.
func (k *ConsumerGroupTargetAssignmentMemberKey) ReadFrom(src []byte) error {
	return (*memberKey)(k).readFrom(src, TypeConsumerGroupTargetAssignmentMember, "ConsumerGroupTargetAssignmentMemberKey")
}

// ConsumerGroupTargetAssignmentMemberValue is a member's target
// assignment (value version 0).
type ConsumerGroupTargetAssignmentMemberValue struct {
	TopicPartitions []TopicPartitions
}

// AppendTo appends the value, version 0.
func (v *ConsumerGroupTargetAssignmentMemberValue) AppendTo(b []byte) []byte {
	b = kbin.AppendInt16(b, 0)
	b = appendTopicPartitions(b, v.TopicPartitions)
	return appendNoTags(b)
}

// ReadFrom decodes the value.
func (v *ConsumerGroupTargetAssignmentMemberValue) ReadFrom(src []byte) error {
	r := newReader(src)
	r.version(0)
	v.TopicPartitions = readTopicPartitions(r)
	r.skipTags(nil)
	return r.done("ConsumerGroupTargetAssignmentMemberValue")
}

// ConsumerGroupCurrentMemberAssignmentKey is the key of a member's
// current assignment record (type 8).
type ConsumerGroupCurrentMemberAssignmentKey struct {
	Group, Member string
}

// AppendTo appends the key, version 8.
func (k *ConsumerGroupCurrentMemberAssignmentKey) AppendTo(b []byte) []byte {
	return (*memberKey)(k).appendTo(b, TypeConsumerGroupCurrentMemberAssignment)
}

// ReadFrom decodes the key.
func (k *ConsumerGroupCurrentMemberAssignmentKey) ReadFrom(src []byte) error {
	return (*memberKey)(k).readFrom(src, TypeConsumerGroupCurrentMemberAssignment, "ConsumerGroupCurrentMemberAssignmentKey")
}

// ConsumerGroupCurrentMemberAssignmentValue is a member's reconciliation
// state (value version 0).
type ConsumerGroupCurrentMemberAssignmentValue struct {
	MemberEpoch         int32
	PreviousMemberEpoch int32
	// State is Kafka's MemberState: 0 stable, 1 unrevoked partitions, 2
	// unreleased partitions, 3 unknown.
	State                       int8
	AssignedPartitions          []TopicPartitions
	PartitionsPendingRevocation []TopicPartitions
}

// AppendTo appends the value, version 0.
func (v *ConsumerGroupCurrentMemberAssignmentValue) AppendTo(b []byte) []byte {
	b = kbin.AppendInt16(b, 0)
	b = kbin.AppendInt32(b, v.MemberEpoch)
	b = kbin.AppendInt32(b, v.PreviousMemberEpoch)
	b = kbin.AppendInt8(b, v.State)
	b = appendTopicPartitions(b, v.AssignedPartitions)
	b = appendTopicPartitions(b, v.PartitionsPendingRevocation)
	return appendNoTags(b)
}

// ReadFrom decodes the value.
func (v *ConsumerGroupCurrentMemberAssignmentValue) ReadFrom(src []byte) error {
	r := newReader(src)
	r.version(0)
	v.MemberEpoch = r.Int32()
	v.PreviousMemberEpoch = r.Int32()
	v.State = r.Int8()
	v.AssignedPartitions = readTopicPartitions(r)
	v.PartitionsPendingRevocation = readTopicPartitions(r)
	r.skipTags(nil)
	return r.done("ConsumerGroupCurrentMemberAssignmentValue")
}
