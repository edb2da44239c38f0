package groups

// ShareGroupHeartbeat, key 76 (KIP-932; package share's heartbeat.go):
// join, heartbeat and leave a share group; the coordinator computes the
// assignment with the simple assignor and hands each member its target at
// once.
//
// Version notes:
//   - v0: Kafka 4.0's early access, removed in 4.1; not served.
//   - v1: the stable version (Kafka 4.1, production in 4.2): the member id
//     is the client's own (KIP-1082); TOPIC_AUTHORIZATION_FAILED for a
//     subscription naming a topic the principal may not DESCRIBE (the
//     wire server checks it, kafka/groups_authz.go).

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(&API{Key: kmsg.ShareGroupHeartbeat, GroupACL: kmsg.ACLOperationRead, MinVersion: 1, MaxVersion: 1,
		Groups: oneGroup(func(r *kmsg.ShareGroupHeartbeatRequest) string { return r.GroupID })},
		func(s *Shard, now time.Time, req machine.Request, r *kmsg.ShareGroupHeartbeatRequest) {
			s.share.Heartbeat(now, req, r)
		},
		func(_ *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse, code int16) {
			resp.ErrorCode = code
		})
}
