package offsetstopic

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	topicA = [16]byte{0xa}
	topicB = [16]byte{0xb}
)

// translate runs Translate and fails the test on an error or a record
// that is not shown.
func translate(t *testing.T, key, value []byte) (k, v []byte) {
	t.Helper()
	k, v, ok, err := Translate(key, value)
	if err != nil || !ok {
		t.Fatalf("Translate(%x): ok=%v err=%v", key, ok, err)
	}
	return k, v
}

// TestOffsetCommitRecord: a committed offset reads back through kmsg's
// own types as Kafka writes it: OffsetCommitKey v1, OffsetCommitValue
// v3; its deletion is a tombstone under the same key.
func TestOffsetCommitRecord(t *testing.T) {
	key := record.OffsetKey{GroupKey: record.GroupKey{Shard: 2, Group: "g"}, Topic: "orders", Partition: 7}.Key()
	val := record.Offset{Offset: 42, LeaderEpoch: 3, Metadata: "meta", CommitTimestamp: 1700000000123, TopicID: topicA}.Encode()
	k, v := translate(t, key, val)

	var kk kmsg.OffsetCommitKey
	if err := kk.ReadFrom(k); err != nil {
		t.Fatal(err)
	}
	if want := (kmsg.OffsetCommitKey{Version: 1, Group: "g", Topic: "orders", Partition: 7}); kk != want {
		t.Errorf("key %+v, want %+v", kk, want)
	}
	var kv kmsg.OffsetCommitValue
	if err := kv.ReadFrom(v); err != nil {
		t.Fatal(err)
	}
	want := kmsg.OffsetCommitValue{Version: 3, Offset: 42, LeaderEpoch: 3, Metadata: "meta", CommitTimestamp: 1700000000123}
	if !reflect.DeepEqual(kv, want) {
		t.Errorf("value %+v, want %+v", kv, want)
	}
	// Kafka's exact bytes: version, offset, leader epoch, metadata
	// (int16 length), commit timestamp.
	if got, want := hex.EncodeToString(v), "0003"+"000000000000002a"+"00000003"+"00046d657461"+"0000018bcfe5687b"; got != want {
		t.Errorf("value bytes %s, want %s", got, want)
	}

	k2, v2 := translate(t, key, nil)
	if !bytes.Equal(k2, k) || v2 != nil {
		t.Errorf("tombstone: key %x value %x, want key %x and a nil value", k2, v2, k)
	}
}

// TestGroupMetadataRecord: a classic group's record reads back through
// kmsg's GroupMetadataKey v2 / GroupMetadataValue v3, members and all;
// an empty group has no protocol, leader or members; a deleted group is
// a tombstone.
func TestGroupMetadataRecord(t *testing.T) {
	proto, leader, inst := "range", "m-1", "i-2"
	g := record.ClassicGroup{ID: "cgp_X", ProtocolType: "consumer", Generation: 7, Protocol: &proto, Leader: &leader, StateTimestamp: 99,
		Members: []record.ClassicMember{
			{MemberID: "m-1", ClientID: "c1", ClientHost: "/127.0.0.1", RebalanceTimeout: 60000, SessionTimeout: 45000, Subscription: []byte{1, 2}, Assignment: []byte{3}},
			{MemberID: "m-2", InstanceID: &inst, ClientID: "c2", ClientHost: "/127.0.0.2", RebalanceTimeout: 30000, SessionTimeout: 10000, Subscription: []byte{4}, Assignment: []byte{}},
		}}
	key := record.GroupKey{Shard: 1, Group: "grp"}.Key()
	k, v := translate(t, key, g.Encode())
	var kk kmsg.GroupMetadataKey
	if err := kk.ReadFrom(k); err != nil || kk.Version != 2 || kk.Group != "grp" {
		t.Fatalf("key %+v, %v", kk, err)
	}
	var kv kmsg.GroupMetadataValue
	if err := kv.ReadFrom(v); err != nil {
		t.Fatal(err)
	}
	want := kmsg.GroupMetadataValue{Version: 3, ProtocolType: "consumer", Generation: 7, Protocol: &proto, Leader: &leader, CurrentStateTimestamp: 99,
		Members: []kmsg.GroupMetadataValueMember{
			{MemberID: "m-1", ClientID: "c1", ClientHost: "/127.0.0.1", RebalanceTimeoutMillis: 60000, SessionTimeoutMillis: 45000, Subscription: []byte{1, 2}, Assignment: []byte{3}},
			{MemberID: "m-2", InstanceID: &inst, ClientID: "c2", ClientHost: "/127.0.0.2", RebalanceTimeoutMillis: 30000, SessionTimeoutMillis: 10000, Subscription: []byte{4}, Assignment: []byte{}},
		}}
	if !reflect.DeepEqual(kv, want) {
		t.Errorf("value\n%+v\nwant\n%+v", kv, want)
	}

	empty := record.ClassicGroup{ID: "cgp_Y", ProtocolType: "consumer", Generation: 8, StateTimestamp: 100}
	_, v = translate(t, key, empty.Encode())
	kv = kmsg.GroupMetadataValue{}
	if err := kv.ReadFrom(v); err != nil {
		t.Fatal(err)
	}
	if kv.Protocol != nil || kv.Leader != nil || len(kv.Members) != 0 || kv.Generation != 8 || kv.ProtocolType != "consumer" {
		t.Errorf("empty group %+v", kv)
	}
	if _, v := translate(t, key, nil); v != nil {
		t.Errorf("tombstone value %x", v)
	}
}

