package offsetstopic

import (
	"fmt"

	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The versions Kafka writes, as Apache Kafka's
// GroupCoordinatorRecordHelpers and MetadataVersion choose them for a
// current cluster: OffsetCommitKey 1 with OffsetCommitValue 3 (1 only for
// a commit that set an expire timestamp, which OffsetCommit v2–4's
// retention time did and Cohort does not keep), GroupMetadataKey 2 with
// GroupMetadataValue 3 (the highest non-flexible version, which
// MetadataVersion.groupMetadataValueVersion picks), and version 0 of
// every KIP-848 value.
const (
	offsetCommitKeyVersion   = 1
	offsetCommitValueVersion = 3
	groupMetadataKeyVersion  = 2
	groupMetadataValueVer    = 3
)

// shown reports whether one of a shard's records appears in the topic:
// the group coordinator's kinds, of the default tenant (the one the
// Kafka listener serves; another tenant's group of the same name would
// have the same Kafka key). The check reads the key's bytes only: the
// topic's maintenance asks it of every record the shard writes.
func shown(key []byte) bool {
	// 'c', shard (2), kind, then the tenant's length (0: the default).
	if len(key) < 5 || key[0] != 'c' || key[4] != 0 {
		return false
	}
	switch record.Kind(key[3]) {
	case record.KindOffset, record.KindClassicGroup, record.KindConsumerGroup, record.KindConsumerMember,
		record.KindConsumerTargetEpoch, record.KindConsumerTarget, record.KindConsumerCurrent:
		return true
	}
	return false
}

// Translate returns the __consumer_offsets record Kafka writes for the
// same state as one of a shard's records: its key, and its value (nil
// for a tombstone, as value is). ok is false for a record the topic does
// not show (see shown).
func Translate(key, value []byte) (k, v []byte, ok bool, err error) {
	if !shown(key) {
		return nil, nil, false, nil
	}
	kind, parsed, err := record.ParseKey(key)
	if err != nil {
		return nil, nil, false, err
	}
	switch kind {
	case record.KindOffset:
		ok := parsed.(record.OffsetKey)
		kk := kmsg.OffsetCommitKey{Version: offsetCommitKeyVersion, Group: ok.Group, Topic: ok.Topic, Partition: ok.Partition}
		k = kk.AppendTo(nil)
		if value != nil {
			o, err := record.DecodeOffset(value)
			if err != nil {
				return nil, nil, false, err
			}
			kv := kmsg.OffsetCommitValue{
				Version:         offsetCommitValueVersion,
				Offset:          o.Offset,
				LeaderEpoch:     o.LeaderEpoch,
				Metadata:        o.Metadata,
				CommitTimestamp: o.CommitTimestamp,
				ExpireTimestamp: -1,
			}
			v = kv.AppendTo(nil)
		}
	case record.KindClassicGroup:
		gk := parsed.(record.GroupKey)
		kk := kmsg.GroupMetadataKey{Version: groupMetadataKeyVersion, Group: gk.Group}
		k = kk.AppendTo(nil)
		if value != nil {
			g, err := record.DecodeClassicGroup(value)
			if err != nil {
				return nil, nil, false, err
			}
			kv := kmsg.GroupMetadataValue{
				Version:               groupMetadataValueVer,
				ProtocolType:          g.ProtocolType,
				Generation:            g.Generation,
				Protocol:              g.Protocol,
				Leader:                g.Leader,
				CurrentStateTimestamp: g.StateTimestamp,
			}
			for _, m := range g.Members {
				kv.Members = append(kv.Members, kmsg.GroupMetadataValueMember{
					MemberID:               m.MemberID,
					InstanceID:             m.InstanceID,
					ClientID:               m.ClientID,
					ClientHost:             m.ClientHost,
					RebalanceTimeoutMillis: m.RebalanceTimeout,
					SessionTimeoutMillis:   m.SessionTimeout,
					Subscription:           m.Subscription,
					Assignment:             m.Assignment,
				})
			}
			v = kv.AppendTo(nil)
		}
	case record.KindConsumerGroup:
		gk := parsed.(record.GroupKey)
		k = (&ConsumerGroupMetadataKey{Group: gk.Group}).AppendTo(nil)
		if value != nil {
			g, err := record.DecodeConsumerGroup(value)
			if err != nil {
				return nil, nil, false, err
			}
			v = (&ConsumerGroupMetadataValue{Epoch: g.Epoch}).AppendTo(nil)
		}
	case record.KindConsumerTargetEpoch:
		gk := parsed.(record.GroupKey)
		k = (&ConsumerGroupTargetAssignmentMetadataKey{Group: gk.Group}).AppendTo(nil)
		if value != nil {
			t, err := record.DecodeConsumerTargetEpoch(value)
			if err != nil {
				return nil, nil, false, err
			}
			v = (&ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: t.Epoch}).AppendTo(nil)
		}
	case record.KindConsumerMember:
		mk := parsed.(record.MemberKey)
		k = (&ConsumerGroupMemberMetadataKey{Group: mk.Group, Member: mk.Member}).AppendTo(nil)
		if value != nil {
			m, err := record.DecodeConsumerMember(value)
			if err != nil {
				return nil, nil, false, err
			}
			kv := ConsumerGroupMemberMetadataValue{
				InstanceID:             m.InstanceID,
				RackID:                 m.RackID,
				ClientID:               m.ClientID,
				ClientHost:             m.ClientHost,
				SubscribedTopicNames:   m.Topics,
				RebalanceTimeoutMillis: m.RebalanceTimeout,
			}
			// Cohort keeps "" for none; Kafka's schema has null.
			if m.Regex != "" {
				kv.SubscribedTopicRegex = &m.Regex
			}
			if m.Assignor != "" {
				kv.ServerAssignor = &m.Assignor
			}
			if c := m.Classic; c != nil {
				cm := &ClassicMemberMetadata{SessionTimeoutMillis: c.SessionTimeout}
				for _, p := range c.Protocols {
					cm.SupportedProtocols = append(cm.SupportedProtocols, ClassicProtocol{Name: p.Name, Metadata: p.Metadata})
				}
				kv.ClassicMemberMetadata = cm
			}
			v = kv.AppendTo(nil)
		}
	case record.KindConsumerTarget:
		mk := parsed.(record.MemberKey)
		k = (&ConsumerGroupTargetAssignmentMemberKey{Group: mk.Group, Member: mk.Member}).AppendTo(nil)
		if value != nil {
			t, err := record.DecodeConsumerTarget(value)
			if err != nil {
				return nil, nil, false, err
			}
			v = (&ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: topicPartitions(t.Topics)}).AppendTo(nil)
		}
	case record.KindConsumerCurrent:
		mk := parsed.(record.MemberKey)
		k = (&ConsumerGroupCurrentMemberAssignmentKey{Group: mk.Group, Member: mk.Member}).AppendTo(nil)
		if value != nil {
			c, err := record.DecodeConsumerCurrent(value)
			if err != nil {
				return nil, nil, false, err
			}
			v = (&ConsumerGroupCurrentMemberAssignmentValue{
				MemberEpoch:                 c.MemberEpoch,
				PreviousMemberEpoch:         c.PreviousMemberEpoch,
				State:                       c.State,
				AssignedPartitions:          topicPartitions(c.Assigned),
				PartitionsPendingRevocation: topicPartitions(c.Revoking),
			}).AppendTo(nil)
		}
	default:
		return nil, nil, false, fmt.Errorf("offsetstopic: record kind %v is not shown", kind)
	}
	return k, v, true, nil
}

