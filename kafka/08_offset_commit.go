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
	// bad[i][j] is the error of partition j of topic i, 0 if it goes to
	// the coordinator.
	bad := make([][]int16, len(req.Topics))
	known := *req
	known.Topics = nil
	anyBad := false
	ids := map[string][16]byte{}
	for i, t := range req.Topics {
		topic := s.topics.Topic(t.Topic)
		if topic != nil {
			ids[t.Topic] = topic.ID
		}
		bad[i] = make([]int16, len(t.Partitions))
		kt := t
		kt.Partitions = nil
		for j, p := range t.Partitions {
			if _, code := partitionOf(topic, p.Partition, false); code != 0 {
				bad[i][j], anyBad = code, true
				continue
			}
			kt.Partitions = append(kt.Partitions, p)
		}
		if len(kt.Partitions) > 0 {
			known.Topics = append(known.Topics, kt)
		}
	}
	var wait func() kmsg.Response
	if len(known.Topics) > 0 {
		wait = s.commitToGroups(hdr, &known, ids)
	}
	return func() kmsg.Response {
		if !anyBad && wait != nil {
			return wait()
		}
		// Merge: the coordinator's answers fill the partitions it saw, in
		// request order.
		var got []kmsg.OffsetCommitResponseTopic
		if wait != nil {
			got = wait().(*kmsg.OffsetCommitResponse).Topics
		}
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		k, kp := 0, 0 // position in got
		for i, t := range req.Topics {
			rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic}
			for j, p := range t.Partitions {
				code := bad[i][j]
				if code == 0 {
					code = got[k].Partitions[kp].ErrorCode
					if kp++; kp == len(got[k].Partitions) {
						k, kp = k+1, 0
					}
				}
				rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}
