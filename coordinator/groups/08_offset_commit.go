package groups

// OffsetCommit, key 8 (docs/kafka-classic-groups.md §11): the answer is
// sent only after the offsets are durable.
//
// Version notes:
//   - v0: no generation or member: a simple commit (Kafka served v0 only
//     from ZooKeeper; it is kept for old clients).
//   - v1: Generation and MemberID; a per-partition Timestamp used as the
//     commit time when not -1.
//   - v2–v4: RetentionTimeMillis. Cohort applies the broker's retention
//     to every offset, as Kafka does for -1 (what clients send).
//   - v3: ThrottleMillis.
//   - v5: no retention time.
//   - v6: CommittedLeaderEpoch (KIP-320).
//   - v7: InstanceID (KIP-345).
//   - v8: flexible.
//   - v9: GROUP_ID_NOT_FOUND (not ILLEGAL_GENERATION) for a member commit
//     to a group that does not exist; consumer groups check the member
//     epoch (KIP-848).
//   - v10: topics by id, not name (KIP-848's topic ids, KAFKA-14690),
//     resolved against the broker's topic catalog; every partition of an
//     id the broker does not have is answered UNKNOWN_TOPIC_ID, as
//     Kafka's KafkaApis, and the response names topics by id.
//
// As Kafka's KafkaApis, partitions the broker does not have are answered
// UNKNOWN_TOPIC_OR_PARTITION before the group is consulted; when none is
// left the group is not consulted at all (no group is created). The shard
// checks them against the topic catalog the request carries.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(&API{Key: kmsg.OffsetCommit, GroupACL: kmsg.ACLOperationRead, MinVersion: 0, MaxVersion: 10,
		Groups: oneGroup(func(r *kmsg.OffsetCommitRequest) string { return r.Group })},
		(*Shard).offsetCommit,
		func(r *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, code int16) {
			for _, t := range r.Topics {
				rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
				}
				resp.Topics = append(resp.Topics, rt)
			}
		})
}

// offsetCommit is OffsetCommit (offsets.Book.ServeCommit).
func (s *Shard) offsetCommit(now time.Time, req machine.Request, r *kmsg.OffsetCommitRequest) {
	s.reply(req.ID, s.offs.ServeCommit(now, req, r, (*offsetGroups)(s), s.cfg.OffsetMetadataMaxBytes))
}
