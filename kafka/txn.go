package kafka

// What the transactional APIs (22, 24, 25, 26, 65, 66 and the produce
// path) share: the transaction coordinator, the error code of a shard
// not served here, and Kafka's version mapping of PRODUCER_FENCED.

import (
	"context"
	"encoding/binary"

	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
)

// txnDo runs a transaction command on the tenant's transactional id's shard and
// returns its Result (a code alone when the shard is not served here).
func (s *Server) txnDo(ctx context.Context, tenant, txnID string, cmd any) txn.Result {
	out, code := s.txn.Do(ctx, tenant, txnID, cmd)
	if code != 0 {
		return txn.Result{Code: code, ProducerID: -1, ProducerEpoch: -1}
	}
	r, _ := out.(txn.Result)
	return r
}

// fenced maps PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for request
// versions older than the one that introduced it (KIP-588), as Kafka's
// KafkaApis does.
func fenced(code int16, version, since int16) int16 {
	if code == kerr.ProducerFenced.Code && version < since {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// txnBatch reads what the produce path needs of a batch's header: whether
// it is transactional, its producer id and epoch.
func txnBatch(b []byte) (transactional bool, pid int64, epoch int16) {
	const attributesAt, pidAt, epochAt, headerLen = 21, 43, 51, 61
	if len(b) < headerLen || b[16] != 2 {
		return false, -1, -1
	}
	attrs := binary.BigEndian.Uint16(b[attributesAt:])
	return attrs&0x10 != 0, int64(binary.BigEndian.Uint64(b[pidAt:])), int16(binary.BigEndian.Uint16(b[epochAt:]))
}

// txnUnit is the cluster unit (Cluster.Coordinator's shard argument) of a
// transactional id's shard: the units after the group coordinator's
// shards and the assigner's.
func (s *Server) txnUnit(tenant, txnID string) int {
	return s.groups.Shards() + 1 + s.txn.ShardFor(tenant, txnID)
}
