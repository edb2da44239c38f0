package kafka

// InitProducerId, key 22.
//
// Version notes:
//   - v0: TransactionalID and timeout; a new producer id, epoch 0.
//   - v1: ThrottleMillis semantics.
//   - v2: flexible.
//   - v3 (KIP-360): ProducerID/ProducerEpoch to bump an existing epoch.
//     For a non-transactional producer Kafka hands out a fresh id
//     regardless, and so does Cohort.
//   - v4: PRODUCER_FENCED may be returned.
//   - v5 (KIP-890): no change for idempotent producers.
//
// A transactional id goes to its transaction coordinator shard
// (coordinator/txn, through package txncoord): a new id gets a new
// producer id at epoch 0, a known one its epoch bumped (which fences the
// previous producer with the id), an ongoing transaction is aborted first
// (CONCURRENT_TRANSACTIONS, which clients retry). "" is INVALID_REQUEST,
// as Kafka's KafkaApis. With transactions off, a transactional id is
// refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, the answer a broker
// gives a client that may not use transactions, which clients treat as
// fatal rather than retrying forever.

import (
	"context"

	"github.com/cohort-dev/cohort/coordinator/txn"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.InitProducerID, 0, 5, handleInitProducerID) }

func handleInitProducerID(ctx context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		switch {
		case s.txn == nil:
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return done(resp)
		case *req.TransactionalID == "":
			resp.ErrorCode = kerr.InvalidRequest.Code
			return done(resp)
		case !s.authorizeTxnID(hdr, *req.TransactionalID):
			// With authorization on, as Kafka: WRITE on the id.
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return done(resp)
		}
		return func() kmsg.Response { return s.initTransactional(ctx, hdr.tenant(), req, resp) }
	}
	// With authorization on, as Kafka: an idempotent producer needs
	// IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
	if az := s.cfg.Authorizer; az != nil && !s.authorizeCluster(hdr, kmsg.ACLOperationIdempotentWrite) &&
		!az.AuthorizeByResourceType(authzRequest(hdr), kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return done(resp)
	}
	// The id reservation may fsync; do it on the writer.
	return func() kmsg.Response {
		id, err := s.topics.NextProducerID()
		if err != nil {
			s.logger.Error("allocating a producer id", "err", err)
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return resp
	}
}

// initTransactional serves InitProducerId with a transactional id. The
// new producer id it allocates is used only if the shard needs one (a new
// transactional id, an exhausted epoch); ids are plentiful.
func (s *Server) initTransactional(ctx context.Context, tenant string, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) kmsg.Response {
	id, err := s.topics.NextProducerID()
	if err != nil {
		s.logger.Error("allocating a producer id", "err", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	pid, epoch := int64(-1), int16(-1)
	if req.Version >= 3 {
		pid, epoch = req.ProducerID, req.ProducerEpoch
	}
	r := s.txnDo(ctx, tenant, *req.TransactionalID, txn.InitCmd{Tenant: tenant, TxnID: *req.TransactionalID,
		TimeoutMs: req.TransactionTimeoutMillis, ProducerID: pid, ProducerEpoch: epoch, NewProducerID: id})
	resp.ErrorCode = fenced(r.Code, req.Version, 4)
	if r.Code == 0 {
		resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.ProducerEpoch
	}
	return resp
}
