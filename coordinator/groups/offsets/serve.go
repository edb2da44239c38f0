package offsets

// The offset APIs (Kafka's OffsetMetadataManager, §11–12 of
// docs/kafka-classic-groups.md): OffsetCommit, TxnOffsetCommit and
// OffsetFetch, served from the Book. What only the group can say (may
// this member commit, does the group exist) is asked of Groups, which
// the shard implements by asking the group's type.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Groups is what the offset APIs ask of the groups that own the offsets.
type Groups interface {
	// ValidateCommit is the group's answer to a commit by generation
	// (or member epoch) and member: Kafka's validateOffsetCommit, with
	// r's version and instance id. A simple commit (generation -1) to a
	// group that does not exist creates it.
	ValidateCommit(now time.Time, g Group, r *kmsg.OffsetCommitRequest, generation int32, member string) int16
	// ValidateFetch says whether g exists and may have offsets (a dead
	// group has none) and, when member is set (OffsetFetch v9+), the
	// error of a member check (KIP-848: a consumer group's member names
	// its id and epoch).
	ValidateFetch(g Group, member bool, memberID *string, epoch int32) (exists bool, code int16)
	// ValidateDelete is the group's answer to an OffsetDelete and, when
	// it is 0, whether the group subscribes to a topic (whose offsets
	// then stay).
	ValidateDelete(g Group) (code int16, subscribed func(topic string) bool)
}

// ServeCommit is Kafka's commitOffset path (§11). As Kafka's KafkaApis,
// partitions the broker does not have are answered
// UNKNOWN_TOPIC_OR_PARTITION (from v10, whose topics are ids, every
// partition of an unknown id UNKNOWN_TOPIC_ID) before the group is
// consulted, and a commit with none left does not consult (or create)
// the group at all. Each offset is stamped with its topic's id, so that
// a re-created topic does not inherit it (Reconcile).
func (b *Book) ServeCommit(now time.Time, req machine.Request, r *kmsg.OffsetCommitRequest, gs Groups, maxMeta int) *kmsg.OffsetCommitResponse {
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.Version = r.Version
	generation, memberID := r.Generation, r.MemberID
	if r.Version == 0 {
		generation, memberID = -1, ""
	}
	g := Group{req.Tenant, r.Group}
	// names[i] is the name of r.Topics[i] (v10 names topics by id);
	// resolved[i] is false for an id the broker does not have.
	names, resolved := make([]string, len(r.Topics)), make([]bool, len(r.Topics))
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
		code = gs.ValidateCommit(now, g, r, generation, memberID)
	}
	if code == 0 {
		b.rec.Grow(known)
	}
	for i, t := range r.Topics {
		// The response names the topic as the request did: by name
		// before v10, by id from v10 (the name is not on the wire).
		rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
		for _, p := range t.Partitions {
			id, pc, meta := CheckCommit(req.Topics, resolved[i], names[i], p.Partition, p.Metadata, code, maxMeta)
			if pc == 0 {
				ts := now.UnixMilli()
				if r.Version == 1 && p.Timestamp != -1 {
					ts = p.Timestamp
				}
				epoch := p.LeaderEpoch
				if r.Version < 6 {
					epoch = -1
				}
				b.Commit(g, names[i], p.Partition, record.Offset{Offset: p.Offset, LeaderEpoch: epoch, Metadata: meta, CommitTimestamp: ts, TopicID: id})
			}
			rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: pc})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// ServeTxnCommit is Kafka's commitTransactionalOffset: the group and
