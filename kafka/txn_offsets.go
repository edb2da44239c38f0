package kafka

// TxnOffsetCommit v5+ with transaction version 2 (KIP-890 part 2): the
// client sends no AddOffsetsToTxn, so the group joins the producer's
// transaction here, before the group coordinator records the pending
// offsets: Kafka's group coordinator does the same through its partition
// writer's transaction verification, which for a v5+ commit adds the
// group's __consumer_offsets partition to the transaction. The add is
// durable before the offsets are written, so the transaction's end
// (commit or abort, or the coordinator's abort at a timeout) always
// reaches the group.

import (
	"context"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnOffsetCommitAdd adds r's group to its producer's transaction when
// the request asks for it (v5+ with transaction version 2). It returns
// nil to go on with the commit, or the commit's answer: the add's error
// on every partition. A request the principal may not make is left to
// the group path, which refuses it as for any version (nothing is added
// for it).
func (s *Server) txnOffsetCommitAdd(ctx context.Context, hdr *reqHeader, r *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	if hdr.version < 5 || !s.tv2() || s.txn == nil ||
		!s.authorizeTxnID(hdr, r.TransactionalID) || !s.authorize(hdr, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, r.Group) {
		return nil
	}
	code := s.addGroup(ctx, hdr.tenant(), r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group)
	switch code {
	case 0:
		return nil
	case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code,
		kerr.RequestTimedOut.Code, kerr.ConcurrentTransactions.Code:
		// The transaction coordinator is moving, loading or ending
		// the transaction: COORDINATOR_NOT_AVAILABLE, which clients
		// retry (after looking the group's coordinator up again), as
		// Kafka's group coordinator answers a failed verification.
		code = kerr.CoordinatorNotAvailable.Code
	}
	api, _ := groups.Lookup(int16(kmsg.TxnOffsetCommit))
	return api.Error(r, code)
}

// addGroup adds group to the producer's transaction on the node serving
// the tenant's transactional id's shard: here, or (cluster mode) the node
// that does, with AddOffsetsToTxn sent as this node (authorized there as
// CLUSTER_ACTION, 25_add_offsets_to_txn.go) and the organisation in a
// tag (tagTenant). Here the add is answered once its record is written
// (AddGroupCmd.Early): the pending offsets go next to the same store,
// which on a single node is one log, so their sync makes the add durable
// first (on a store that is not one log the add waits for its own sync).
func (s *Server) addGroup(ctx context.Context, tenant, id string, pid int64, epoch int16, group string) int16 {
	r := s.txnDo(ctx, tenant, id, txn.AddGroupCmd{Tenant: tenant, TxnID: id, ProducerID: pid, ProducerEpoch: epoch, Group: group, Early: true})
	if r.Code != kerr.NotCoordinator.Code {
		return r.Code
	}
	b, ok := s.cluster.Coordinator(s.txnUnit(tenant, id))
	if !ok || b.NodeID == s.cluster.Self() || s.cfg.Peer == nil {
		return kerr.NotCoordinator.Code
	}
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version = 4
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, group
	tagTenant(&req.UnknownTags, tenant)
	kresp, err := s.cfg.Peer(ctx, b.NodeID, req)
	if err != nil {
		s.warn.Warn("adding a group to a transaction at its coordinator", "node", b.NodeID, "transactional_id", id, "err", err)
		return kerr.NotCoordinator.Code
	}
	return kresp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode
}
