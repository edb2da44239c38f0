package kafka_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAlterConfigs: AlterConfigs replaces a topic's explicit configs and
// IncrementalAlterConfigs changes them by operation (SET, DELETE, APPEND
// and SUBTRACT of a list), each answered with Kafka's codes for what it
// refuses; validate_only changes nothing, an enforced config takes effect
// at once (max.message.bytes bounds the next produce), and a broker's
// configs are not dynamic.
func TestAlterConfigs(t *testing.T) {
	addr := startNode(t, false)
	c := dial(t, addr)
	createTopic(c, "ac", 1, map[string]string{"retention.ms": "1000"})
	configs := func() map[string]string {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "ac"
		req.Resources = append(req.Resources, rr)
		out := map[string]string{}
		for _, e := range roundTrip[*kmsg.DescribeConfigsResponse](c, 4, req).Resources[0].Configs {
			if e.Source == kmsg.ConfigSourceDynamicTopicConfig {
				out[e.Name] = *e.Value
			}
		}
		return out
	}
	type op = configOp
	incremental := func(validateOnly bool, typ kmsg.ConfigResourceType, name string, ops ...op) (int16, string) {
		return alterIncremental(c, validateOnly, typ, name, ops...)
	}
	want := func(what string, got map[string]string, w map[string]string) {
		t.Helper()
		if len(got) != len(w) {
			t.Fatalf("%s: configs %v, want %v", what, got, w)
		}
		for k, v := range w {
			if got[k] != v {
				t.Fatalf("%s: configs %v, want %v", what, got, w)
			}
		}
	}

	// Incremental: SET keeps the others, APPEND adds to the default list.
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	app, sub := kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract
	if code, msg := incremental(false, kmsg.ConfigResourceTypeTopic, "ac", op{"segment.ms", "60000", set}, op{"cleanup.policy", "compact", app}); code != 0 {
		t.Fatalf("set and append: %v %s", kerr.ErrorForCode(code), msg)
	}
	want("after set and append", configs(), map[string]string{"retention.ms": "1000", "segment.ms": "60000", "cleanup.policy": "delete,compact"})
	if code, _ := incremental(false, kmsg.ConfigResourceTypeTopic, "ac", op{"cleanup.policy", "delete", sub}, op{"retention.ms", "", del}); code != 0 {
		t.Fatalf("subtract and delete: %v", kerr.ErrorForCode(code))
	}
	want("after subtract and delete", configs(), map[string]string{"segment.ms": "60000", "cleanup.policy": "compact"})

	// Validate only: checked, not written.
	if code, _ := incremental(true, kmsg.ConfigResourceTypeTopic, "ac", op{"segment.ms", "1", set}); code != 0 {
		t.Fatalf("validate only: %v", kerr.ErrorForCode(code))
	}
	want("after validate only", configs(), map[string]string{"segment.ms": "60000", "cleanup.policy": "compact"})

	// What Kafka refuses.
	for _, tc := range []struct {
		what string
		typ  kmsg.ConfigResourceType
		name string
		ops  []op
		code int16
		msg  string
	}{
		{"unknown topic", kmsg.ConfigResourceTypeTopic, "nope", []op{{"segment.ms", "1", set}}, kerr.UnknownTopicOrPartition.Code, "does not exist"},
		{"unknown config", kmsg.ConfigResourceTypeTopic, "ac", []op{{"no.such.config", "1", set}}, kerr.InvalidConfig.Code, "Unknown topic config name"},
		{"bad value", kmsg.ConfigResourceTypeTopic, "ac", []op{{"retention.ms", "soon", set}}, kerr.InvalidConfig.Code, "retention.ms"},
		{"bad list item", kmsg.ConfigResourceTypeTopic, "ac", []op{{"cleanup.policy", "shred", app}}, kerr.InvalidConfig.Code, "cleanup.policy"},
		// Kafka's validators, which kafkactl's alter topic met.
		{"unknown compression", kmsg.ConfigResourceTypeTopic, "ac", []op{{"compression.type", "brotli", set}}, kerr.InvalidConfig.Code, "Invalid value brotli for configuration compression.type: String must be one of"},
		{"retention.ms below -1", kmsg.ConfigResourceTypeTopic, "ac", []op{{"retention.ms", "-2", set}}, kerr.InvalidConfig.Code, "Value must be at least -1"},
		{"segment.ms 0", kmsg.ConfigResourceTypeTopic, "ac", []op{{"segment.ms", "0", set}}, kerr.InvalidConfig.Code, "Value must be at least 1"},
		{"min.insync.replicas 0", kmsg.ConfigResourceTypeTopic, "ac", []op{{"min.insync.replicas", "0", set}}, kerr.InvalidConfig.Code, "Value must be at least 1"},
		{"delete.retention.ms below 0", kmsg.ConfigResourceTypeTopic, "ac", []op{{"delete.retention.ms", "-1", set}}, kerr.InvalidConfig.Code, "Value must be at least 0"},
		{"a boolean of 1", kmsg.ConfigResourceTypeTopic, "ac", []op{{"unclean.leader.election.enable", "1", set}}, kerr.InvalidConfig.Code, "Expected value to be either true or false"},
		{"append to a non-list", kmsg.ConfigResourceTypeTopic, "ac", []op{{"retention.ms", "5", app}}, kerr.InvalidConfig.Code, "append is not allowed"},
		{"a key twice", kmsg.ConfigResourceTypeTopic, "ac", []op{{"segment.ms", "1", set}, {"segment.ms", "2", set}}, kerr.InvalidRequest.Code, "duplicate config keys"},
		{"a broker config", kmsg.ConfigResourceTypeBroker, "0", []op{{"log.retention.ms", "1", set}}, kerr.InvalidRequest.Code, "Cannot update these configs dynamically"},
		{"another broker", kmsg.ConfigResourceTypeBroker, "7", []op{{"log.retention.ms", "1", set}}, kerr.InvalidRequest.Code, "Unexpected broker id"},
		{"a group's session below the bound", kmsg.ConfigResourceTypeGroupConfig, "g", []op{{"consumer.session.timeout.ms", "1", set}}, kerr.InvalidConfig.Code, "must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{"client metrics", kmsg.ConfigResourceTypeClientMetrics, "m", []op{{"interval.ms", "1", set}}, kerr.InvalidRequest.Code, "Unsupported resource type"},
	} {
		code, msg := incremental(false, tc.typ, tc.name, tc.ops...)
		if code != tc.code || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %v %q, want %v with %q", tc.what, kerr.ErrorForCode(code), msg, kerr.ErrorForCode(tc.code), tc.msg)
		}
	}
	want("after the refusals", configs(), map[string]string{"segment.ms": "60000", "cleanup.policy": "compact"})

	// AlterConfigs replaces every explicit config; the resource named
	// twice is refused.
	legacy := func(v int16, resources ...string) []kmsg.AlterConfigsResponseResource {
		req := kmsg.NewPtrAlterConfigsRequest()
		for _, name := range resources {
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, name
			e := kmsg.NewAlterConfigsRequestResourceConfig()
			e.Name, e.Value = "max.message.bytes", kmsg.StringPtr("200")
			rr.Configs = append(rr.Configs, e)
			req.Resources = append(req.Resources, rr)
		}
		return roundTrip[*kmsg.AlterConfigsResponse](c, v, req).Resources
	}
	if rs := legacy(0, "ac", "ac"); rs[0].ErrorCode != kerr.InvalidRequest.Code || rs[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("a topic twice: %v, %v", kerr.ErrorForCode(rs[0].ErrorCode), kerr.ErrorForCode(rs[1].ErrorCode))
	}
	if rs := legacy(2, "ac"); rs[0].ErrorCode != 0 {
		t.Fatalf("alter configs: %v", kerr.ErrorForCode(rs[0].ErrorCode))
	}
	want("after AlterConfigs", configs(), map[string]string{"max.message.bytes": "200"})

	// max.message.bytes is enforced at once: a batch over 200 bytes is
	// refused.
	resp := roundTrip[*kmsg.ProduceResponse](c, 9, produceReq("ac", [16]byte{}, 0, -1, plain(4, 100).encode()))
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.MessageTooLarge.Code {
		t.Fatalf("produce over the new max.message.bytes: %v", kerr.ErrorForCode(code))
	}
}

