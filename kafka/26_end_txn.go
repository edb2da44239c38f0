package kafka

// EndTxn, key 26: commit or abort the producer's transaction.
//
// Version notes:
//   - v0: transactional id, producer id and epoch, commit.
//   - v1: no change. v2 (KIP-588): PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
//     before). v3: flexible. v4: no change (TRANSACTION_ABORTABLE).
//   - v5 (KIP-890 part 2): the transaction ends with an epoch bump; the
//     response carries the producer id and the new epoch (a new producer
//     id at epoch 0 once the epoch is exhausted). Clients send v5 when
//     the broker finalises transaction.version 2 (18_api_versions.go);
//     a v5 request is served as asked either way, as Kafka does.
//
// Unlike Kafka, which answers once the transaction is prepared, Cohort
// answers once its markers and offsets are durable and it is complete
// (coordinator/txn), so that the next transaction never meets
// CONCURRENT_TRANSACTIONS.

import (
	"context"
	"math"

	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.EndTxn, 0, 5, handleEndTxn) }

func handleEndTxn(ctx context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if s.txn == nil || !s.authorizeTxnID(hdr, req.TransactionalID) {
		// With authorization on, as Kafka: WRITE on the id.
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return done(resp)
	}
	return func() kmsg.Response {
		cmd := txn.EndCmd{Tenant: hdr.tenant(), TxnID: req.TransactionalID, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Commit: req.Commit, Bump: hdr.version >= 5, NewProducerID: -1}
		if cmd.Bump && req.ProducerEpoch >= math.MaxInt16-1 {
			// The bump will need a new producer id (the epoch is
			// exhausted); the machine cannot allocate one. Only
			// then: every v5 end would otherwise use one up.
			id, err := s.topics.NextProducerID()
			if err != nil {
				s.logger.Error("allocating a producer id", "err", err)
				resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
				return resp
			}
			cmd.NewProducerID = id
		}
		r := s.txnDo(ctx, hdr.tenant(), req.TransactionalID, cmd)
		resp.ErrorCode = fenced(r.Code, hdr.version, 2)
		if r.Code == 0 && hdr.version >= 5 {
			resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.ProducerEpoch
		}
		return resp
	}
}
