package groups

import (
	"strings"

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
func (mc *Machine) describeGroups(req machine.Request, r *kmsg.DescribeGroupsRequest) {
	resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
	resp.Version = r.Version
	for _, name := range r.Groups {
		d := kmsg.DescribeGroupsResponseGroup{Group: name, State: "Dead", AuthorizedOperations: -2147483648}
		g := mc.groups[name]
		switch {
		case g == nil || g.state == dead || g.cg != nil:
			// As Kafka, a consumer group is no classic group here.
			if r.Version >= 6 {
				d.ErrorCode = kerr.GroupIDNotFound.Code
				msg := "Group " + name + " not found."
				if g != nil && g.cg != nil {
					msg = "Group " + name + " is not a classic group."
				}
				d.ErrorMessage = &msg
			}
		default:
			d.State, d.ProtocolType = g.state.String(), g.protocolType
			if g.state == stable {
				d.Protocol = g.protocol
			}
			for _, m := range g.sortedMembers() {
				dm := kmsg.DescribeGroupsResponseGroupMember{
					MemberID: m.id, InstanceID: m.instance, ClientID: m.clientID, ClientHost: m.clientHost,
					ProtocolMetadata: []byte{}, MemberAssignment: m.assignment,
				}
				if g.state == stable {
					dm.ProtocolMetadata = m.metadataFor(g.protocol)
				}
				if dm.MemberAssignment == nil {
					dm.MemberAssignment = []byte{}
				}
				d.Members = append(d.Members, dm)
			}
		}
		if r.IncludeAuthorizedOperations && d.ErrorCode == 0 {
			d.AuthorizedOperations = allGroupOperations
		}
		resp.Groups = append(resp.Groups, d)
	}
	mc.reply(req.ID, resp)
}

// listGroups is Kafka's listGroups (§16) over this shard's groups.
func (mc *Machine) listGroups(req machine.Request, r *kmsg.ListGroupsRequest) {
	resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.Version = r.Version
	// As Kafka: filters match case-insensitively, trimmed.
	states, types := filterSet(r.StatesFilter), filterSet(r.TypesFilter)
	for _, name := range mc.sortedGroupNames() {
		g := mc.groups[name]
		if g.state == dead {
			continue
		}
		if g.cg != nil {
			state := g.cg.state()
			if (len(states) > 0 && !states[strings.ToLower(state)]) || (len(types) > 0 && !types["consumer"]) {
				continue
			}
			resp.Groups = append(resp.Groups, kmsg.ListGroupsResponseGroup{
				Group: name, ProtocolType: "consumer", GroupState: state, GroupType: "consumer",
			})
			continue
		}
		if len(states) > 0 && !states[strings.ToLower(g.state.String())] {
			continue
		}
		if len(types) > 0 && !types["classic"] {
			continue
		}
		resp.Groups = append(resp.Groups, kmsg.ListGroupsResponseGroup{
			Group: name, ProtocolType: g.protocolType, GroupState: g.state.String(), GroupType: "classic",
		})
	}
	mc.reply(req.ID, resp)
}

// deleteGroups is Kafka's deleteGroups (§17) for this shard's groups.
func (mc *Machine) deleteGroups(req machine.Request, r *kmsg.DeleteGroupsRequest) {
	resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	resp.Version = r.Version
	seen := map[string]bool{}
	for _, name := range r.Groups {
		if seen[name] {
			continue
		}
		seen[name] = true
		res := kmsg.DeleteGroupsResponseGroup{Group: name}
		g := mc.groups[name]
		switch {
		case g == nil || g.state == dead:
			res.ErrorCode = kerr.GroupIDNotFound.Code
		case g.cg != nil:
			if len(g.cg.members) > 0 {
				res.ErrorCode = kerr.NonEmptyGroup.Code
			} else {
				mc.deleteConsumerGroup(g, true)
			}
		case g.state != empty:
			res.ErrorCode = kerr.NonEmptyGroup.Code
		default:
			mc.deleteGroup(g, true)
		}
		resp.Groups = append(resp.Groups, res)
	}
	mc.reply(req.ID, resp)
}

func filterSet(filter []string) map[string]bool {
	set := make(map[string]bool, len(filter))
	for _, f := range filter {
		set[strings.TrimSpace(strings.ToLower(f))] = true
	}
	return set
}
