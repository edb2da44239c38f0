package kafka

import (
	"context"

	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/cohort-dev/cohort/topics"
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
// With transaction version 2 (KIP-890 part 2) a produce of version 12+
// adds its partitions to the transaction instead, starting one if none is
// ongoing, as Kafka's AddPartitionsToTxnManager does for such a produce:
// the client sends no AddPartitionsToTxn. The add is written before the
// batches are appended, so an abort always reaches every partition the
// transaction wrote to: durable first on a store that is not one log; on
// one that is, only written (txn.AddPartitionsCmd.Early), and a load that
// finds batches in the log whose add was lost makes it again. Partitions
// that do not exist are left out (the produce answers them
// UNKNOWN_TOPIC_OR_PARTITION).
//
// The shard answers from memory (no record), but the produce waits for it
// on the connection's reader. A transactional id whose shard another node
// serves (cluster mode) is asked of that node with AddPartitionsToTxn v4
// VerifyOnly, as a Kafka partition leader asks the transaction
// coordinator; while no node serves it the produce is answered
// NOT_ENOUGH_REPLICAS, retriable.
func (s *Server) verifyTxn(ctx context.Context, sc scope, version int16, req *kmsg.ProduceRequest) int16 {
	add := version >= 12 && s.tv2()
	pid, epoch := int64(-1), int16(-1)
	var tps []txn.TP
	for _, rt := range req.Topics {
		name := sc.in(rt.Topic)
		var t *topics.Topic
		if version >= 13 {
			if t = sc.topicByID(rt.TopicID); t == nil {
				continue // answered UNKNOWN_TOPIC_ID
			}
			name = t.Name
		} else if add {
			t = s.topics.Topic(name)
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
			if add && (t == nil || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) || s.isOffsetsTopic(name, [16]byte{}, false)) {
				continue // not a partition the produce can write
			}
			tps = append(tps, txn.TP{Topic: name, Partition: rp.Partition})
		}
	}
	if len(tps) == 0 {
		return 0
	}
	id := *req.TransactionID
	out, code := s.txn.Do(ctx, sc.tenant, id, txn.AddPartitionsCmd{Tenant: sc.tenant, TxnID: id, ProducerID: pid, ProducerEpoch: epoch, Partitions: tps, VerifyOnly: !add, Early: add})
	if code == 0 {
		r, _ := out.(txn.Result)
		code = r.Code
	} else if code == kerr.NotCoordinator.Code {
		code = s.verifyRemote(ctx, sc, id, pid, epoch, tps, !add)
	}
	switch code {
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code
	case kerr.ConcurrentTransactions.Code,
		// As Kafka (KAFKA-15657): retriable for the producer.
		kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.RequestTimedOut.Code:
		// Moving, loading, or not reached: a retriable answer the
		// producer keeps its batches for.
		return kerr.NotEnoughReplicas.Code
	}
	return code
}

// verifyRemote asks the node serving the scope's transactional id's
// shard whether tps (topic log names) are in the producer's ongoing
// transaction (verify), or to add them to it (transaction version 2, as
// Kafka's AddPartitionsToTxnManager: AddPartitionsToTxn v4 with
// VerifyOnly false); it returns the first partition's error, or
// NOT_COORDINATOR when no other node can be asked (the shard has no
// owner, or this node owns it and is loading it). The request names the
// organisation's topics as its clients do, and carries the organisation
// in a tag (tagTenant).
func (s *Server) verifyRemote(ctx context.Context, sc scope, id string, pid int64, epoch int16, tps []txn.TP, verify bool) int16 {
	b, ok := s.cluster.Coordinator(s.txnUnit(sc.tenant, id))
	if !ok || b.NodeID == s.cluster.Self() || s.cfg.Peer == nil {
		return kerr.NotCoordinator.Code
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = id, pid, epoch, verify
	tagTenant(&t.UnknownTags, sc.tenant)
	for _, tp := range tps {
		name, _ := sc.out(tp.Topic)
		if n := len(t.Topics); n == 0 || t.Topics[n-1].Topic != name {
			t.Topics = append(t.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: name})
		}
		t.Topics[len(t.Topics)-1].Partitions = append(t.Topics[len(t.Topics)-1].Partitions, tp.Partition)
	}
	req.Transactions = append(req.Transactions, t)
	kresp, err := s.cfg.Peer(ctx, b.NodeID, req)
	if err != nil {
		s.warn.Warn("verifying a transactional produce with its coordinator", "node", b.NodeID, "transactional_id", id, "err", err)
		return kerr.NotCoordinator.Code
	}
	resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	for _, rt := range resp.Transactions {
		for _, rtp := range rt.Topics {
			for _, p := range rtp.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
	}
	if len(resp.Transactions) == 0 {
		return kerr.NotCoordinator.Code
	}
	return 0
}
