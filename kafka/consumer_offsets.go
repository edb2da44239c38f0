package kafka

// __consumer_offsets, Kafka's internal topic of group coordinator
// records, as the broker APIs show it. Its partitions are the group
// coordinator's shards (package offsetstopic): partition p holds shard
// p's records in Kafka's formats, led by the node that coordinates shard
// p (FindCoordinator's answer for its groups), which alone serves it.
//
// What each API does with it, as Apache Kafka does:
//
//   - Metadata lists it, with IsInternal, whenever all topics are asked
//     for (KafkaApis lists internal topics; clients with
//     exclude.internal.topics filter them out themselves), by name and by
//     id. It is never auto-created: it always exists.
//   - Fetch and ListOffsets read it like any partition: offsets are those
//     of a compacted topic (gaps where records were superseded), the log
//     start is 0, and the earliest, latest, timestamp and max-timestamp
//     lookups work as for other topics. A partition this node does not
//     serve (another node's shard, or one loading) is
//     NOT_LEADER_OR_FOLLOWER, with the leader's endpoint when known.
//   - Produce to it is INVALID_TOPIC_EXCEPTION: ReplicaManager.
//     appendToLocalLog refuses a client's append to an internal topic
//     ("Cannot append to internal topic"), InvalidTopicException, with no
//     error message in the response (not a custom message).
//   - CreateTopics of its name is TOPIC_ALREADY_EXISTS, what a Kafka
//     cluster answers once the topic exists (ReplicationControlManager);
//     here it always does.
//   - DeleteTopics and CreatePartitions of it are TOPIC_AUTHORIZATION_FAILED:
//     Kafka itself lets a principal allowed DELETE or ALTER on the topic
//     delete it or add partitions (ControllerApis.deleteTopics and
//     createPartitions check nothing else), which breaks every group; no
//     principal may here, and Kafka's answer to a principal that may not
//     is TOPIC_AUTHORIZATION_FAILED. The message says why.
//   - DescribeConfigs shows cleanup.policy=compact, as Kafka creates it.

import (
	"errors"
	"fmt"

	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetsReadOnly explains the refusal of DeleteTopics and
// CreatePartitions.
const offsetsReadOnly = "__consumer_offsets is Cohort's view of its group coordinator's records, one partition per coordinator shard: it cannot be deleted or grown. Delete groups (DeleteGroups) or their offsets (OffsetDelete) instead."

// isOffsetsTopic reports whether a request names __consumer_offsets, by
// id from the versions that name topics by id, else by name.
func (s *Server) isOffsetsTopic(name string, id [16]byte, byID bool) bool {
	if !s.groups.OffsetsTopic() {
		return false
	}
	if byID {
		return id == s.offsetsID
	}
	return name == offsetstopic.Name
}

// offsetsPartition returns partition p of __consumer_offsets if this node
// serves it, else the error code for it: UNKNOWN_TOPIC_OR_PARTITION for
// no such partition, NOT_LEADER_OR_FOLLOWER for one it does not serve.
func (s *Server) offsetsPartition(p int32) (*offsetstopic.Partition, int16) {
	if p < 0 || int(p) >= s.groups.Shards() {
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	if part := s.groups.OffsetsPartition(int(p)); part != nil {
		return part, 0
	}
	return nil, kerr.NotLeaderForPartition.Code
}

// offsetsErrorCode maps a partition's read error to Kafka's code.
func offsetsErrorCode(err error) int16 {
	switch {
	case errors.Is(err, offsetstopic.ErrClosed):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, offsetstopic.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	}
	return kerr.KafkaStorageError.Code
}

// offsetsPlace is where partition p is served: by its shard's
// coordinator, no leader and no replicas while the shard has none
// (cluster mode, between owners).
func (s *Server) offsetsPlace(p int) placement {
	if b, ok := s.cluster.Coordinator(p); ok {
		return placement{leader: b.NodeID, replicas: []int32{b.NodeID}, isr: []int32{b.NodeID}}
	}
	return placement{leader: -1, replicas: []int32{}, isr: []int32{}}
}

// fetchOffsets reads partition rp of __consumer_offsets into sp as
// fetchOnce reads any partition, spending from budget and adding to
// total. It returns the partition's wait channel, nil on an error.
func (s *Server) fetchOffsets(version int16, rp kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition, budget, total *int, hints *leaders) <-chan struct{} {
	p, code := s.offsetsPartition(rp.Partition)
	switch {
	case code != 0:
		sp.ErrorCode = code
		if code == kerr.NotLeaderForPartition.Code && version >= 12 {
			if b, ok := s.cluster.Coordinator(int(rp.Partition)); ok && b.NodeID != s.cluster.Self() {
				hints.add(b)
				sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = b.NodeID, 0
			}
		}
		return nil
	case leaderEpochCode(rp.CurrentLeaderEpoch, 0) != 0:
		sp.ErrorCode = leaderEpochCode(rp.CurrentLeaderEpoch, 0)
		return nil
	}
	wait := p.Wait()
	limit := min(int(rp.PartitionMaxBytes), *budget)
	res, err := p.Read(rp.FetchOffset, limit, *total == 0)
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStart
	if err != nil {
		sp.ErrorCode = offsetsErrorCode(err)
		if sp.ErrorCode == kerr.KafkaStorageError.Code {
			s.logger.Error("read __consumer_offsets", "partition", rp.Partition, "err", err)
		}
		return nil
	}
	sp.RecordBatches = res.Batches
	*total += len(res.Batches)
	*budget = max(*budget-len(res.Batches), 0)
	return wait
}

// listOffsetsOffsets answers ListOffsets for partition rp of
// __consumer_offsets into sp.
func (s *Server) listOffsetsOffsets(rp kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition) {
	p, code := s.offsetsPartition(rp.Partition)
	switch {
	case code != 0:
		sp.ErrorCode = code
		return
	case leaderEpochCode(rp.CurrentLeaderEpoch, 0) != 0:
		sp.ErrorCode = leaderEpochCode(rp.CurrentLeaderEpoch, 0)
		return
	}
	// A reader asking where to start has arrived: a partition that holds
	// no records wakes, so that the offsets it answers already count the
	// records it shows.
	err := p.Touch()
	if err == nil {
		err = answerListOffset(p, rp.Timestamp, sp)
	}
	if err != nil {
		sp.ErrorCode = offsetsErrorCode(err)
	}
}

// offsetsConfigEntries are the topic's configs for DescribeConfigs: the
// defaults of every topic config, but cleanup.policy=compact, as Kafka
// creates __consumer_offsets.
func offsetsConfigEntries() []configEntry {
	var out []configEntry
	for _, c := range topics.TopicConfigs {
		e := configEntry{name: c.Name, value: c.Default, doc: c.Doc, source: kmsg.ConfigSourceDefaultConfig, typ: kmsg.ConfigType(c.Type), readOnly: true}
		if c.Name == "cleanup.policy" {
			e.value, e.source = "compact", kmsg.ConfigSourceDynamicTopicConfig
			e.doc = "__consumer_offsets is compacted: a record superseded by a later one of its key is dropped."
		}
		out = append(out, e)
	}
	return out
}

// offsetsExists is CreateTopics' message for the topic's name.
var offsetsExists = fmt.Sprintf("Topic '%s' already exists.", offsetstopic.Name)
