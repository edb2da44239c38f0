package groups

// The group admin APIs: DescribeGroups, ListGroups and DeleteGroups
// (§15–17) over every protocol, ConsumerGroupDescribe for consumer groups,
// and the deletion of a group.

import (
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
				if consumer.Of(e) != nil {
					msg = "Group " + name + " is not a classic group."
				}
				d.ErrorMessage = &msg
			}
		default:
			g.Describe(&d)
		}
		if r.IncludeAuthorizedOperations && d.ErrorCode == 0 {
			d.AuthorizedOperations = grouptype.AllGroupOperations
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
		if g := consumer.Of(e); g != nil {
			state := g.State()
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
		c, cg := classic.Of(e), consumer.Of(e)
		switch {
		case e == nil || (c != nil && c.State == classic.Dead):
			code = kerr.GroupIDNotFound.Code
		case cg != nil:
			if len(cg.Members) > 0 {
				code = kerr.NonEmptyGroup.Code
			} else {
				s.offs.DeleteGroup(e.Off())
				s.consumer.EmitRemove(cg)
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