// TestConsumerGroupRecords: each KIP-848 record reads back, by ReadKey
// and ReadValue, as the group's state, with Kafka's key versions 3, 5, 6,
// 7 and 8; "" for no regex or assignor is Kafka's null.
func TestConsumerGroupRecords(t *testing.T) {
	gk := record.GroupKey{Shard: 4, Group: "cg"}
	mk := func(kind record.Kind) []byte {
		return record.MemberKey{GroupKey: gk, Kind: kind, Member: "mem"}.Key()
	}
	inst, rack, regex, assignor := "inst", "rack", "^t.*", "uniform"
	tps := []record.TopicPartitions{{TopicID: topicA, Partitions: []int32{0, 2}}, {TopicID: topicB, Partitions: []int32{}}}
	want := []TopicPartitions{{TopicID: topicA, Partitions: []int32{0, 2}}, {TopicID: topicB, Partitions: []int32{}}}
	for _, tc := range []struct {
		name     string
		key, val []byte
		wantKey  any
		wantVal  any
	}{
		{"group", gk.KindKey(record.KindConsumerGroup), record.ConsumerGroup{ID: "cgp_1", Epoch: 12, MetadataHash: 5}.Encode(),
			&ConsumerGroupMetadataKey{Group: "cg"}, &ConsumerGroupMetadataValue{Epoch: 12}},
		{"member", mk(record.KindConsumerMember),
			record.ConsumerMember{InstanceID: &inst, RackID: &rack, ClientID: "cl", ClientHost: "/h", Topics: []string{"a", "b"}, Regex: regex, RebalanceTimeout: 300000, Assignor: assignor}.Encode(),
			&ConsumerGroupMemberMetadataKey{Group: "cg", Member: "mem"},
			&ConsumerGroupMemberMetadataValue{InstanceID: &inst, RackID: &rack, ClientID: "cl", ClientHost: "/h", SubscribedTopicNames: []string{"a", "b"}, SubscribedTopicRegex: &regex, RebalanceTimeoutMillis: 300000, ServerAssignor: &assignor}},
		{"member by name", mk(record.KindConsumerMember),
			record.ConsumerMember{ClientID: "cl", ClientHost: "/h", Topics: []string{"a"}, RebalanceTimeout: 1000}.Encode(),
			&ConsumerGroupMemberMetadataKey{Group: "cg", Member: "mem"},
			&ConsumerGroupMemberMetadataValue{ClientID: "cl", ClientHost: "/h", SubscribedTopicNames: []string{"a"}, RebalanceTimeoutMillis: 1000}},
		{"classic member", mk(record.KindConsumerMember),
			record.ConsumerMember{ClientID: "cl", ClientHost: "/h", Topics: []string{"a"}, RebalanceTimeout: 1000,
				Classic: &record.ClassicMeta{SessionTimeout: 45000, Protocols: []record.ClassicProtocol{{Name: "cooperative-sticky", Metadata: []byte{0, 3}}, {Name: "range", Metadata: []byte{0, 1}}}}}.Encode(),
			&ConsumerGroupMemberMetadataKey{Group: "cg", Member: "mem"},
			&ConsumerGroupMemberMetadataValue{ClientID: "cl", ClientHost: "/h", SubscribedTopicNames: []string{"a"}, RebalanceTimeoutMillis: 1000,
				ClassicMemberMetadata: &ClassicMemberMetadata{SessionTimeoutMillis: 45000, SupportedProtocols: []ClassicProtocol{{Name: "cooperative-sticky", Metadata: []byte{0, 3}}, {Name: "range", Metadata: []byte{0, 1}}}}}},
		{"target epoch", gk.KindKey(record.KindConsumerTargetEpoch), record.ConsumerTargetEpoch{Epoch: 11, Timestamp: 77}.Encode(),
			&ConsumerGroupTargetAssignmentMetadataKey{Group: "cg"}, &ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 11}},
		{"target", mk(record.KindConsumerTarget), record.ConsumerTarget{Topics: tps}.Encode(),
			&ConsumerGroupTargetAssignmentMemberKey{Group: "cg", Member: "mem"}, &ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: want}},
		{"current", mk(record.KindConsumerCurrent), record.ConsumerCurrent{MemberEpoch: 11, PreviousMemberEpoch: 10, State: 1, Assigned: tps, Revoking: tps[:1]}.Encode(),
			&ConsumerGroupCurrentMemberAssignmentKey{Group: "cg", Member: "mem"},
			&ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: 11, PreviousMemberEpoch: 10, State: 1, AssignedPartitions: want, PartitionsPendingRevocation: want[:1]}},
	} {
		k, v := translate(t, tc.key, tc.val)
		gotKey, err := ReadKey(k)
		if err != nil {
			t.Fatalf("%s: ReadKey: %v", tc.name, err)
		}
		if !reflect.DeepEqual(gotKey, tc.wantKey) {
			t.Errorf("%s: key %#v, want %#v", tc.name, gotKey, tc.wantKey)
		}
		gotVal, err := ReadValue(gotKey, v)
		if err != nil {
			t.Fatalf("%s: ReadValue: %v", tc.name, err)
		}
		if !reflect.DeepEqual(gotVal, tc.wantVal) {
			t.Errorf("%s: value %#v, want %#v", tc.name, gotVal, tc.wantVal)
		}
		if kt, _ := translate(t, tc.key, nil); !bytes.Equal(kt, k) {
			t.Errorf("%s: tombstone key %x, want %x", tc.name, kt, k)
		}
	}
}

