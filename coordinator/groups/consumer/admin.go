package consumer

// What only a consumer group can say to the shard's admin and offset
// APIs: ConsumerGroupDescribe, and the expiry of its offsets.

import (
	"fmt"
	"slices"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Describe is Kafka's consumerGroupDescribe: a group that does not
// exist or is not a consumer group is GROUP_ID_NOT_FOUND.
func (s *Type) Describe(_ time.Time, req machine.Request, r *kmsg.ConsumerGroupDescribeRequest) {
	resp := r.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	resp.Version = r.Version
	for _, name := range r.Groups {
		d := kmsg.NewConsumerGroupDescribeResponseGroup()
		d.Group = name
		e := s.h.Lookup(req.Tenant, name)
		g := Of(e)
		if g == nil {
			d.ErrorCode = kerr.GroupIDNotFound.Code
			msg := fmt.Sprintf("Group %s not found.", name)
			if e != nil {
				msg = fmt.Sprintf("Group %s is not a consumer group.", name)
			}
			d.ErrorMessage = &msg
			resp.Groups = append(resp.Groups, d)
			continue
		}
		d.State, d.Epoch, d.AssignmentEpoch = g.State(), g.Epoch, g.TargetEpoch
		d.AssignorName = s.groupAssignor(g).Name()
		if r.IncludeAuthorizedOperations {
			d.AuthorizedOperations = grouptype.AllGroupOperations
		}
		for _, m := range g.SortedMembers() {
			dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			dm.MemberID, dm.InstanceID, dm.RackID = m.ID, m.Instance, m.Rack
			dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.Epoch, m.ClientID, m.ClientHost
			dm.SubscribedTopics = slices.Clone(m.Topics)
			if dm.SubscribedTopics == nil {
				dm.SubscribedTopics = []string{}
			}
			if m.Regex != "" {
				dm.SubscribedTopicRegex = &m.Regex
			}
			dm.Assignment.TopicPartitions = s.describeAssignment(g.Tenant, m.Assigned)
			dm.TargetAssignment.TopicPartitions = s.describeAssignment(g.Tenant, g.Target[m.ID])
			dm.MemberType = 1 // a consumer-protocol member
			if m.Classic != nil {
				dm.MemberType = 0 // a classic member of a mixed group
			}
			d.Members = append(d.Members, dm)
		}
		resp.Groups = append(resp.Groups, d)
	}
	s.reply(req.ID, resp)
}

// describeAssignment lists a by topic name; topics the catalog does not
// know are left out, as Kafka does.
func (s *Type) describeAssignment(tenant string, a Assignment) []kmsg.AssignmentTopicPartition {
	out := []kmsg.AssignmentTopicPartition{}
	cat := s.catalog(tenant)
	for _, t := range a.Records() {
		name, ok := "", false
		if cat != nil {
			name, ok = cat.ByID[t.TopicID]
		}
		if !ok {
			continue
		}
		out = append(out, kmsg.AssignmentTopicPartition{TopicID: t.TopicID, Topic: name, Partitions: slices.Clone(t.Partitions)})
	}
	return out
}

// Sweep expires a consumer group's offsets: an offset expires when
// its commit is older than the retention and the group does not subscribe
// to its topic (Kafka's modern-group expiration condition); an Empty group
// left without offsets is deleted.
//
// It returns when it would next expire one (NextExpiry, after it).
func (s *Type) Sweep(g *Group, now time.Time) (next int64, ok bool) {
	next, ok = s.h.Offs.Expire(g.Off(), now.UnixMilli(), s.cfg.Retention.Milliseconds(), s.keeps(g), commitTime)
	if len(g.Members) == 0 && !s.h.Offs.Has(g.Off()) {
		s.EmitRemove(g)
		return 0, false
	}
	return next, ok
}

// NextExpiry is when Sweep would next expire one of g's offsets (Unix
// ms), as g and the topics are; ok is false if it would not.
func (s *Type) NextExpiry(g *Group) (at int64, ok bool) {
	return s.h.Offs.NextExpiry(g.Off(), s.cfg.Retention.Milliseconds(), s.keeps(g), commitTime)
}

// keeps reports the topics whose offsets g keeps: those it subscribes to.
func (s *Type) keeps(g *Group) func(topic string) bool {
	subscribed := g.SubscribedTopics(s.catalog(g.Tenant))
	return func(t string) bool { return subscribed[t] }
}

// commitTime is when an offset's retention starts: its commit.
func commitTime(o record.Offset) int64 { return o.CommitTimestamp }