// TestDeleteRecords: the log start moves to the offset asked (-1: the
// high watermark); Fetch below it is OFFSET_OUT_OF_RANGE, ListOffsets'
// earliest is it; an offset past the high watermark, an unknown
// partition and __consumer_offsets get Kafka's codes.
func TestDeleteRecords(t *testing.T) {
	addr := startNode(t, false)
	c := dial(t, addr)
	id := createTopic(c, "dr", 2, nil)
	for range 3 {
		mustProduce(c, "dr", 0, plain(2, 16).encode()) // offsets 0-5
	}
	mustProduce(c, "dr", 1, plain(2, 16).encode())
	del := func(topic string, parts map[int32]int64) map[int32]kmsg.DeleteRecordsResponseTopicPartition {
		req := kmsg.NewPtrDeleteRecordsRequest()
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = topic
		for p, off := range parts {
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Partition, rp.Offset = p, off
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		out := map[int32]kmsg.DeleteRecordsResponseTopicPartition{}
		for _, sp := range roundTrip[*kmsg.DeleteRecordsResponse](c, 2, req).Topics[0].Partitions {
			out[sp.Partition] = sp
		}
		return out
	}
	got := del("dr", map[int32]int64{0: 3, 1: -1, 2: 0})
	if got[0].ErrorCode != 0 || got[0].LowWatermark != 3 {
		t.Fatalf("partition 0: %v, low watermark %d, want 3", kerr.ErrorForCode(got[0].ErrorCode), got[0].LowWatermark)
	}
	if got[1].ErrorCode != 0 || got[1].LowWatermark != 2 {
		t.Fatalf("partition 1 to the high watermark: %v, low watermark %d, want 2", kerr.ErrorForCode(got[1].ErrorCode), got[1].LowWatermark)
	}
	if got[2].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("partition 2: %v", kerr.ErrorForCode(got[2].ErrorCode))
	}
	if got := del("dr", map[int32]int64{0: 99}); got[0].ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("past the high watermark: %v", kerr.ErrorForCode(got[0].ErrorCode))
	}
	if got := del("dr", map[int32]int64{0: 1}); got[0].ErrorCode != 0 || got[0].LowWatermark != 3 {
		t.Fatalf("below the log start: %v, low watermark %d, want 3 kept", kerr.ErrorForCode(got[0].ErrorCode), got[0].LowWatermark)
	}
	if got := del("__consumer_offsets", map[int32]int64{0: 0}); got[0].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("__consumer_offsets: %v", kerr.ErrorForCode(got[0].ErrorCode))
	}
	fr := roundTrip[*kmsg.FetchResponse](c, 12, fetchReq("dr", id, 0, 1, 0, 1))
	if code := fr.Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch at 1: %v, want OFFSET_OUT_OF_RANGE", kerr.ErrorForCode(code))
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "dr"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -2
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	if sp := roundTrip[*kmsg.ListOffsetsResponse](c, 7, lo).Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.Offset != 3 {
		t.Fatalf("earliest: %v %d, want 3", kerr.ErrorForCode(sp.ErrorCode), sp.Offset)
	}
}

