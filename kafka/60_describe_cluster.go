package kafka

// DescribeCluster, key 60.
//
// Version notes:
//   - v0 (KIP-700): cluster id, controller, brokers; flexible from the start.
//   - v1 (KIP-919): EndpointType; asking a broker for controllers gets
//     UNSUPPORTED_ENDPOINT_TYPE, as Kafka.
//   - v2 (KIP-1073): IncludeFencedBrokers and IsFenced; ours never is.
//
// The brokers are the live nodes (one when single), the controller the
// cluster's.

import (
	"context"
	"github.com/cohort-dev/cohort/security"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeCluster, 0, 2, handleDescribeCluster) }

const endpointBrokers = 1

func handleDescribeCluster(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointBrokers
	if hdr.version >= 1 && req.EndpointType != endpointBrokers {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = errPtr("The broker only serves broker endpoints.")
		return done(resp)
	}
	resp.ClusterID = s.topics.ClusterID()
	resp.ControllerID = s.cluster.Controller()
	for _, b := range s.cluster.Brokers() {
		db := kmsg.NewDescribeClusterResponseBroker()
		db.Host, db.Port = b.at(hdr.listenerName())
		db.NodeID, db.Rack = b.NodeID, b.Rack
		resp.Brokers = append(resp.Brokers, db)
	}
	resp.ClusterAuthorizedOperations = unrequestedOps
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = s.authorizedOperations(hdr, kmsg.ACLResourceTypeCluster, security.ClusterName)
	}
	return done(resp)
}
