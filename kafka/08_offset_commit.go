package kafka

// OffsetCommit, key 8 (docs/kafka-classic-groups.md §11): the answer is
// sent only after the offsets are durable.
//
// Version notes:
//   - v0: no generation or member: a simple commit (Kafka served v0 only
//     from ZooKeeper; it is kept for old clients).
//   - v1: Generation and MemberID; a per-partition Timestamp used as the
//     commit time when not -1.
//   - v2–v4: RetentionTimeMillis. Cohort applies the broker's retention
//     to every offset, as Kafka does for -1 (what clients send).
//   - v3: ThrottleMillis.
//   - v5: no retention time.
//   - v6: CommittedLeaderEpoch (KIP-320).
//   - v7: InstanceID (KIP-345).
//   - v8: flexible.
//   - v9: GROUP_ID_NOT_FOUND (not ILLEGAL_GENERATION) for a member commit
//     to a group that does not exist (KIP-848).
//   - v10 (topic ids) is not served.
//
// As Kafka's KafkaApis, partitions of unknown topics are answered
// UNKNOWN_TOPIC_OR_PARTITION before the group is consulted; when none is
// left the group is not consulted at all (no group is created).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.OffsetCommit, 0, 9, handleOffsetCommit) }

func handleOffsetCommit(s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.OffsetCommitRequest)
	ids := map[string][16]byte{}
	for _, t := range req.Topics {
		if topic := s.topics.Topic(t.Topic); topic != nil {
			ids[t.Topic] = topic.ID
		}
	}
	known := *req
	var f partitionFilter
	known.Topics, f = filterPartitions(s, req.Topics,
		func(t kmsg.OffsetCommitRequestTopic) string { return t.Topic },
		func(t kmsg.OffsetCommitRequestTopic) []kmsg.OffsetCommitRequestTopicPartition { return t.Partitions },
		func(p kmsg.OffsetCommitRequestTopicPartition) int32 { return p.Partition },
		func(t kmsg.OffsetCommitRequestTopic, ps []kmsg.OffsetCommitRequestTopicPartition) kmsg.OffsetCommitRequestTopic {
			t.Partitions = ps
			return t
		})
	var wait func() kmsg.Response
	if len(known.Topics) > 0 {
		wait = s.commitToGroups(hdr, &known, ids)
	}
	return func() kmsg.Response {
		if !f.anyBad && wait != nil {
			return wait()
		}
		var codes [][]int16
		if wait != nil {
			codes = codesOf(wait().(*kmsg.OffsetCommitResponse).Topics,
				func(t kmsg.OffsetCommitResponseTopic) []kmsg.OffsetCommitResponseTopicPartition { return t.Partitions },
				func(p kmsg.OffsetCommitResponseTopicPartition) int16 { return p.ErrorCode })
		}
		code := f.merge(codes)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for i, t := range req.Topics {
			rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic}
			for j, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code(i, j)})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}
