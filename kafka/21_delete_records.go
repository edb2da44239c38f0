package kafka

// DeleteRecords, key 21.
//
// Version notes:
//   - v0: topics with partitions and the offset before which to delete
//     (-1: the high watermark), TimeoutMillis. v1: no change. v2:
//     flexible.
//
// The partition's log start moves to the offset, durably (topics'
// DeleteRecordsBefore), and each partition answers its new low watermark:
// Fetch below it gets OFFSET_OUT_OF_RANGE, ListOffsets' earliest is it.
// As Kafka: an offset above the high watermark is OFFSET_OUT_OF_RANGE, an
// unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION, a partition
// another node leads NOT_LEADER_OR_FOLLOWER, __consumer_offsets
// INVALID_TOPIC_EXCEPTION (ReplicaManager.deleteRecords refuses internal
// topics), and with authorization on DELETE on the topic, else
// TOPIC_AUTHORIZATION_FAILED. The segments wholly below the new start
// stay on disk until segments are deleted by retention (not yet).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DeleteRecords, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	denied := make([]bool, len(req.Topics))
	for i, rt := range req.Topics {
		denied[i] = !s.authorize(hdr, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, rt.Topic)
	}
	sc := s.scope(hdr)
	// The new start is synced to disk: on the writer.
	return func() kmsg.Response {
		for ti, rt := range req.Topics {
			st := kmsg.NewDeleteRecordsResponseTopic()
			st.Topic = rt.Topic
			t := sc.topic(rt.Topic)
			internal := sc.isOffsets(rt.Topic, [16]byte{}, false)
			for _, rp := range rt.Partitions {
				sp := kmsg.NewDeleteRecordsResponseTopicPartition()
				sp.Partition, sp.LowWatermark = rp.Partition, -1
				p, code := s.partitionOf(t, rp.Partition, false)
				switch {
				case denied[ti]:
					sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case internal:
					sp.ErrorCode = kerr.InvalidTopicException.Code
				case code != 0:
					sp.ErrorCode = code
				default:
					low, err := p.DeleteRecordsBefore(rp.Offset)
					if err != nil {
						sp.ErrorCode = errorCode(err)
						if sp.ErrorCode == kerr.KafkaStorageError.Code {
							s.logger.Error("delete records", "topic", rt.Topic, "partition", rp.Partition, "err", err)
						}
						break
					}
					sp.LowWatermark = low
					s.logger.Info("deleted records", "topic", rt.Topic, "partition", rp.Partition, "log_start", low)
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
}
