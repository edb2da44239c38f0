package kafka

import (
	"context"

	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// isTransactional reports whether a v2 batch is transactional.
func isTransactional(batch []byte) bool {
	t, _, _ := txnBatch(batch)
	return t
}

// verifyTxn checks a transactional produce against its transaction
// (Kafka's ReplicaManager verification, KIP-890 part 1): every batch must
// be transactional, from the producer the transactional id maps to, at
// its epoch, for a partition in the ongoing transaction. It returns the
// code for every partition of the request, 0 if it may be appended.
//
// The shard answers from memory (no record), but the produce waits for it
// on the connection's reader. A transactional id whose shard another node
// serves (cluster mode) is not verified here, as Kafka before 3.6.
func (s *Server) verifyTxn(ctx context.Context, sc scope, version int16, req *kmsg.ProduceRequest) int16 {
	pid, epoch := int64(-1), int16(-1)
	var tps []txn.TP
	for _, rt := range req.Topics {
		name := sc.in(rt.Topic)
		if version >= 13 {
			t := sc.topicByID(rt.TopicID)
			if t == nil {
				continue // answered UNKNOWN_TOPIC_ID
			}
			name = t.Name
		}
		for _, rp := range rt.Partitions {
			transactional, p, e := txnBatch(rp.Records)
			if !transactional {
				return kerr.InvalidRecord.Code
			}
			if pid != -1 && (p != pid || e != epoch) {
				return kerr.InvalidRecord.Code
			}
			pid, epoch = p, e
			tps = append(tps, txn.TP{Topic: name, Partition: rp.Partition})
		}
	}
	if len(tps) == 0 {
		return 0
	}
	out, code := s.txn.Do(ctx, sc.tenant, *req.TransactionID, txn.AddPartitionsCmd{Tenant: sc.tenant, TxnID: *req.TransactionID, ProducerID: pid, ProducerEpoch: epoch, Partitions: tps, VerifyOnly: true})
	switch code {
	case 0:
	case kerr.NotCoordinator.Code:
		return 0
	default:
		// Loading: a retriable answer the producer keeps its batches
		// for.
		return kerr.NotEnoughReplicas.Code
	}
	r, _ := out.(txn.Result)
	switch r.Code {
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code
	case kerr.ConcurrentTransactions.Code:
		// As Kafka (KAFKA-15657): retriable for the producer.
		return kerr.NotEnoughReplicas.Code
	}
	return r.Code
}
