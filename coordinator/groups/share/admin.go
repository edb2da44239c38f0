package share

// What only a share group can say to the shard's admin APIs and to the
// hosts around the shard: ShareGroupDescribe, DeleteGroups of a share
// group, a member's assignment (what a ShareFetch checks), and the
// share-partition state of deleted groups left to drop.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AssignorName is the assignor ShareGroupDescribe reports, Kafka's
// group.share.assignors default.
const AssignorName = "simple"

// Describe is Kafka's shareGroupDescribe: a group that does not exist or
// is not a share group is GROUP_ID_NOT_FOUND; an empty id is
// INVALID_GROUP_ID, as Kafka's GroupCoordinatorService answers it.
func (s *Type) Describe(_ time.Time, req machine.Request, r *kmsg.ShareGroupDescribeRequest) {
	resp := r.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	resp.Version = r.Version
	for _, name := range r.GroupIDs {
		d := kmsg.NewShareGroupDescribeResponseGroup()
		d.GroupID = name
		e := s.h.Lookup(req.Tenant, name)
		g := Of(e)
		switch {
		case name == "":
			d.ErrorCode = kerr.InvalidGroupID.Code
		case g == nil:
			d.ErrorCode = kerr.GroupIDNotFound.Code
			msg := notShare(e, name)
			d.ErrorMessage = &msg
		default:
			d.GroupState, d.GroupEpoch, d.AssignmentEpoch, d.Assignor = g.State(), g.Epoch, g.TargetEpoch, AssignorName
			if r.IncludeAuthorizedOperations {
				d.AuthorizedOperations = grouptype.AllGroupOperations
			}
			cat := s.catalog(g.Tenant)
			for _, m := range g.SortedMembers() {
				dm := kmsg.NewShareGroupDescribeResponseGroupMember()
				dm.MemberID, dm.RackID, dm.MemberEpoch = m.ID, m.Rack, m.Epoch
				dm.ClientID, dm.ClientHost = m.ClientID, m.ClientHost
				dm.SubscribedTopicNames = append([]string{}, m.Topics...)
				dm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
				for _, t := range m.Assigned {
					// Topics the catalog does not know are left out, as Kafka.
					if name, ok := cat.Name(t.TopicID); ok {
						dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions,
							kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{TopicID: t.TopicID, Topic: name, Partitions: slices.Clone(t.Partitions)})
					}
				}
				d.Members = append(d.Members, dm)
			}
		}
		resp.Groups = append(resp.Groups, d)
	}
	s.reply(req.ID, resp)
}

// Delete deletes share group g if it is empty (Kafka's
// ShareGroup.validateDeleteGroup and createGroupTombstoneRecords),
// answering NON_EMPTY_GROUP otherwise. The share-partition state the
// group may hold is not deleted here, since it lives in the share-state
// shards: the group's ShareGroupPartitions record moves it to Deleting
// and stays, and the host drops it (Deletions, Deleted).
func (s *Type) Delete(g *Group, now time.Time) int16 {
	if len(g.Members) > 0 {
		return kerr.NonEmptyGroup.Code
	}
	for _, id := range grouptype.SortedKeys(g.Target) {
		s.emit(s.memberKey(record.KindShareTarget, g.Key, id), nil)
	}
	s.emit(s.key(g.Key).KindKey(record.KindShareTargetEpoch), nil)
	if p := s.parts[g.Key]; p != nil && len(p.Initialized) > 0 {
		next := &Partitions{Initialized: map[[16]byte]record.ShareStateTopic{}, Deleting: map[[16]byte]record.ShareStateTopic{}}
		for id, t := range p.Deleting {
			next.Deleting[id] = t
		}
		for id, t := range p.Initialized {
			if d, ok := next.Deleting[id]; ok {
				ps := append(slices.Clone(d.Partitions), t.Partitions...)
				slices.Sort(ps)
				t.Partitions = slices.Compact(ps)
			}
			t.Timestamp = now.UnixMilli()
			next.Deleting[id] = t
		}
		s.emitPartitions(g.Key, next)
	}
	s.emit(s.key(g.Key).KindKey(record.KindShareGroup), nil)
	return 0
}

// MemberOf is what a ShareFetch or ShareAcknowledge checks of its
// member: the code (0; GROUP_ID_NOT_FOUND for no share group of that id;
// UNKNOWN_MEMBER_ID for no such member), the member's epoch and the
// partitions it is assigned.
func (s *Type) MemberOf(tenant, group, member string) (int16, int32, Assignment) {
	g := s.group(tenant, group)
	if g == nil {
		return kerr.GroupIDNotFound.Code, 0, nil
	}
	m := g.Members[member]
	if m == nil {
		return kerr.UnknownMemberID.Code, 0, nil
	}
	return 0, m.Epoch, m.Assigned
}

// Deletion is share-partition state a deleted share group (or one that
// was deleted and made again) left for the share-state shards to drop.
type Deletion struct {
	Tenant, Group string
	Topics        []record.ShareStateTopic // by topic id
}

// Deletions lists every share-partition state left to drop, by tenant
// and group.
func (s *Type) Deletions() []Deletion {
	var out []Deletion
	for k, p := range s.parts {
		if len(p.Deleting) == 0 {
			continue
		}
		d := Deletion{Tenant: k.Tenant, Group: k.Name}
		for _, id := range sortedIDs(p.Deleting) {
			d.Topics = append(d.Topics, p.Deleting[id])
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Deletion) int {
		return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Group, b.Group))
	})
	return out
}

// Deleted notes that the share-state shards dropped the state of these
// topics of group of tenant: they leave the record's Deleting list (the
// record goes when nothing is left in it), and a share group of that id
// with members rebalances, since the topics are assignable again.
func (s *Type) Deleted(now time.Time, tenant, group string, topics [][16]byte) {
	k := grouptype.Key{Tenant: tenant, Name: group}
	p := s.parts[k]
	if p == nil {
		return
	}
	next := &Partitions{Initialized: p.Initialized, Deleting: map[[16]byte]record.ShareStateTopic{}}
	for id, t := range p.Deleting {
		if !slices.Contains(topics, id) {
			next.Deleting[id] = t
		}
	}
	if len(next.Deleting) == len(p.Deleting) {
		return
	}
	s.emitPartitions(k, next)
	if g := s.group(tenant, group); g != nil && len(g.Members) > 0 {
		targets := g.targetsBefore()
		s.emitGroupEpoch(g, g.Epoch+1, g.metaHash)
		s.started(g, now, grouptype.Trigger{Cause: observe.CauseMetadataChanged}, fmt.Sprintf("the state of %d deleted topics was dropped", len(p.Deleting)-len(next.Deleting)), targets)
	}
}
