package kafka

// AddOffsetsToTxn, key 25: a group's offsets join the transaction (Kafka
// adds the group's __consumer_offsets partition; Cohort records the group,
// whose pending offsets the transaction's end commits or drops).
//
// Version notes:
//   - v0: transactional id, producer id and epoch, group.
//   - v1: no change. v2 (KIP-588): PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
//     before). v3: flexible. v4: no change (TRANSACTION_ABORTABLE).

import (
	"context"

	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.AddOffsetsToTxn, 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(ctx context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	// Another node adding a group on a TxnOffsetCommit v5's behalf
	// (KIP-890 part 2, txn_offsets.go) is authorized as a node, as
	// AddPartitionsToTxn v4's broker form.
	peer := s.txn != nil && s.cfg.Authorizer != nil && s.authorizeCluster(hdr, kmsg.ACLOperationClusterAction)
	switch {
	case peer:
	case s.txn == nil || !s.authorizeTxnID(hdr, req.TransactionalID):
		// With authorization on, as Kafka: WRITE on the transactional
		// id, READ on the group.
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return done(resp)
	case !s.authorize(hdr, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return done(resp)
	}
	// A node's request carries the organisation it acts for in a tag
	// (peerTenant: trusted only from the default organisation's
	// connections, the nodes' own); a client's acts for its own.
	tenant := s.peerTenant(hdr, &req.UnknownTags)
	return func() kmsg.Response {
		r := s.txnDo(ctx, tenant, req.TransactionalID, txn.AddGroupCmd{Tenant: tenant, TxnID: req.TransactionalID, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Group: req.Group})
		resp.ErrorCode = fenced(r.Code, hdr.version, 2)
		return resp
	}
}
