package groups

// Committed offsets (Kafka's OffsetMetadataManager): OffsetCommit,
// OffsetFetch and OffsetDelete (§11–13), their record, and what the
// broker's topic changes do to them. Their expiry is in retention.go.

import (
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/offsets"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// replayOffset applies an offset record to the shard's offsets. At load,
// an offset of a group with no record yet registers the group's entry;
// Loaded makes it a simple group if no record of its own follows (records
// sort by kind, offsets first), as Kafka's OffsetMetadataManager.replay
// does.
func (s *Shard) replayOffset(k record.OffsetKey, v []byte) error {
	if err := s.offs.ReplayOffset(k, v); err != nil {
		return err
	}
	gk := gkey{k.Tenant, k.Group}
	if g := s.groups[gk]; g == nil && v != nil {
		s.entry(gkey{strings.Clone(k.Tenant), strings.Clone(k.Group)})
	} else if g != nil && v == nil {
		s.forget(g)
	}
	return nil
}

// offsetCommit is Kafka's commitOffset path (§11). As Kafka's KafkaApis,
// partitions the broker does not have are answered
// UNKNOWN_TOPIC_OR_PARTITION (from v10, whose topics are ids, every
// partition of an unknown id UNKNOWN_TOPIC_ID) before the group is
// consulted, and a commit with none left does not consult (or create) the
// group at all. Each offset is stamped with its topic's id, so that a
// re-created topic does not inherit it (reconcileTopics).
func (s *Shard) offsetCommit(now time.Time, req machine.Request, r *kmsg.OffsetCommitRequest) {
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.Version = r.Version
	generation, memberID := r.Generation, r.MemberID
	if r.Version == 0 {
		generation, memberID = -1, ""
	}
	// names[i] is the name of r.Topics[i]; resolved[i] is false for an
	// unknown id.
	names := make([]string, len(r.Topics))
	resolved := make([]bool, len(r.Topics))
	known := 0
	for i, t := range r.Topics {
		names[i], resolved[i] = t.Topic, true
		if r.Version >= 10 {
			names[i], resolved[i] = req.Topics.Name(t.TopicID)
		}
		for _, p := range t.Partitions {
			if _, ok := req.Topics.Partition(names[i], p.Partition); ok && resolved[i] {
				known++
			}
		}
	}
	code := int16(0)
	if known > 0 {
		code = s.validateCommit(now, gkey{req.Tenant, r.Group}, r, generation, memberID)
	}
	if code == 0 {
		s.rec.Grow(known)
	}
	k := gkey{req.Tenant, r.Group}
	for i, t := range r.Topics {
		// The response names the topic as the request did: by name
		// before v10, by id from v10 (the name is not on the wire).
		rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
		for _, p := range t.Partitions {
			id, pc, meta := offsets.CheckCommit(req.Topics, resolved[i], names[i], p.Partition, p.Metadata, code, s.cfg.OffsetMetadataMaxBytes)
			if pc == 0 {
				ts := now.UnixMilli()
				if r.Version == 1 && p.Timestamp != -1 {
					ts = p.Timestamp
				}
				epoch := p.LeaderEpoch
				if r.Version < 6 {
					epoch = -1
				}
				o := record.Offset{Offset: p.Offset, LeaderEpoch: epoch, Metadata: meta, CommitTimestamp: ts, TopicID: id}
				// The group's entry exists: the commit was validated.
				s.offs.Commit(k.off(), names[i], p.Partition, o)
			}
			rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: pc})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	s.reply(req.ID, resp)
}

// validateCommit is Kafka's validateOffsetCommit (§11.2 steps 4–6); it
// creates a simple group for a simple commit to a group that does not
// exist.
func (s *Shard) validateCommit(now time.Time, k gkey, r *kmsg.OffsetCommitRequest, generation int32, memberID string) int16 {
	e := s.lookup(k.tenant, k.name)
	if e == nil {
		if generation >= 0 {
			if r.Version >= 9 {
				return kerr.GroupIDNotFound.Code
			}
			return kerr.IllegalGeneration.Code
		}
		// A simple consumer's commit creates a group too: it counts
		// against the organisation's max_groups like any other.
		if s.newGroupRefused(k.tenant) != "" {
			return kerr.GroupMaxSizeReached.Code
		}
		s.emitClassic(s.newClassic(k, now))
		return 0
	}
	if e.consumer != nil {
		return validateConsumerCommit(e.consumer, r)
	}
	g := e.classic
	switch {
	case g.state == dead:
		return kerr.CoordinatorNotAvailable.Code
	case generation < 0 && g.state == empty:
		return 0
	case generation >= 0 || memberID != "" || r.InstanceID != nil:
		if code := g.validateMember(memberID, r.InstanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
	default:
		return kerr.UnknownMemberID.Code
	}
	if g.state == completingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	if m := g.members[memberID]; m != nil {
		s.armSession(g, m, now, time.Duration(m.sessionTimeout)*time.Millisecond)
	}
	return 0
}

// offsetFetch is Kafka's fetchOffsets / fetchAllOffsets (§12). A classic
// group does no member check; an unknown group has no offsets and no
// error.
func (s *Shard) offsetFetch(_ time.Time, req machine.Request, r *kmsg.OffsetFetchRequest) {
	resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.Version = r.Version
	if r.Version < 8 {
		var topics []kmsg.OffsetFetchRequestGroupTopic
		for _, t := range r.Topics {
			topics = append(topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		all := r.Topics == nil && r.Version >= 2
		for _, t := range s.fetchGroup(s.lookup(req.Tenant, r.Group), topics, all, nil) {
			rt := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition(p))
			}
			resp.Topics = append(resp.Topics, rt)
		}
		s.reply(req.ID, resp)
		return
	}
	var ids *machine.Catalog
	if r.Version >= 10 {
		// Topics are ids; without a catalog no id resolves.
		ids = req.Topics
		if ids == nil {
			ids = &machine.Catalog{}
		}
	}
	for _, rg := range r.Groups {
		g := s.lookup(req.Tenant, rg.Group)
		if r.Version >= 9 && g != nil && g.consumer != nil {
			// KIP-848: a consumer group member's fetch names its
			// member id and epoch.
			if code := validateConsumerFetch(g.consumer, rg.MemberID, rg.MemberEpoch); code != 0 {
				resp.Groups = append(resp.Groups, kmsg.OffsetFetchResponseGroup{Group: rg.Group, ErrorCode: code, Topics: []kmsg.OffsetFetchResponseGroupTopic{}})
				continue
			}
		}
		resp.Groups = append(resp.Groups, kmsg.OffsetFetchResponseGroup{
			Group:  rg.Group,
			Topics: s.fetchGroup(g, rg.Topics, rg.Topics == nil, ids),
		})
	}
	s.reply(req.ID, resp)
}

// offsetDelete is Kafka's deleteOffsets (§13). As Kafka's KafkaApis,
// partitions the broker does not have are answered
// UNKNOWN_TOPIC_OR_PARTITION, but the group is consulted even when
// nothing is left, so that a group error still shows (then alone, with no
// topics).
func (s *Shard) offsetDelete(_ time.Time, req machine.Request, r *kmsg.OffsetDeleteRequest) {
	resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
	resp.Version = r.Version
	defer s.reply(req.ID, resp)
	e := s.lookup(req.Tenant, r.Group)
	switch {
	case r.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return
	case e == nil || (e.classic != nil && e.classic.state == dead):
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return
	case e.classic != nil && e.classic.state != empty && e.classic.protocolType != "consumer":
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return
	}
	// subscribed reports whether the group subscribes to the topic: such
	// offsets stay (GROUP_SUBSCRIBED_TO_TOPIC).
	var subscribed func(topic string) bool
	if e.consumer != nil {
		topics := e.consumer.subscribedTopics(s.catalog(e.tenant))
		subscribed = func(t string) bool { return topics[t] }
	} else {
		g := e.classic
		subscribed = func(t string) bool { return g.state != empty && g.subscribedTo(t) }
	}
	for _, t := range r.Topics {
		rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
		sub := subscribed(t.Topic)
		for _, p := range t.Partitions {
			code := int16(0)
			switch {
			case !partitionExists(req.Topics, t.Topic, p.Partition):
				code = kerr.UnknownTopicOrPartition.Code
			case sub:
				code = kerr.GroupSubscribedToTopic.Code
			default:
				s.offs.Delete(e.off(), t.Topic, p.Partition)
			}
			rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

// fetchGroup answers a fetch of topics (every committed offset if all)
// of group g, which may be nil (offsets.Book.Fetch says how). A dead
// classic group has no offsets.
func (s *Shard) fetchGroup(g *group, topics []kmsg.OffsetFetchRequestGroupTopic, all bool, ids *machine.Catalog) []kmsg.OffsetFetchResponseGroupTopic {
	if g == nil || (g.classic != nil && g.classic.state == dead) {
		return s.offs.Fetch(nil, topics, all, ids)
	}
	og := g.off()
	return s.offs.Fetch(&og, topics, all, ids)
}

// partitionExists reports whether the broker has the topic partition.
func partitionExists(cat *machine.Catalog, topic string, p int32) bool {
	_, ok := cat.Partition(topic, p)
	return ok
}
