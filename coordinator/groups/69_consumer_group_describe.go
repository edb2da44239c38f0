package groups

// ConsumerGroupDescribe, key 69 (KIP-848; consumer.Type.Describe):
// epochs, members, their current and target assignments, the assignor and
// the derived state. Split by shard, merged in request order.
//
// Version notes:
//   - v1: member MemberType (0 classic, 1 consumer; KIP-1099).

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	a := &API{Key: kmsg.ConsumerGroupDescribe, GroupACL: kmsg.ACLOperationDescribe, MinVersion: 0, MaxVersion: 1}
	manyGroups(a,
		func(r *kmsg.ConsumerGroupDescribeRequest) []string { return r.Groups },
		func(r *kmsg.ConsumerGroupDescribeRequest, idx []int) *kmsg.ConsumerGroupDescribeRequest {
			part := *r
			part.Groups = pick(r.Groups, idx)
			return &part
		},
		func(resp *kmsg.ConsumerGroupDescribeResponse) []kmsg.ConsumerGroupDescribeResponseGroup {
			return resp.Groups
		},
		func(_ *kmsg.ConsumerGroupDescribeRequest, resp *kmsg.ConsumerGroupDescribeResponse, all []kmsg.ConsumerGroupDescribeResponseGroup) {
			resp.Groups = all
		})
	register(a, func(s *Shard, now time.Time, req machine.Request, r *kmsg.ConsumerGroupDescribeRequest) {
		s.consumer.Describe(now, req, r)
	},
		func(r *kmsg.ConsumerGroupDescribeRequest, resp *kmsg.ConsumerGroupDescribeResponse, code int16) {
			for _, g := range r.Groups {
				d := kmsg.NewConsumerGroupDescribeResponseGroup()
				d.Group, d.ErrorCode = g, code
				resp.Groups = append(resp.Groups, d)
			}
		})
}
