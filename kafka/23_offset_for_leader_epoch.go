package kafka

// OffsetForLeaderEpoch, key 23 (KIP-101, KIP-320).
//
// Version notes:
//   - v0: partitions with a leader epoch; answers the epoch's end offset.
//     v1: the answer's LeaderEpoch. v2: CurrentLeaderEpoch, to fence a
//     stale client. v3: ReplicaID (-1 for consumers). v4: flexible.
//
// Every partition has had one leader epoch, 0, from offset 0 on: each
// partition has one copy, on the node that leads it for ever. So, as
// Kafka's LeaderEpochFileCache.endOffsetFor: epoch 0 ends at the log end
// offset (the high watermark here), any other epoch is UNDEFINED (-1,
// -1); a CurrentLeaderEpoch above 0 is UNKNOWN_LEADER_EPOCH, as Fetch
// answers it. __consumer_offsets' partitions answer alike on the node that
// coordinates their shard. Unknown topics and partitions, another node's
// partitions: as Fetch. With authorization on: DESCRIBE on the topic for
// a consumer (ReplicaID -1), CLUSTER_ACTION on the cluster for a replica;
// else TOPIC_AUTHORIZATION_FAILED or CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.OffsetForLeaderEpoch, 0, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	replica := req.ReplicaID >= 0 && hdr.version >= 3
	clusterDenied := replica && !s.authorizeCluster(hdr, kmsg.ACLOperationClusterAction)
	sc := s.scope(hdr)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		denied := !replica && !s.authorize(hdr, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, rt.Topic)
		internal := sc.isOffsets(rt.Topic, [16]byte{}, false)
		t := sc.topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
			var part interface {
				Offsets() (logStart, highWatermark int64)
			}
			switch {
			case clusterDenied:
				sp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			case denied:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case internal:
				part, sp.ErrorCode = s.offsetsPartition(rp.Partition)
			default:
				part, sp.ErrorCode = s.partitionOf(t, rp.Partition, false)
			}
			switch {
			case sp.ErrorCode != 0:
			case rp.CurrentLeaderEpoch > 0:
				sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			case rp.LeaderEpoch == 0:
				_, end := part.Offsets()
				sp.LeaderEpoch, sp.EndOffset = 0, end
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}
