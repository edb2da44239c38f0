package share

// What the share group offset APIs (DescribeShareGroupOffsets,
// AlterShareGroupOffsets, DeleteShareGroupOffsets) ask of a group name,
// as Kafka 4.2's GroupCoordinatorShard and GroupMetadataManager answer
// them: the partitions whose share-partition state the group may hold
// (initializedShareGroupPartitions), the checks before offsets are
// altered or deleted (shareGroup, validateOffsetsAlterable,
// validateDeleteGroup) and the group's ShareGroupPartitions record as
// they change it. The share-partition state itself is the share-state
// shards' (coordinator/sharestate): the wire server changes it between
// these calls.

import (
	"maps"
	"slices"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Initialized is the partitions whose share-partition state group may
// hold (its record's Initialized list), by topic id; nil for a name with
// none. Whether a share group of that name exists does not matter, as
// Kafka's initializedShareGroupPartitions, which reads the record alone.
func (s *Type) Initialized(tenant, group string) []record.ShareStateTopic {
	p := s.parts[grouptype.Key{Tenant: tenant, Name: group}]
	if p == nil {
		return nil
	}
	return p.record().Initialized
}

// offsetsChangeable is Kafka's shareGroup(groupId) (or, to create,
// getOrMaybeCreatePersistedShareGroup) then validateOffsetsAlterable /
// validateDeleteGroup: GROUP_ID_NOT_FOUND for no share group of that id
// ("Group X not found." or "Group X is not a share group."; with create,
// only the second: an id no group has gets an empty share group, its
// record written), NON_EMPTY_GROUP unless it has no member.
func (s *Type) offsetsChangeable(now time.Time, tenant, group string, create bool) (*Group, int16, string) {
	e := s.h.Lookup(tenant, group)
	g := Of(e)
	switch {
	case g == nil && create && (e == nil || e.Part == nil):
		if e == nil {
			if msg := s.h.NewGroupRefused(tenant); msg != "" {
				return nil, kerr.GroupMaxSizeReached.Code, msg
			}
		}
		id := s.h.NewGroupID(now)
		if e != nil && e.ID != "" {
			id = e.ID
		}
		e = s.h.Register(grouptype.Key{Tenant: tenant, Name: group})
		e.ID = id
		g = NewGroup(e)
		s.emitGroupEpoch(g, 0, 0)
	case g == nil:
		return nil, kerr.GroupIDNotFound.Code, notShare(e, group)
	case len(g.Members) > 0:
		return nil, kerr.NonEmptyGroup.Code, kerr.NonEmptyGroup.Description
	}
	return g, 0, ""
}

// AlterOffsets is the group's side of AlterShareGroupOffsets (Kafka's
// GroupCoordinatorShard.alterShareGroupOffsets): the group must be an
// empty share group, made if no group has the id (else the code and
// message); the partitions about to
// be given a new start offset join the record's Initialized list
// (Kafka's addInitializingTopicsRecords), so that a deletion of the group
// drops their state. topics are valid partitions of existing topics (the
// caller checked them against the catalog).
//
// A topic whose earlier state is still to be dropped (Deleting) leaves
// that list, as Kafka takes initializing topics out of it; the altered
// partitions' state is replaced, but that of its other partitions is
// returned in drop for the caller to delete before it answers
// ShareStateDeleted: Kafka overwrites such state when it initializes a
// partition, while a Cohort partition with state is read as it is.
func (s *Type) AlterOffsets(now time.Time, tenant, group string, topics []record.ShareStateTopic) (code int16, msg string, drop []record.ShareStateTopic) {
	g, code, msg := s.offsetsChangeable(now, tenant, group, true)
	if g == nil {
		return code, msg, nil
	}
	p := s.parts[g.Key]
	next := &Partitions{Initialized: map[[16]byte]record.ShareStateTopic{}, Deleting: map[[16]byte]record.ShareStateTopic{}}
	if p != nil {
		maps.Copy(next.Initialized, p.Initialized)
		maps.Copy(next.Deleting, p.Deleting)
	}
	changed := false
	for _, t := range topics {
		if len(t.Partitions) == 0 {
			continue
		}
		cur, ok := next.Initialized[t.TopicID]
		if !ok {
			cur = record.ShareStateTopic{TopicID: t.TopicID, Name: t.Name, Timestamp: now.UnixMilli()}
		}
		ps := slices.Concat(cur.Partitions, t.Partitions)
		slices.Sort(ps)
		ps = slices.Compact(ps)
		if !slices.Equal(ps, cur.Partitions) {
			cur.Partitions = ps
			next.Initialized[t.TopicID] = cur
			changed = true
		}
		if d, ok := next.Deleting[t.TopicID]; ok {
			left := slices.DeleteFunc(slices.Clone(d.Partitions), func(q int32) bool { return slices.Contains(t.Partitions, q) })
			if len(left) == 0 {
				delete(next.Deleting, t.TopicID)
				changed = true
			} else if len(left) < len(d.Partitions) {
				d.Partitions = left
				next.Deleting[t.TopicID] = d
				changed = true
			}
			if len(left) > 0 {
				drop = append(drop, next.Deleting[t.TopicID])
			}
		}
	}
	if changed {
		s.emitPartitions(g.Key, next)
	}
	return 0, "", drop
}

// OffsetsTopic is a topic of a DeleteShareGroupOffsets, resolved by the
// caller against the catalog: its id, name and partition count.
type OffsetsTopic struct {
	TopicID    [16]byte
	Name       string
	Partitions int32
}

// NoOffsetInformation is Kafka's message for a topic whose share-partition
// state the group does not hold (UNKNOWN_TOPIC_OR_PARTITION).
const NoOffsetInformation = "There is no offset information to delete."

// DeleteOffsets is the group's side of DeleteShareGroupOffsets (Kafka's
// GroupCoordinatorShard.initiateDeleteShareGroupOffsets and
// sharePartitionsEligibleForOffsetDeletion): the group must be an empty
// share group (else the code and message); each topic whose state the
// record lists, Initialized or still Deleting, moves to Deleting, with
// every partition of the topic (Kafka deletes a deleting topic's
// partitions 0..count-1; an initialized topic's listed ones, which
// Cohort widens to the whole topic since a partition's state may be made
// by a fetch of a partition the member was not assigned), and its code
// is 0; any other topic's is UNKNOWN_TOPIC_OR_PARTITION
// (NoOffsetInformation). drop has the Deleting entry of each topic
// answered 0: the caller deletes the state of its partitions, then
// answers ShareStateDeleted for the topics whose state is gone;
// meanwhile they are not assigned, as Kafka assigns no deleting topic.
func (s *Type) DeleteOffsets(now time.Time, tenant, group string, topics []OffsetsTopic) (code int16, msg string, codes []int16, drop []record.ShareStateTopic) {
	g, code, msg := s.offsetsChangeable(now, tenant, group, false)
	if g == nil {
		return code, msg, nil, nil
	}
	p := s.parts[g.Key]
	codes = make([]int16, len(topics))
	drop = make([]record.ShareStateTopic, len(topics))
	if p == nil {
		for i := range codes {
			codes[i] = kerr.UnknownTopicOrPartition.Code
		}
		return 0, "", codes, drop
	}
	next := &Partitions{Initialized: maps.Clone(p.Initialized), Deleting: maps.Clone(p.Deleting)}
	changed := false
	for i, t := range topics {
		init, isInit := next.Initialized[t.TopicID]
		del, isDel := next.Deleting[t.TopicID]
		if !isInit && !isDel {
			codes[i] = kerr.UnknownTopicOrPartition.Code
			continue
		}
		ps := slices.Concat(init.Partitions, del.Partitions)
		for q := range t.Partitions {
			ps = append(ps, q)
		}
		slices.Sort(ps)
		ps = slices.Compact(ps)
		if !isDel {
			del = record.ShareStateTopic{TopicID: t.TopicID, Name: t.Name, Timestamp: now.UnixMilli()}
		}
		if isInit || !slices.Equal(ps, del.Partitions) {
			del.Partitions = ps
			next.Deleting[t.TopicID] = del
			delete(next.Initialized, t.TopicID)
			changed = true
		}
		drop[i] = del
	}
	if changed {
		s.emitPartitions(g.Key, next)
	}
	return 0, "", codes, drop
}