// TestOffsetForLeaderEpoch: epoch 0 ends at the log end offset, a
// current epoch above ours is UNKNOWN_LEADER_EPOCH, an unknown partition
// UNKNOWN_TOPIC_OR_PARTITION.
func TestOffsetForLeaderEpoch(t *testing.T) {
	addr := startNode(t, false)
	c := dial(t, addr)
	createTopic(c, "ep", 1, nil)
	mustProduce(c, "ep", 0, plain(3, 16).encode())
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = "ep"
	for _, p := range []struct{ part, current, epoch int32 }{{0, 0, 0}, {0, 1, 0}, {5, -1, 0}} {
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p.part, p.current, p.epoch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	ps := roundTrip[*kmsg.OffsetForLeaderEpochResponse](c, 4, req).Topics[0].Partitions
	if ps[0].ErrorCode != 0 || ps[0].EndOffset != 3 || ps[0].LeaderEpoch != 0 {
		t.Errorf("epoch 0: %v end %d epoch %d, want end 3", kerr.ErrorForCode(ps[0].ErrorCode), ps[0].EndOffset, ps[0].LeaderEpoch)
	}
	if ps[1].ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("current epoch 1: %v", kerr.ErrorForCode(ps[1].ErrorCode))
	}
	if ps[2].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("partition 5: %v", kerr.ErrorForCode(ps[2].ErrorCode))
	}
}
