package kafka

// OffsetForLeaderEpoch, key 23 (KIP-101, KIP-320).
//
// Version notes:
//   - v0: partitions with a leader epoch; answers the epoch's end offset.
//     v1: the answer's LeaderEpoch. v2: CurrentLeaderEpoch, to fence a
//     stale client. v3: ReplicaID (-1 for consumers). v4: flexible.
//
// A partition's leader epoch rises each time its node starts serving it
// (topics/epochs.go), and the partition keeps where each epoch began. So,
// as Kafka's LeaderEpochFileCache.endOffsetFor: the current epoch ends at
// the log end offset (the high watermark here), an earlier one where the
// next began (an epoch with no records of its own answers the one
// before), an epoch above every one known is UNDEFINED (-1, -1). The
// request's CurrentLeaderEpoch is checked as Fetch checks it
// (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH). __consumer_offsets'
// partitions have one epoch, 0, and answer on the node that coordinates
// their shard. Unknown topics and partitions, another node's
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
				LeaderEpoch() int32
				EndOffsetFor(epoch int32) (int32, int64)
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
			case leaderEpochCode(rp.CurrentLeaderEpoch, part.LeaderEpoch()) != 0:
				sp.ErrorCode = leaderEpochCode(rp.CurrentLeaderEpoch, part.LeaderEpoch())
			default:
				sp.LeaderEpoch, sp.EndOffset = part.EndOffsetFor(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}
