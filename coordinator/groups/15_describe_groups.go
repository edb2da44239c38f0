package groups

// DescribeGroups, key 15 (docs/kafka-classic-groups.md §15): classic
// groups describe themselves (classic.Group.Describe); split by shard,
// merged in request order.
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: IncludeAuthorizedOperations; with no authorizer every group
//     operation is allowed (KIP-430).
//   - v4: member InstanceID (KIP-345).
//   - v5: flexible.
//   - v6: GROUP_ID_NOT_FOUND and an ErrorMessage for an unknown group
//     (KIP-1043); older versions describe it as Dead with no error. A
//     consumer or share group is such a group here, "not a classic
//     group", as Kafka's describeGroups.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/groups/share"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	a := &API{Key: kmsg.DescribeGroups, GroupACL: kmsg.ACLOperationDescribe, MinVersion: 0, MaxVersion: 6}
	manyGroups(a,
		func(r *kmsg.DescribeGroupsRequest) []string { return r.Groups },
		func(r *kmsg.DescribeGroupsRequest, idx []int) *kmsg.DescribeGroupsRequest {
			part := *r
			part.Groups = pick(r.Groups, idx)
			return &part
		},
		func(resp *kmsg.DescribeGroupsResponse) []kmsg.DescribeGroupsResponseGroup { return resp.Groups },
		func(_ *kmsg.DescribeGroupsRequest, resp *kmsg.DescribeGroupsResponse, all []kmsg.DescribeGroupsResponseGroup) {
			resp.Groups = all
		})
	register(a, (*Shard).describeGroups,
		func(r *kmsg.DescribeGroupsRequest, resp *kmsg.DescribeGroupsResponse, code int16) {
			for _, g := range r.Groups {
				resp.Groups = append(resp.Groups, kmsg.DescribeGroupsResponseGroup{Group: g, ErrorCode: code, AuthorizedOperations: -2147483648})
			}
		})
}

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
				if consumer.Of(e) != nil || share.Of(e) != nil {
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
