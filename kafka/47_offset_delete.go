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
	bad := make([][]int16, len(req.Topics))
	known := *req
	known.Topics = nil
	for i, t := range req.Topics {
		topic := s.topics.Topic(t.Topic)
		bad[i] = make([]int16, len(t.Partitions))
		kt := t
		kt.Partitions = nil
		for j, p := range t.Partitions {
			if _, code := partitionOf(topic, p.Partition, false); code != 0 {
				bad[i][j] = code
				continue
			}
			kt.Partitions = append(kt.Partitions, p)
		}
		if len(kt.Partitions) > 0 {
			known.Topics = append(known.Topics, kt)
		}
	}
	wait := s.toGroups(hdr, &known)
	return func() kmsg.Response {
		got := wait().(*kmsg.OffsetDeleteResponse)
		if got.ErrorCode != 0 {
			return got // a group error: no topics, as Kafka
		}
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		k, kp := 0, 0
		for i, t := range req.Topics {
			rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
			for j, p := range t.Partitions {
				code := bad[i][j]
				if code == 0 {
					code = got.Topics[k].Partitions[kp].ErrorCode
					if kp++; kp == len(got.Topics[k].Partitions) {
						k, kp = k+1, 0
					}
				}
				rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}
