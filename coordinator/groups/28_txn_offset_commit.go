package groups

// TxnOffsetCommit, key 28 (KIP-98): a transactional producer's offsets for
// a group, pending until its transaction ends (txn_offsets.go). The
// answer is sent once the pending offsets are durable.
//
// Version notes:
//   - v0: group, producer id and epoch, offsets with metadata.
//   - v1: no change. v2: CommittedLeaderEpoch (KIP-320).
//   - v3 (KIP-447): flexible; Generation, MemberID and InstanceID, the
//     consumer group metadata, checked as OffsetCommit's so that a zombie
//     of an older generation is fenced; PRODUCER_FENCED may be returned
//     by the transaction coordinator's checks.
//   - v4: no change (TRANSACTION_ABORTABLE allowed).
//   - v5 (KIP-890 part 2): with transaction.version 2 the client skips
//     AddOffsetsToTxn: the wire layer adds the group to the transaction
//     before handing the request here (kafka/txn_offsets.go).
//   - v6 (KIP-1319): topics by id, resolved against the broker's topic
//     catalog (an unknown id: UNKNOWN_TOPIC_ID); GROUP_ID_NOT_FOUND (not
//     ILLEGAL_GENERATION) for a member commit to a group that does not
//     exist; STALE_MEMBER_EPOCH.
//
// Below v5 (or with transaction version 1) the group coordinator does not
// ask the transaction coordinator whether the group was added to the
// transaction (neither does Kafka's): the offsets stay pending until a
// TxnEndCmd for the producer ends them, and a transaction that never
// added the group never ends them, as in Kafka.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(&API{Key: kmsg.TxnOffsetCommit, GroupACL: kmsg.ACLOperationRead, MinVersion: 0, MaxVersion: 6,
		Groups: oneGroup(func(r *kmsg.TxnOffsetCommitRequest) string { return r.Group })},
		(*Shard).txnOffsetCommit,
		func(r *kmsg.TxnOffsetCommitRequest, resp *kmsg.TxnOffsetCommitResponse, code int16) {
			for _, t := range r.Topics {
				rt := kmsg.TxnOffsetCommitResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
				}
				resp.Topics = append(resp.Topics, rt)
			}
		})
}

// txnOffsetCommit is TxnOffsetCommit (offsets.Book.ServeTxnCommit).
func (s *Shard) txnOffsetCommit(now time.Time, req machine.Request, r *kmsg.TxnOffsetCommitRequest) {
	s.reply(req.ID, s.offs.ServeTxnCommit(now, req, r, (*offsetGroups)(s), s.cfg.OffsetMetadataMaxBytes))
}
