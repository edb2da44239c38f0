package groups

// ConsumerGroupHeartbeat, key 68 (KIP-848; consumer_heartbeat.go): join,
// heartbeat, reconcile and leave a consumer group; the coordinator
// computes assignments.
//
// Version notes:
//   - v0: the coordinator mints the member id on the first heartbeat.
//   - v1: the client mints it (KIP-1082), so MemberId is never empty; and
//     SubscribedTopicRegex (RE2, KIP-848's regex subscription).

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(&API{Key: kmsg.ConsumerGroupHeartbeat, GroupACL: kmsg.ACLOperationRead, MinVersion: 0, MaxVersion: 1,
		Groups: oneGroup(func(r *kmsg.ConsumerGroupHeartbeatRequest) string { return r.Group })},
		func(s *Shard, now time.Time, req machine.Request, r *kmsg.ConsumerGroupHeartbeatRequest) {
			s.consumer.Heartbeat(now, req, r)
		},
		func(_ *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse, code int16) {
			resp.ErrorCode = code
		})
}
