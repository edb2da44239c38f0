package kafka

// AddPartitionsToTxn, key 24.
//
// Version notes:
//   - v0: a transactional id, producer id and epoch, topics' partitions.
//   - v1: no change. v2 (KIP-588): PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
//     before). v3: flexible.
//   - v4 (KIP-890 part 1): the broker form: a batch of transactions, each
//     with VerifyOnly (only check that the partitions are in the ongoing
//     transaction, what a partition leader asks before a transactional
//     produce); a top-level ErrorCode. Clients keep to v0–3.
//   - v5: no change (TRANSACTION_ABORTABLE allowed).
//
// As Kafka's KafkaApis: a partition the broker does not have is
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED,
// without asking the coordinator.

import (
	"context"

	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.AddPartitionsToTxn, 0, 5, handleAddPartitionsToTxn) }

func handleAddPartitionsToTxn(ctx context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if hdr.version >= 4 {
		// With authorization on, as Kafka: the batched versions are
		// brokers' (CLUSTER_ACTION on the cluster).
		if !s.authorizeCluster(hdr, kmsg.ACLOperationClusterAction) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return done(resp)
		}
		return func() kmsg.Response {
			for _, t := range req.Transactions {
				rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
				rt.TransactionalID = t.TransactionalID
				var topics []kmsg.AddPartitionsToTxnRequestTopic
				for _, tp := range t.Topics {
					topics = append(topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: tp.Topic, Partitions: tp.Partitions})
				}
				// A node's request names the organisation it acts for
				// in a tag (scope.go).
				sc := scope{tenant: s.peerTenant(hdr, &t.UnknownTags), s: s}
				codes := s.addPartitions(ctx, sc, t.TransactionalID, t.ProducerID, t.ProducerEpoch, topics, t.VerifyOnly, hdr.version)
				for i, tp := range t.Topics {
					ot := kmsg.AddPartitionsToTxnResponseTransactionTopic{Topic: tp.Topic}
					for j, p := range tp.Partitions {
						ot.Partitions = append(ot.Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: p, ErrorCode: codes[i][j]})
					}
					rt.Topics = append(rt.Topics, ot)
				}
				resp.Transactions = append(resp.Transactions, rt)
			}
			return resp
		}
	}
	// With authorization on, as Kafka: WRITE on the transactional id
	// (else every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on
	// each topic (else TOPIC_AUTHORIZATION_FAILED, and the others
	// OPERATION_NOT_ATTEMPTED).
	if refused := s.addPartitionsRefused(hdr, req); refused != nil {
		for i, t := range req.Topics {
			rt := kmsg.AddPartitionsToTxnResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p, ErrorCode: refused[i]})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return done(resp)
	}
	return func() kmsg.Response {
		codes := s.addPartitions(ctx, s.scope(hdr), req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Topics, false, hdr.version)
		for i, t := range req.Topics {
			rt := kmsg.AddPartitionsToTxnResponseTopic{Topic: t.Topic}
			for j, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p, ErrorCode: codes[i][j]})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}

// addPartitions answers one transaction's partitions: codes[i][j] for
// topics[i].Partitions[j].
func (s *Server) addPartitions(ctx context.Context, sc scope, txnID string, pid int64, epoch int16, topics []kmsg.AddPartitionsToTxnRequestTopic, verify bool, version int16) [][]int16 {
	codes := make([][]int16, len(topics))
	var tps []txn.TP
	unknown := false
	for i, t := range topics {
		codes[i] = make([]int16, len(t.Partitions))
		top := sc.topic(t.Topic)
		for j, p := range t.Partitions {
			if top == nil || p < 0 || int(p) >= len(top.Partitions) || sc.isOffsets(t.Topic, [16]byte{}, false) {
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
				unknown = true
				continue
			}
			tps = append(tps, txn.TP{Topic: top.Name, Partition: p})
		}
	}
	code := int16(0)
	switch {
	case s.txn == nil:
		code = kerr.TransactionalIDAuthorizationFailed.Code
	case unknown:
		code = kerr.OperationNotAttempted.Code
	default:
		code = fenced(s.txnDo(ctx, sc.tenant, txnID, txn.AddPartitionsCmd{Tenant: sc.tenant, TxnID: txnID, ProducerID: pid, ProducerEpoch: epoch, Partitions: tps, VerifyOnly: verify}).Code, version, 2)
	}
	for i := range codes {
		for j := range codes[i] {
			if codes[i][j] == 0 {
				codes[i][j] = code
			}
		}
	}
	return codes
}

// addPartitionsRefused returns each topic's code if authorization refuses
// any part of req, else nil.
func (s *Server) addPartitionsRefused(hdr *reqHeader, req *kmsg.AddPartitionsToTxnRequest) []int16 {
	if s.cfg.Authorizer == nil {
		return nil
	}
	codes := make([]int16, len(req.Topics))
	if !s.authorizeTxnID(hdr, req.TransactionalID) {
		for i := range codes {
			codes[i] = kerr.TransactionalIDAuthorizationFailed.Code
		}
		return codes
	}
	refused := false
	for i, t := range req.Topics {
		if !s.authorize(hdr, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, t.Topic) {
			codes[i], refused = kerr.TopicAuthorizationFailed.Code, true
		} else {
			codes[i] = kerr.OperationNotAttempted.Code
		}
	}
	if !refused {
		return nil
	}
	return codes
}
