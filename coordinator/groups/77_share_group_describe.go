package groups

// ShareGroupDescribe, key 77 (KIP-932; share.Type.Describe): epochs,
// members, their assignments, the assignor and the derived state (Empty
// or Stable). Split by shard, merged in request order.
//
// Version notes:
//   - v0: Kafka 4.0's early access, removed in 4.1; not served.
//   - v1: the stable version; TOPIC_AUTHORIZATION_FAILED for a group
//     whose members' assignments name a topic the principal may not
//     DESCRIBE (the wire server checks it, kafka/groups_authz.go).

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	a := &API{Key: kmsg.ShareGroupDescribe, GroupACL: kmsg.ACLOperationDescribe, MinVersion: 1, MaxVersion: 1}
	manyGroups(a,
		func(r *kmsg.ShareGroupDescribeRequest) []string { return r.GroupIDs },
		func(r *kmsg.ShareGroupDescribeRequest, idx []int) *kmsg.ShareGroupDescribeRequest {
			part := *r
			part.GroupIDs = pick(r.GroupIDs, idx)
			return &part
		},
		func(resp *kmsg.ShareGroupDescribeResponse) []kmsg.ShareGroupDescribeResponseGroup {
			return resp.Groups
		},
		func(_ *kmsg.ShareGroupDescribeRequest, resp *kmsg.ShareGroupDescribeResponse, all []kmsg.ShareGroupDescribeResponseGroup) {
			resp.Groups = all
		})
	register(a, func(s *Shard, now time.Time, req machine.Request, r *kmsg.ShareGroupDescribeRequest) {
		s.share.Describe(now, req, r)
	},
		func(r *kmsg.ShareGroupDescribeRequest, resp *kmsg.ShareGroupDescribeResponse, code int16) {
			for _, g := range r.GroupIDs {
				d := kmsg.NewShareGroupDescribeResponseGroup()
				d.GroupID, d.ErrorCode = g, code
				resp.Groups = append(resp.Groups, d)
			}
		})
}