// member are checked as for OffsetCommit (KIP-447: a zombie of an older
// generation is fenced), except that a rebalance in progress does not
// refuse it; the offsets are stored as the producer's pending ones.
func (b *Book) ServeTxnCommit(now time.Time, req machine.Request, r *kmsg.TxnOffsetCommitRequest, gs Groups, maxMeta int) *kmsg.TxnOffsetCommitResponse {
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	resp.Version = r.Version
	g := Group{req.Tenant, r.Group}
	generation, memberID, instance := r.Generation, r.MemberID, r.InstanceID
	if r.Version < 3 {
		generation, memberID, instance = -1, "", nil
	}
	// names[i] is the name of r.Topics[i] (v6 names topics by id);
	// resolved[i] is false for an id the broker does not have.
	names, resolved := make([]string, len(r.Topics)), make([]bool, len(r.Topics))
	known := 0
	for i, t := range r.Topics {
		names[i], resolved[i] = t.Topic, true
		if r.Version >= 6 {
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
		// The group check of OffsetCommit at v9: a consumer group's
		// member commits transactionally at any version (Kafka's
		// validateOffsetCommit checks the version of plain commits
		// only); before v6, GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH
		// are ILLEGAL_GENERATION (KIP-1319).
		code = gs.ValidateCommit(now, g, &kmsg.OffsetCommitRequest{Version: 9, Group: r.Group, Generation: generation, MemberID: memberID, InstanceID: instance}, generation, memberID)
		switch {
		case code == kerr.RebalanceInProgress.Code:
			code = 0 // Kafka's validateOffsetCommit lets a transactional commit through
		case (code == kerr.StaleMemberEpoch.Code || code == kerr.GroupIDNotFound.Code) && r.Version < 6:
			code = kerr.IllegalGeneration.Code
		}
	}
	for i, t := range r.Topics {
		rt := kmsg.TxnOffsetCommitResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
		for _, p := range t.Partitions {
			id, pc, meta := CheckCommit(req.Topics, resolved[i], names[i], p.Partition, p.Metadata, code, maxMeta)
			if pc == 0 {
				epoch := p.LeaderEpoch
				if r.Version < 2 {
					epoch = -1
				}
				o := record.Offset{Offset: p.Offset, LeaderEpoch: epoch, Metadata: meta, CommitTimestamp: now.UnixMilli(), TopicID: id}
				b.AddPending(g, r.ProducerID, TP{names[i], p.Partition}, o)
			}
			rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: pc})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// ServeFetch is Kafka's fetchOffsets / fetchAllOffsets (§12). A classic
// group does no member check; an unknown group has no offsets and no
// error. With RequireStable (v7+), a partition with a pending
// transactional offset is answered UNSTABLE_OFFSET_COMMIT (offset -1),
// so that the consumer retries until the transaction ends.
func (b *Book) ServeFetch(req machine.Request, r *kmsg.OffsetFetchRequest, gs Groups) *kmsg.OffsetFetchResponse {
	resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.Version = r.Version
	stable := r.RequireStable && r.Version >= 7 && b.AnyPending()
	mark := func(g Group, topic string, p *kmsg.OffsetFetchResponseGroupTopicPartition) {
		if stable && p.ErrorCode == 0 && b.Unstable(g, topic, p.Partition) {
			p.ErrorCode, p.Offset = kerr.UnstableOffsetCommit.Code, -1
		}
	}
	if r.Version < 8 {
		g := Group{req.Tenant, r.Group}
		var topics []kmsg.OffsetFetchRequestGroupTopic
		for _, t := range r.Topics {
			topics = append(topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		all := r.Topics == nil && r.Version >= 2
		exists, _ := gs.ValidateFetch(g, false, nil, 0)
		for _, t := range b.fetch(g, exists, topics, all, nil) {
			rt := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				mark(g, t.Topic, &p)
				rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition(p))
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
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
		g := Group{req.Tenant, rg.Group}
		exists, code := gs.ValidateFetch(g, r.Version >= 9, rg.MemberID, rg.MemberEpoch)
		if code != 0 {
			resp.Groups = append(resp.Groups, kmsg.OffsetFetchResponseGroup{Group: rg.Group, ErrorCode: code, Topics: []kmsg.OffsetFetchResponseGroupTopic{}})
			continue
		}
		topics := b.fetch(g, exists, rg.Topics, rg.Topics == nil, ids)
		for i := range topics {
			t := &topics[i]
			name := t.Topic
			if ids != nil {
				name, _ = req.Topics.Name(t.TopicID)
			}
			for j := range t.Partitions {
				mark(g, name, &t.Partitions[j])
			}
		}
		resp.Groups = append(resp.Groups, kmsg.OffsetFetchResponseGroup{Group: rg.Group, Topics: topics})
	}
	return resp
}

// fetch is Fetch of g if it exists, else of no group.
func (b *Book) fetch(g Group, exists bool, topics []kmsg.OffsetFetchRequestGroupTopic, all bool, ids *machine.Catalog) []kmsg.OffsetFetchResponseGroupTopic {
	if !exists {
		return b.Fetch(nil, topics, all, ids)
	}
	return b.Fetch(&g, topics, all, ids)
}

// ServeDelete is Kafka's deleteOffsets (§13). As Kafka's KafkaApis,
// partitions the broker does not have are answered
// UNKNOWN_TOPIC_OR_PARTITION, but the group is consulted even when
// nothing is left, so that a group error still shows (then alone, with
// no topics); offsets of a topic the group subscribes to stay
// (GROUP_SUBSCRIBED_TO_TOPIC).
func (b *Book) ServeDelete(req machine.Request, r *kmsg.OffsetDeleteRequest, gs Groups) *kmsg.OffsetDeleteResponse {
	resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
	resp.Version = r.Version
	if r.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	g := Group{req.Tenant, r.Group}
	code, subscribed := gs.ValidateDelete(g)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	for _, t := range r.Topics {
		rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
		sub := subscribed(t.Topic)
		for _, p := range t.Partitions {
			code := int16(0)
			if _, ok := req.Topics.Partition(t.Topic, p.Partition); !ok {
				code = kerr.UnknownTopicOrPartition.Code
			} else if sub {
				code = kerr.GroupSubscribedToTopic.Code
			} else {
				b.Delete(g, t.Topic, p.Partition)
			}
			rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