func topicPartitions(in []record.TopicPartitions) []TopicPartitions {
	out := make([]TopicPartitions, len(in))
	for i, tp := range in {
		out[i] = TopicPartitions{TopicID: tp.TopicID, Partitions: tp.Partitions}
	}
	return out
}

// ReadKey decodes a __consumer_offsets record key of any type this topic
// writes: *kmsg.OffsetCommitKey (types 0 and 1), *kmsg.GroupMetadataKey
// (2), or one of the KIP-848 key types of this package (3, 5–8).
func ReadKey(b []byte) (any, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("%w: key of %d bytes", ErrMalformed, len(b))
	}
	var k interface{ ReadFrom([]byte) error }
	switch typ := int16(b[0])<<8 | int16(b[1]); typ {
	case 0, 1:
		k = new(kmsg.OffsetCommitKey)
	case 2:
		k = new(kmsg.GroupMetadataKey)
	case TypeConsumerGroupMetadata:
		k = new(ConsumerGroupMetadataKey)
	case TypeConsumerGroupMemberMetadata:
		k = new(ConsumerGroupMemberMetadataKey)
	case TypeConsumerGroupTargetAssignmentMetadata:
		k = new(ConsumerGroupTargetAssignmentMetadataKey)
	case TypeConsumerGroupTargetAssignmentMember:
		k = new(ConsumerGroupTargetAssignmentMemberKey)
	case TypeConsumerGroupCurrentMemberAssignment:
		k = new(ConsumerGroupCurrentMemberAssignmentKey)
	default:
		return nil, fmt.Errorf("%w: unknown record type %d", ErrMalformed, typ)
	}
	if err := k.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return k, nil
}

// ReadValue decodes the value of a record whose key ReadKey returned:
// *kmsg.OffsetCommitValue, *kmsg.GroupMetadataValue, or the KIP-848 value
// type of the key. A nil value is a tombstone: nil, nil.
func ReadValue(key any, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	var v interface{ ReadFrom([]byte) error }
	switch key.(type) {
	case *kmsg.OffsetCommitKey:
		v = new(kmsg.OffsetCommitValue)
	case *kmsg.GroupMetadataKey:
		v = new(kmsg.GroupMetadataValue)
	case *ConsumerGroupMetadataKey:
		v = new(ConsumerGroupMetadataValue)
	case *ConsumerGroupMemberMetadataKey:
		v = new(ConsumerGroupMemberMetadataValue)
	case *ConsumerGroupTargetAssignmentMetadataKey:
		v = new(ConsumerGroupTargetAssignmentMetadataValue)
	case *ConsumerGroupTargetAssignmentMemberKey:
		v = new(ConsumerGroupTargetAssignmentMemberValue)
	case *ConsumerGroupCurrentMemberAssignmentKey:
		v = new(ConsumerGroupCurrentMemberAssignmentValue)
	default:
		return nil, fmt.Errorf("%w: no value type for key %T", ErrMalformed, key)
	}
	if err := v.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return v, nil
}