// TestKIP848Bytes pins the bytes of each KIP-848 record against Kafka's
// schemas, field by field: keys are non-flexible (int16 version, int16
// string lengths), values flexible from version 0 (compact lengths, +1;
// a tagged-field section, 00 when empty, closing each struct).
func TestKIP848Bytes(t *testing.T) {
	regex := "r"
	id := [16]byte{15: 9}
	uuid := "00000000000000000000000000000009"
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"ConsumerGroupMetadataKey", (&ConsumerGroupMetadataKey{Group: "g"}).AppendTo(nil), "0003" + "000167"},
		{"ConsumerGroupMetadataValue", (&ConsumerGroupMetadataValue{Epoch: 5}).AppendTo(nil), "0000" + "00000005" + "00"},
		{"ConsumerGroupMemberMetadataKey", (&ConsumerGroupMemberMetadataKey{Group: "g", Member: "m"}).AppendTo(nil), "0005" + "000167" + "00016d"},
		{"ConsumerGroupMemberMetadataValue", (&ConsumerGroupMemberMetadataValue{ClientID: "c", ClientHost: "h", SubscribedTopicNames: []string{"t"}, SubscribedTopicRegex: &regex, RebalanceTimeoutMillis: 1000}).AppendTo(nil),
			"0000" + "00" + "00" + "0263" + "0268" + "02" + "0274" + "0272" + "000003e8" + "00" + "00"},
		{"ConsumerGroupTargetAssignmentMetadataKey", (&ConsumerGroupTargetAssignmentMetadataKey{Group: "g"}).AppendTo(nil), "0006" + "000167"},
		{"ConsumerGroupTargetAssignmentMetadataValue", (&ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 5}).AppendTo(nil), "0000" + "00000005" + "00"},
		{"ConsumerGroupTargetAssignmentMemberKey", (&ConsumerGroupTargetAssignmentMemberKey{Group: "g", Member: "m"}).AppendTo(nil), "0007" + "000167" + "00016d"},
		{"ConsumerGroupTargetAssignmentMemberValue", (&ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: []TopicPartitions{{TopicID: id, Partitions: []int32{1}}}}).AppendTo(nil),
			"0000" + "02" + uuid + "02" + "00000001" + "00" + "00"},
		{"ConsumerGroupCurrentMemberAssignmentKey", (&ConsumerGroupCurrentMemberAssignmentKey{Group: "g", Member: "m"}).AppendTo(nil), "0008" + "000167" + "00016d"},
		{"ConsumerGroupCurrentMemberAssignmentValue", (&ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: 3, PreviousMemberEpoch: 2, State: 0, AssignedPartitions: []TopicPartitions{{TopicID: id, Partitions: []int32{0}}}}).AppendTo(nil),
			"0000" + "00000003" + "00000002" + "00" + "02" + uuid + "02" + "00000000" + "00" + "01" + "00"},
		{"member with classic metadata (tag 0)", (&ConsumerGroupMemberMetadataValue{RebalanceTimeoutMillis: -1, ClassicMemberMetadata: &ClassicMemberMetadata{SessionTimeoutMillis: 10, SupportedProtocols: []ClassicProtocol{{Name: "p", Metadata: []byte{7}}}}}).AppendTo(nil),
			"0000" + "00" + "00" + "01" + "01" + "01" + "00" + "ffffffff" + "00" + "01" + "00" + "0b" + "0000000a" + "02" + "0270" + "0207" + "00" + "00"},
	} {
		if got := hex.EncodeToString(tc.got); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestNotShown: another tenant's records and the assigner's are not in
// the topic.
func TestNotShown(t *testing.T) {
	for _, key := range [][]byte{
		record.OffsetKey{GroupKey: record.GroupKey{Shard: 1, Tenant: "org", Group: "g"}, Topic: "t"}.Key(),
		record.GroupKey{Shard: 1, Tenant: "org", Group: "g"}.Key(),
		record.MemberKey{GroupKey: record.GroupKey{Shard: record.AssignerShard, Group: "g"}, Kind: record.KindAssignerConsumer, Member: "c"}.Key(),
		record.OffsetsTopicKey{Shard: 1}.Key(),
	} {
		if _, _, ok, err := Translate(key, nil); ok || err != nil {
			t.Errorf("%x: shown=%v err=%v", key, ok, err)
		}
	}
}

// TestReadKeyRefuses: unknown types, truncations and trailing bytes.
func TestReadKeyRefuses(t *testing.T) {
	good := (&ConsumerGroupMemberMetadataKey{Group: "g", Member: "m"}).AppendTo(nil)
	for n := range len(good) {
		if _, err := ReadKey(good[:n]); err == nil {
			t.Errorf("key truncated to %d bytes decoded", n)
		}
	}
	if _, err := ReadKey(append(bytes.Clone(good), 0)); err == nil {
		t.Error("key with a trailing byte decoded")
	}
	if _, err := ReadKey([]byte{0, 9, 0, 0}); err == nil {
		t.Error("type 9 decoded")
	}
	v := (&ConsumerGroupCurrentMemberAssignmentValue{AssignedPartitions: []TopicPartitions{{Partitions: []int32{1, 2}}}}).AppendTo(nil)
	k := &ConsumerGroupCurrentMemberAssignmentKey{}
	for n := range len(v) {
		if _, err := ReadValue(k, v[:n]); err == nil {
			t.Errorf("value truncated to %d bytes decoded", n)
		}
	}
}
