// Package record defines the durable records of Cohort's group coordinator:
// the store keys and values of committed offsets and group state, in a
// versioned binary encoding. As in Kafka's __consumer_offsets, all durable
// coordinator state is a set of such records, a nil value being a
// tombstone, and in-memory state is rebuilt only by replaying them.
//
// Keys sort by shard, then kind, then tenant and group, so that a shard is
// loaded with one prefix scan and a group's records of one kind share one
// prefix. Strings in keys are length-prefixed, so no group's prefix is a
// prefix of another's ("g1" never matches "g10").
//
// Values start with a version byte, then fields in franz-go's kbin
// encoding, strings and byte slices with uvarint ("compact") lengths. Version 1 is the common one (ConsumerMember also has 2); to
// change a value, add a version that appends fields, keep decoding every
// older version, and never reuse a kind byte. An unknown kind or version
// is ErrCorrupt, which stops start-up rather than guessing.
//
// The package only encodes and decodes; it must not know how records are
// replayed.
package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// ErrCorrupt is returned for a key or value that does not decode.
var ErrCorrupt = errors.New("record: corrupt")

// Kind says what a record holds. The numbers follow Kafka's coordinator
// record types where one exists, and are part of the on-disk format.
type Kind byte

const (
	// KindOffset is a committed offset (Kafka's OffsetCommit record, 1).
	KindOffset Kind = 1
	// KindClassicGroup is a classic group's whole state (Kafka's
	// GroupMetadata record, 2).
	KindClassicGroup Kind = 2
	// KindConsumerGroup is a KIP-848 consumer group's epoch and id
	// (Kafka's ConsumerGroupMetadata record, 3).
	KindConsumerGroup Kind = 3
	// KindConsumerMember is a consumer group member's metadata: its
	// subscription and client details (ConsumerGroupMemberMetadata, 5).
	KindConsumerMember Kind = 5
	// KindConsumerTargetEpoch is the epoch and time of a consumer group's
	// target assignment (ConsumerGroupTargetAssignmentMetadata, 6).
	KindConsumerTargetEpoch Kind = 6
	// KindConsumerTarget is one member's part of the target assignment
	// (ConsumerGroupTargetAssignmentMember, 7).
	KindConsumerTarget Kind = 7
	// KindConsumerCurrent is a member's current assignment and epochs
	// (ConsumerGroupCurrentMemberAssignment, 8).
	KindConsumerCurrent Kind = 8
)

func (k Kind) String() string {
	switch k {
	case KindOffset:
		return "offset"
	case KindClassicGroup:
		return "classic-group"
	case KindConsumerGroup:
		return "consumer-group"
	case KindConsumerMember:
		return "consumer-member"
	case KindConsumerTargetEpoch:
		return "consumer-target-epoch"
	case KindConsumerTarget:
		return "consumer-target"
	case KindConsumerCurrent:
		return "consumer-current"
	case KindAssignerConsumer:
		return "assigner-consumer"
	case KindAssignerOwner:
		return "assigner-owner"
	case KindAssignerHandoff:
		return "assigner-handoff"
	case KindAssignerTopic:
		return "assigner-topic"
	case KindOffsetsTopic:
		return "offsets-topic"
	case KindScramCredential:
		return "scram-credential"
	case KindACL:
		return "acl"
	case KindQuota:
		return "quota"
	case KindOrg:
		return "org"
	case KindOrgMember:
		return "org-member"
	case KindTopic:
		return "topic"
	case KindMeta:
		return "meta"
	case KindConfig:
		return "config"
	case KindTxn:
		return "txn"
	case KindTxnOffset:
		return "txn-offset"
	case KindShareSnapshot:
		return "share-snapshot"
	case KindShareUpdate:
		return "share-update"
	case KindShareGroup:
		return "share-group"
	case KindShareMember:
		return "share-member"
	case KindShareTargetEpoch:
		return "share-target-epoch"
	case KindShareTarget:
		return "share-target"
	case KindShareCurrent:
		return "share-current"
	case KindShareGroupPartitions:
		return "share-group-partitions"
	}
	return fmt.Sprintf("kind(%d)", byte(k))
}

// namespace is the first byte of every coordinator key, apart from the
// topic log's "topic/" and "meta/" keys in the same store.
const namespace = 'c'

const valueVersion1 = 1

// valueVersion2 is a value that appends fields to version 1's (so far only
// ConsumerMember's, with a classic member's metadata).
const valueVersion2 = 2

// GroupKey names a group: the shard that owns it, the tenant and the id.
type GroupKey struct {
	Shard  uint16
	Tenant string
	Group  string
}

