package offsets

// The rules of the offset APIs that are the offsets' own, whatever the
// group: what a partition of a commit is answered, and what a fetch
// answers (Kafka's OffsetMetadataManager and KafkaApis).

import (
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CheckCommit is the per-partition part of an offset commit's checks,
// shared by OffsetCommit and TxnOffsetCommit: a topic named by an id the
// catalog does not have (!resolved), a partition the broker does not
// have, metadata longer than maxMeta bytes; code is the group's answer.
// It returns the partition's topic id (stamped on the offset, so that a
// re-created topic does not inherit it), its code and its metadata.
func CheckCommit(cat *machine.Catalog, resolved bool, topic string, p int32, metadata *string, code int16, maxMeta int) ([16]byte, int16, string) {
	id, ok := cat.Partition(topic, p)
	meta := ""
	if metadata != nil {
		meta = *metadata
	}
	switch {
	case !resolved:
		code = kerr.UnknownTopicID.Code
	case !ok:
		code = kerr.UnknownTopicOrPartition.Code
	case code == 0 && len(meta) > maxMeta:
		code = kerr.OffsetMetadataTooLarge.Code
	}
	return id, code, meta
}

// Fetch answers an OffsetFetch of topics (every committed offset if all)
// of group g; nil is a group with no offsets (none, or a dead one). ids,
// when not nil, is the catalog of a v10 request, whose topics are named
// by id and answered by id (as Kafka's KafkaApis since KIP-848's topic-id
// work, KAFKA-14691):
//   - a requested id the broker does not have is answered
//     UNKNOWN_TOPIC_ID in each of its partitions;
//   - an offset stamped with another id than the one asked for is an old
//     topic's of that name, answered -1 (KAFKA-19154);
//   - answering every offset, a topic the broker no longer has, which has
//     no id to answer with, is left out, as Kafka leaves it out, and so
//     is an offset stamped with another id than the topic's.
func (b *Book) Fetch(g *Group, topics []kmsg.OffsetFetchRequestGroupTopic, all bool, ids *machine.Catalog) []kmsg.OffsetFetchResponseGroupTopic {
	// stored returns the committed offset of a partition of topic
	// (whose id is id if ids is set), if there is one.
	stored := func(topic string, id [16]byte, p int32) (record.Offset, bool) {
		if g == nil {
			return record.Offset{}, false
		}
		o, ok := b.Get(*g, topic, p)
		if ok && ids != nil && o.TopicID != [16]byte{} && o.TopicID != id {
			return record.Offset{}, false
		}
		return o, ok
	}
	answer := func(p int32, o record.Offset, ok bool) kmsg.OffsetFetchResponseGroupTopicPartition {
		rp := kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1, Metadata: new(string)}
		if ok {
			meta := o.Metadata
			rp.Offset, rp.LeaderEpoch, rp.Metadata = o.Offset, o.LeaderEpoch, &meta
		}
		return rp
	}
	out := []kmsg.OffsetFetchResponseGroupTopic{}
	if all {
		if g == nil {
			return out
		}
		for _, t := range b.Topics(*g) {
			rt := kmsg.OffsetFetchResponseGroupTopic{Topic: t}
			if ids != nil {
				meta, ok := ids.ByName[t]
				if !ok {
					continue
				}
				rt.TopicID = meta.ID
			}
			for _, p := range b.Partitions(*g, t) {
				if o, ok := stored(t, rt.TopicID, p); ok {
					rt.Partitions = append(rt.Partitions, answer(p, o, true))
				}
			}
			if len(rt.Partitions) > 0 {
				out = append(out, rt)
			}
		}
		return out
	}
	for _, t := range topics {
		rt := kmsg.OffsetFetchResponseGroupTopic{Topic: t.Topic, TopicID: t.TopicID, Partitions: []kmsg.OffsetFetchResponseGroupTopicPartition{}}
		name, known := t.Topic, true
		if ids != nil {
			name, known = ids.Name(t.TopicID)
		}
		for _, p := range t.Partitions {
			if !known {
				rp := answer(p, record.Offset{}, false)
				rp.ErrorCode = kerr.UnknownTopicID.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			o, ok := stored(name, t.TopicID, p)
			rt.Partitions = append(rt.Partitions, answer(p, o, ok))
		}
		out = append(out, rt)
	}
	return out
}
