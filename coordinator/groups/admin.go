package groups

// The group admin APIs: DescribeGroups, ListGroups and DeleteGroups
// (§15–17) over every protocol, ConsumerGroupDescribe for consumer groups,
// and the deletion of a group.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// allGroupOperations is the authorized-operations bit field of a group
// with no authorizer: READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS and
// ALTER_CONFIGS (§15).
const allGroupOperations = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11

// describeGroups is Kafka's describeGroups (§15), for the groups of this
// shard in the request.
func (s *Shard) describeGroups(_ time.Time, req machine.Request, r *kmsg.DescribeGroupsRequest) {
	resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
	resp.Version = r.Version
	for _, name := range r.Groups {
		d := kmsg.DescribeGroupsResponseGroup{Group: name, State: "Dead", AuthorizedOperations: -2147483648}
		e := s.lookup(req.Tenant, name)
		switch g := classic.Of(e); {
		case g == nil || g.State == classic.Dead:
			if r.Version >= 6 {
				d.ErrorCode = kerr.GroupIDNotFound.Code
				msg := "Group " + name + " not found."
				if consumerOf(e) != nil {
					msg = "Group " + name + " is not a classic group."
				}
				d.ErrorMessage = &msg
			}
		default:
			g.Describe(&d)
		}
		if r.IncludeAuthorizedOperations && d.ErrorCode == 0 {
			d.AuthorizedOperations = allGroupOperations
		}
		resp.Groups = append(resp.Groups, d)
	}
	s.reply(req.ID, resp)
}

// listGroups is Kafka's listGroups (§16) over this shard's groups.
func (s *Shard) listGroups(_ time.Time, req machine.Request, r *kmsg.ListGroupsRequest) {
	resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.Version = r.Version
	// As Kafka: filters match case-insensitively, trimmed.
	states, types := filterSet(r.StatesFilter), filterSet(r.TypesFilter)
	for _, e := range s.sortedGroups() {
		if e.Tenant != req.Tenant {
			continue // organisations never see each other's groups
		}
		name := e.Name
		if g := consumerOf(e); g != nil {
			state := g.state()
			if (len(states) > 0 && !states[strings.ToLower(state)]) || (len(types) > 0 && !types["consumer"]) {
				continue
			}
			resp.Groups = append(resp.Groups, kmsg.ListGroupsResponseGroup{
				Group: name, ProtocolType: "consumer", GroupState: state, GroupType: "consumer",
			})
			continue
		}
		g := classic.Of(e)
		if g == nil || g.State == classic.Dead {
			continue
		}
		if len(states) > 0 && !states[strings.ToLower(g.State.String())] {
			continue
		}
		if len(types) > 0 && !types["classic"] {
			continue
		}
		resp.Groups = append(resp.Groups, kmsg.ListGroupsResponseGroup{
			Group: name, ProtocolType: g.ProtocolType, GroupState: g.State.String(), GroupType: "classic",
		})
	}
	s.reply(req.ID, resp)
}

// deleteGroups is Kafka's deleteGroups (§17) for this shard's groups.
func (s *Shard) deleteGroups(_ time.Time, req machine.Request, r *kmsg.DeleteGroupsRequest) {
	resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	resp.Version = r.Version
	seen := map[string]bool{}
	for _, name := range r.Groups {
		if seen[name] {
			continue
		}
		seen[name] = true
		var code int16
		e := s.lookup(req.Tenant, name)
		c, cg := classic.Of(e), consumerOf(e)
		switch {
		case e == nil || (c != nil && c.State == classic.Dead):
			code = kerr.GroupIDNotFound.Code
		case cg != nil:
			if len(cg.members) > 0 {
				code = kerr.NonEmptyGroup.Code
			} else {
				s.offs.DeleteGroup(e.Off())
				s.emitRemoveConsumer(cg)
			}
		case c.State != classic.Empty:
			code = kerr.NonEmptyGroup.Code
		default:
			s.offs.DeleteGroup(e.Off())
			s.classic.Delete(c)
		}
		resp.Groups = append(resp.Groups, deleteResult(r.Version, name, code))
	}
	s.reply(req.ID, resp)
}

func filterSet(filter []string) map[string]bool {
	set := make(map[string]bool, len(filter))
	for _, f := range filter {
		set[strings.TrimSpace(strings.ToLower(f))] = true
	}
	return set
}

// consumerDescribe is Kafka's consumerGroupDescribe: a group that does not
// exist or is not a consumer group is GROUP_ID_NOT_FOUND.
func (s *Shard) consumerDescribe(_ time.Time, req machine.Request, r *kmsg.ConsumerGroupDescribeRequest) {
	resp := r.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	resp.Version = r.Version
	for _, name := range r.Groups {
		d := kmsg.NewConsumerGroupDescribeResponseGroup()
		d.Group = name
		e := s.lookup(req.Tenant, name)
		g := consumerOf(e)
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
		d.State, d.Epoch, d.AssignmentEpoch = g.state(), g.epoch, g.targetEpoch
		d.AssignorName = s.groupAssignor(g).Name()
		if r.IncludeAuthorizedOperations {
			d.AuthorizedOperations = allGroupOperations
		}
		for _, m := range g.sortedMembers() {
			dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			dm.MemberID, dm.InstanceID, dm.RackID = m.id, m.instance, m.rack
			dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.epoch, m.clientID, m.clientHost
			dm.SubscribedTopics = slices.Clone(m.topics)
			if dm.SubscribedTopics == nil {
				dm.SubscribedTopics = []string{}
			}
			if m.regex != "" {
				dm.SubscribedTopicRegex = &m.regex
			}
			dm.Assignment.TopicPartitions = s.describeAssignment(g.Tenant, m.assigned)
			dm.TargetAssignment.TopicPartitions = s.describeAssignment(g.Tenant, g.target[m.id])
			dm.MemberType = 1 // a consumer-protocol member
			if m.classic != nil {
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
func (s *Shard) describeAssignment(tenant string, a tps) []kmsg.AssignmentTopicPartition {
	out := []kmsg.AssignmentTopicPartition{}
	cat := s.catalog(tenant)
	for _, t := range a.records() {
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