// OffsetKey names one committed offset.
type OffsetKey struct {
	GroupKey
	Topic     string
	Partition int32
}

// ShardPrefix is the prefix of every record of a shard.
func ShardPrefix(shard uint16) []byte {
	return binary.BigEndian.AppendUint16([]byte{namespace}, shard)
}

// KindPrefix is the prefix of every record of one kind in a shard.
func KindPrefix(shard uint16, kind Kind) []byte {
	return append(ShardPrefix(shard), byte(kind))
}

// GroupPrefix is the prefix of every record of one kind of one group.
func GroupPrefix(kind Kind, g GroupKey) []byte { return groupKey(kind, g, 0) }

// groupKey is GroupPrefix in a slice with room for extra more bytes, so
// that a key is built in one allocation.
func groupKey(kind Kind, g GroupKey, extra int) []byte {
	b := make([]byte, 0, 4+keyStringLen(g.Tenant)+keyStringLen(g.Group)+extra)
	b = append(b, namespace, byte(g.Shard>>8), byte(g.Shard), byte(kind))
	b = appendKeyString(b, g.Tenant)
	return appendKeyString(b, g.Group)
}

// Key encodes the key of a group's classic-group record.
func (g GroupKey) Key() []byte { return GroupPrefix(KindClassicGroup, g) }

// MemberKey names a consumer or share group member's record of one kind.
type MemberKey struct {
	GroupKey
	Kind   Kind
	Member string
}

// KindKey encodes the key of a group record of kind (KindClassicGroup,
// KindConsumerGroup, KindConsumerTargetEpoch, KindShareGroup,
// KindShareTargetEpoch, KindShareGroupPartitions).
func (g GroupKey) KindKey(kind Kind) []byte { return GroupPrefix(kind, g) }

// Key encodes the key.
func (k MemberKey) Key() []byte {
	return appendKeyString(groupKey(k.Kind, k.GroupKey, keyStringLen(k.Member)), k.Member)
}

