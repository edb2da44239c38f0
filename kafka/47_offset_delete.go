package kafka

// OffsetDelete, key 47 (KIP-496; docs/kafka-classic-groups.md §13): deletes
// a group's committed offsets for topics it is not subscribed to.
//
// Version notes:
//   - v0 is the only version.
//
// As Kafka's KafkaApis, partitions of unknown topics are answered
// UNKNOWN_TOPIC_OR_PARTITION and left out, but the group is consulted
// even when nothing is left, so that group errors still show.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(kmsg.OffsetDelete, 0, 0, handleOffsetDelete) }

func handleOffsetDelete(s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	known := *req
	var f partitionFilter
	known.Topics, f = filterPartitions(s, req.Topics,
		func(t kmsg.OffsetDeleteRequestTopic) string { return t.Topic },
		func(t kmsg.OffsetDeleteRequestTopic) []kmsg.OffsetDeleteRequestTopicPartition { return t.Partitions },
		func(p kmsg.OffsetDeleteRequestTopicPartition) int32 { return p.Partition },
		func(t kmsg.OffsetDeleteRequestTopic, ps []kmsg.OffsetDeleteRequestTopicPartition) kmsg.OffsetDeleteRequestTopic {
			t.Partitions = ps
			return t
		})
	wait := s.toGroups(hdr, &known)
	return func() kmsg.Response {
		got := wait().(*kmsg.OffsetDeleteResponse)
		if got.ErrorCode != 0 {
			return got // a group error: no topics, as Kafka
		}
		code := f.merge(codesOf(got.Topics,
			func(t kmsg.OffsetDeleteResponseTopic) []kmsg.OffsetDeleteResponseTopicPartition { return t.Partitions },
			func(p kmsg.OffsetDeleteResponseTopicPartition) int16 { return p.ErrorCode }))
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		for i, t := range req.Topics {
			rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
			for j, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: code(i, j)})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}
