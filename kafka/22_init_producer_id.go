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
// Cohort has idempotent producers but no transaction coordinator: a
// transactional id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
// the answer a broker gives a client that may not use transactions, which
// clients treat as fatal rather than retrying forever.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.InitProducerID, 0, 5, handleInitProducerID) }

func handleInitProducerID(_ context.Context, s *Server, _ *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
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