// Key encodes the key of a committed offset.
func (k OffsetKey) Key() []byte {
	b := groupKey(KindOffset, k.GroupKey, keyStringLen(k.Topic)+4)
	b = appendKeyString(b, k.Topic)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// keyStringLen is the length appendKeyString adds for s.
func keyStringLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

// uvarintLen is the length of v's shortest uvarint encoding.
func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

func appendKeyString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// keyReader reads the parts of a key.
type keyReader struct {
	b   []byte
	err error
}

func (r *keyReader) string() string {
	n, used := binary.Uvarint(r.b)
	// A length written longer than it needs (0x80 0x00 for 0) is not the
	// key's encoding: the same key would have two byte strings.
	if used <= 0 || n > uint64(len(r.b)-used) || used != uvarintLen(n) {
		r.err = ErrCorrupt
		r.b = nil
		return ""
	}
	s := string(r.b[used : used+int(n)])
	r.b = r.b[used+int(n):]
	return s
}

// stringLike is string, returning like itself when the bytes are its.
func (r *keyReader) stringLike(like string) string {
	n, used := binary.Uvarint(r.b)
	if used > 0 && n <= uint64(len(r.b)-used) && used == uvarintLen(n) && string(r.b[used:used+int(n)]) == like {
		r.b = r.b[used+int(n):]
		return like
	}
	return r.string()
}

func (r *keyReader) uint32() uint32 {
	if len(r.b) < 4 {
		r.err, r.b = ErrCorrupt, nil
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

// ParseKey decodes a coordinator key into a GroupKey (for the group
// kinds), a MemberKey (for the member kinds, and the assigner's consumer
// and topic kinds, whose "member" is the consumer or topic name), a
// PartitionKey (the assigner's owner and handoff kinds), an OffsetKey,
// an OffsetsTopicKey, a TxnKey, a TxnOffsetKey, a ShareKey or a
// ShareUpdateKey.
// ParseOffsetKey parses an offset record's key (KindOffset) as ParseKey
// does, but returns it as its own type: ParseKey's interface costs an
// allocation, and a load parses millions.
func ParseOffsetKey(key []byte) (OffsetKey, error) {
	return ParseOffsetKeyAfter(key, nil)
}

// ParseOffsetKeyAfter is ParseOffsetKey reusing prev's tenant, group and
// topic strings where the key has the same (prev may be nil): a load
// replays a group's offsets one after another, in key order, and would
// otherwise allocate three strings for each of ten million offsets.
func ParseOffsetKeyAfter(key []byte, prev *OffsetKey) (OffsetKey, error) {
	if len(key) < 4 || key[0] != namespace || Kind(key[3]) != KindOffset {
		return OffsetKey{}, fmt.Errorf("%w: key %q is not an offset key", ErrCorrupt, key)
	}
	r := keyReader{b: key[4:]}
	k := OffsetKey{GroupKey: GroupKey{Shard: binary.BigEndian.Uint16(key[1:])}}
	if prev == nil {
		prev = &OffsetKey{}
	}
	k.Tenant = r.stringLike(prev.Tenant)
	k.Group = r.stringLike(prev.Group)
	k.Topic = r.stringLike(prev.Topic)
	k.Partition = int32(r.uint32())
	if r.err != nil || len(r.b) != 0 {
		return OffsetKey{}, fmt.Errorf("%w: %s key %q", ErrCorrupt, KindOffset, key)
	}
	return k, nil
}

func ParseKey(key []byte) (Kind, any, error) {
	if len(key) < 4 || key[0] != namespace {
		return 0, nil, fmt.Errorf("%w: key %q is not a coordinator key", ErrCorrupt, key)
	}
	g := GroupKey{Shard: binary.BigEndian.Uint16(key[1:])}
	kind := Kind(key[3])
	if kind == KindOffsetsTopic {
		if len(key) != 4 {
			return kind, nil, fmt.Errorf("%w: %s key %q", ErrCorrupt, kind, key)
		}
		return kind, OffsetsTopicKey{Shard: g.Shard}, nil
	}
	r := keyReader{b: key[4:]}
	g.Tenant = r.string()
	g.Group = r.string()
	var out any
	switch kind {
	case KindClassicGroup, KindConsumerGroup, KindConsumerTargetEpoch,
		KindShareGroup, KindShareTargetEpoch, KindShareGroupPartitions:
		out = g
	case KindConsumerMember, KindConsumerTarget, KindConsumerCurrent, KindAssignerConsumer, KindAssignerTopic,
		KindShareMember, KindShareTarget, KindShareCurrent:
		out = MemberKey{GroupKey: g, Kind: kind, Member: r.string()}
	case KindAssignerOwner, KindAssignerHandoff:
		k := PartitionKey{GroupKey: g, Kind: kind}
		k.Topic = r.string()
		k.Partition = int32(r.uint32())
		out = k
	case KindOffset:
		k := OffsetKey{GroupKey: g}
		k.Topic = r.string()
		k.Partition = int32(r.uint32())
		out = k
	case KindTxn, KindTxnOffset:
		out = parseTxnKey(kind, g, &r)
	case KindShareSnapshot, KindShareUpdate:
		out = parseShareKey(kind, g, &r)
	default:
		return kind, nil, fmt.Errorf("%w: unknown record kind %d", ErrCorrupt, kind)
	}
	if r.err != nil || len(r.b) != 0 {
		return kind, nil, fmt.Errorf("%w: %s key %q", ErrCorrupt, kind, key)
	}
	return kind, out, nil
}

// Offset is a committed offset, as Kafka's OffsetCommitValue.
type Offset struct {
	Offset int64
	// LeaderEpoch of the last consumed record, -1 if unknown (KIP-320).
	LeaderEpoch int32
	// Metadata is the client's opaque string.
	Metadata string
	// CommitTimestamp is when the commit was written (Unix ms); retention
	// counts from it.
	CommitTimestamp int64
	// TopicID of the topic committed to, zero if unknown, so that offsets
	// of a deleted topic do not apply to a new one of the same name.
	TopicID [16]byte
}

// Encode returns the value's bytes.
func (o Offset) Encode() []byte {
	b := make([]byte, 0, 1+8+4+binary.MaxVarintLen32+len(o.Metadata)+8+16)
	b = append(b, valueVersion1)
	b = kbin.AppendInt64(b, o.Offset)
	b = kbin.AppendInt32(b, o.LeaderEpoch)
	b = kbin.AppendCompactString(b, o.Metadata)
	b = kbin.AppendInt64(b, o.CommitTimestamp)
	return kbin.AppendUuid(b, o.TopicID)
}

// DecodeOffset decodes an Offset value.
func DecodeOffset(v []byte) (Offset, error) {
	var o Offset
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return o, err
	}
	o.Offset = r.Int64()
	o.LeaderEpoch = r.Int32()
	o.Metadata = r.CompactString()
	o.CommitTimestamp = r.Int64()
	o.TopicID = r.Uuid()
	return o, complete(r, "offset")
}

// ClassicGroup is a classic group's whole state, as Kafka's
// GroupMetadataValue: written when a generation's assignment is stored,
// when the group empties, and when its id is minted.
type ClassicGroup struct {
	// ID is the group's stable id, cgp_<ULID>, minted once when the group
	// is created and kept while it exists.
	ID           string
	ProtocolType string
	Generation   int32
	// Protocol is the selected protocol; nil for an Empty group.
	Protocol *string
	// Leader is the leader's member id; nil for an Empty group.
	Leader *string
	// StateTimestamp is when the group last changed state (Unix ms).
	StateTimestamp int64
	Members        []ClassicMember
}

// ClassicMember is one member of a classic group, with its subscription
// (the metadata of the selected protocol) and its assignment, both opaque.
type ClassicMember struct {
	MemberID         string
	InstanceID       *string
	ClientID         string
	ClientHost       string
	RebalanceTimeout int32 // ms
	SessionTimeout   int32 // ms
	Subscription     []byte
	Assignment       []byte
}

// Encode returns the value's bytes.
func (g ClassicGroup) Encode() []byte {
	b := []byte{valueVersion1}
	b = kbin.AppendCompactString(b, g.ID)
	b = kbin.AppendCompactString(b, g.ProtocolType)
	b = kbin.AppendInt32(b, g.Generation)
	b = kbin.AppendCompactNullableString(b, g.Protocol)
	b = kbin.AppendCompactNullableString(b, g.Leader)
	b = kbin.AppendInt64(b, g.StateTimestamp)
	b = kbin.AppendCompactArrayLen(b, len(g.Members))
	for _, m := range g.Members {
		b = kbin.AppendCompactString(b, m.MemberID)
		b = kbin.AppendCompactNullableString(b, m.InstanceID)
		b = kbin.AppendCompactString(b, m.ClientID)
		b = kbin.AppendCompactString(b, m.ClientHost)
		b = kbin.AppendInt32(b, m.RebalanceTimeout)
		b = kbin.AppendInt32(b, m.SessionTimeout)
		b = kbin.AppendCompactBytes(b, m.Subscription)
		b = kbin.AppendCompactBytes(b, m.Assignment)
	}
	return b
}

// DecodeClassicGroup decodes a ClassicGroup value.
func DecodeClassicGroup(v []byte) (ClassicGroup, error) {
	var g ClassicGroup
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return g, err
	}
	g.ID = r.CompactString()
	g.ProtocolType = r.CompactString()
	g.Generation = r.Int32()
	g.Protocol = r.CompactNullableString()
	g.Leader = r.CompactNullableString()
	g.StateTimestamp = r.Int64()
	n := r.CompactArrayLen()
	// Each member takes at least 14 bytes: a bound on n before allocating,
	// so a corrupt count cannot ask for gigabytes.
	if n < 0 || int(n) > len(r.Src)/14 {
		return g, fmt.Errorf("%w: classic group with %d members in %d bytes", ErrCorrupt, n, len(r.Src))
	}
	if n > 0 {
		g.Members = make([]ClassicMember, n)
	}
	for i := range g.Members {
		m := &g.Members[i]
		m.MemberID = r.CompactString()
		m.InstanceID = r.CompactNullableString()
		m.ClientID = r.CompactString()
		m.ClientHost = r.CompactString()
		m.RebalanceTimeout = r.Int32()
		m.SessionTimeout = r.Int32()
		// Copies: the store's buffers are reused after a scan.
		m.Subscription = bytes.Clone(r.CompactBytes())
		m.Assignment = bytes.Clone(r.CompactBytes())
	}
	return g, complete(r, "classic group")
}

func valueReader(v []byte) (kbin.Reader, error) {
	if len(v) == 0 {
		return kbin.Reader{}, fmt.Errorf("%w: empty value", ErrCorrupt)
	}
	if v[0] != valueVersion1 {
		return kbin.Reader{}, fmt.Errorf("%w: unknown value version %d", ErrCorrupt, v[0])
	}
	// A value, not a pointer: a decode makes no garbage of its reader
	// (a load decodes millions).
	return kbin.Reader{Src: v[1:]}, nil
}

// readBool reads a boolean byte, which must be 0 or 1: any other byte
// would read as true and be written back as 1, so that a value's bytes
// would not be its only encoding.
func readBool(r *kbin.Reader) bool {
	if len(r.Src) > 0 && r.Src[0] > 1 {
		r.Src = nil // too short for what follows: complete reports it
		r.Int8()
		return false
	}
	return r.Bool()
}

func complete(r *kbin.Reader, what string) error {
	if err := r.Complete(); err != nil {
		return fmt.Errorf("%w: %s value: %v", ErrCorrupt, what, err)
	}
	if len(r.Src) != 0 {
		return fmt.Errorf("%w: %s value has %d bytes left over", ErrCorrupt, what, len(r.Src))
	}
	return nil
}
