package kafka

// FindCoordinator, key 10.
//
// Version notes:
//   - v0: one group key; the coordinator's node, host and port.
//   - v1 (KIP-98): CoordinatorType (0 group, 1 transaction);
//     ThrottleMillis and ErrorMessage.
//   - v2: no change. v3: flexible.
//   - v4 (KIP-699): a batch of keys, one answer each.
//   - v5: no change for us (TRANSACTION_ABORTABLE allowed).
//   - v6 (KIP-932): key type 2, share groups.
//
// As Kafka's KafkaApis.getCoordinator: the key itself is not validated (an
// empty group id gets an answer like any other). A group's coordinator is
// the owner of its coordinator shard: this node when single, the shard's
// live owner in cluster mode, and while the shard has none,
// COORDINATOR_NOT_AVAILABLE, Kafka's answer while a coordinator is not
// known (clients retry). A transactional id's coordinator is the owner of
// its transaction coordinator shard, likewise (package txncoord; with
// transactions off, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as
// InitProducerId answers then); a share key's coordinator is the owner of
// its share-state shard (sharecoord), with CLUSTER_ACTION on the cluster
// as Kafka asks (brokers ask for it, not clients), INVALID_REQUEST for a
// key that is not "groupId:topicId:partition" or a version below 6; any
// other key type makes the whole request INVALID_REQUEST.
// v0–3 successes carry ErrorMessage "NONE", as Kafka sends them.

import (
	"context"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/sharecoord"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.FindCoordinator, 0, 6, handleFindCoordinator) }

// Coordinator key types.
const (
	keyGroup       = 0
	keyTransaction = 1
	keyShare       = 2
)

func handleFindCoordinator(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if hdr.version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port = key, -1, -1
		switch req.CoordinatorType {
		case keyGroup:
			// With authorization on, as Kafka: DESCRIBE on the group.
			if !s.authorize(hdr, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, key) {
				c.ErrorCode = kerr.GroupAuthorizationFailed.Code
				break
			}
			b, ok := s.cluster.Coordinator(s.groups.ShardFor(hdr.tenant(), key))
			if !ok {
				c.ErrorCode = kerr.CoordinatorNotAvailable.Code
				c.ErrorMessage = errPtr(kerr.CoordinatorNotAvailable.Description)
				break
			}
			c.Host, c.Port = b.at(hdr.listenerName())
			c.NodeID = b.NodeID
		case keyTransaction:
			if s.txn == nil {
				c.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				c.ErrorMessage = errPtr("Transactions are off on this node.")
				break
			}
			// As Kafka: DESCRIBE on the transactional id.
			if !s.authorize(hdr, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, key) {
				c.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				break
			}
			b, ok := s.cluster.Coordinator(s.txnUnit(hdr.tenant(), key))
			if !ok {
				c.ErrorCode = kerr.CoordinatorNotAvailable.Code
				c.ErrorMessage = errPtr(kerr.CoordinatorNotAvailable.Description)
				break
			}
			c.Host, c.Port = b.at(hdr.listenerName())
			c.NodeID = b.NodeID
		case keyShare:
			// KIP-932: the key is "groupId:topicId:partition", the
			// share partition whose state the coordinator keeps.
			if hdr.version < 6 || s.share == nil {
				c.ErrorCode = kerr.InvalidRequest.Code
				c.ErrorMessage = errPtr("Share coordinators need FindCoordinator v6 and share groups on.")
				break
			}
			if !s.authorizeCluster(hdr, kmsg.ACLOperationClusterAction) {
				c.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				break
			}
			k, err := sharecoord.ParseKey(hdr.tenant(), key)
			if err != nil {
				c.ErrorCode = kerr.InvalidRequest.Code
				c.ErrorMessage = errPtr(err.Error())
				break
			}
			b, ok := s.cluster.Coordinator(s.shareUnit(k))
			if !ok {
				c.ErrorCode = kerr.CoordinatorNotAvailable.Code
				c.ErrorMessage = errPtr(kerr.CoordinatorNotAvailable.Description)
				break
			}
			c.Host, c.Port = b.at(hdr.listenerName())
			c.NodeID = b.NodeID
		default:
			c.ErrorCode = kerr.InvalidRequest.Code
			c.ErrorMessage = errPtr("Unknown coordinator type.")
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if hdr.version < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
		resp.ErrorMessage = c.ErrorMessage
		if c.ErrorCode == 0 {
			resp.ErrorMessage = errPtr("NONE")
		}
	}
	return done(resp)
}

// shareUnit is the cluster unit of a share partition's share-state
// shard.
func (s *Server) shareUnit(k sharestate.Key) int { return s.ShareUnit(s.share.ShardFor(k)) }

// ShareUnit is the cluster unit of share-state shard i: the units after
// the group coordinator's shards, the assigner's and the transaction
// coordinator's.
func (s *Server) ShareUnit(i int) int {
	txn := 0
	if s.txn != nil {
		txn = s.txn.Shards()
	}
	return s.groups.Shards() + 1 + txn + i
}
