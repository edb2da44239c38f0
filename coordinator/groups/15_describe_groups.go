package groups

// DescribeGroups, key 15 (admin.go, docs/kafka-classic-groups.md §15):
// split by shard, merged in request order.
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: IncludeAuthorizedOperations; with no authorizer every group
//     operation is allowed (KIP-430).
//   - v4: member InstanceID (KIP-345).
//   - v5: flexible.
//   - v6: GROUP_ID_NOT_FOUND and an ErrorMessage for an unknown group
//     (KIP-1043); older versions describe it as Dead with no error.

import "github.com/twmb/franz-go/pkg/kmsg"

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
