package kafka

// WriteShareGroupState, key 85 (KIP-932): in Kafka, what a share
// partition's leader sends the share coordinator to make its state
// durable. Cohort's share-partition state is one machine that both keeps
// the locks and writes the records (coordinator/sharestate), so no
// partition leader writes Kafka's batches to it; the key carries instead
// the commands a partition's leader forwards to the node serving the
// partition's share-state shard (sharecoord/remote.go, share_route.go), in a tagged field
// (shareCmdTag), answered in the response's.
//
// As Kafka: CLUSTER_ACTION on the cluster (nodes, not clients, send it),
// else CLUSTER_AUTHORIZATION_FAILED for every partition named. A request
// with no forwarded command (Kafka's own write) gets INVALID_REQUEST for
// every partition: nothing here takes Kafka's state batches. The command
// runs on this node's share coordinator only, for the organisation the
// sending node names (peerTenant).
//
// Version notes: v0; v1 (Kafka 4.2) DeliveryCompleteCount.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.WriteShareGroupState, 0, 1, handleWriteShareGroupState) }

func handleWriteShareGroupState(ctx context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.WriteShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	failAll := func(code int16, msg string) func() kmsg.Response {
		for _, rt := range req.Topics {
			t := kmsg.NewWriteShareGroupStateResponseTopic()
			t.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				p := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, code
				if msg != "" {
					p.ErrorMessage = errPtr(msg)
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return done(resp)
	}
	if !s.authorizeCluster(hdr, kmsg.ACLOperationClusterAction) {
		return failAll(kerr.ClusterAuthorizationFailed.Code, "")
	}
	var raw []byte
	req.UnknownTags.Each(func(k uint32, v []byte) {
		if k == shareCmdTag {
			raw = v
		}
	})
	if raw == nil || s.share == nil {
		return failAll(kerr.InvalidRequest.Code, "Cohort's share coordinator keeps the share-partition state itself; it takes no state batches.")
	}
	tenant := s.peerTenant(hdr, &req.UnknownTags)
	return func() kmsg.Response {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shareRPCTimeout)
		defer cancel()
		out, err := s.share.RunForwarded(ctx, tenant, raw)
		if err != nil {
			s.warn.Warn("forwarded share command refused", "err", err)
			return resp
		}
		resp.UnknownTags.Set(shareCmdTag, out)
		return resp
	}
}
