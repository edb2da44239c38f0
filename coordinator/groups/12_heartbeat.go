package groups

// Heartbeat, key 12: keeps a classic group member's session alive and
// tells it when to rejoin (classic_heartbeat.go,
// docs/kafka-classic-groups.md §7).
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: InstanceID (KIP-345).
//   - v4: flexible.
//
// While the group's shard loads, a heartbeat is answered NONE, not
// COORDINATOR_LOAD_IN_PROGRESS, as Kafka's
// GroupCoordinatorService.heartbeat does ("the group is still loading, so
// blindly respond"): some clients end their session on any heartbeat
// error they do not know as a coordinator move (Sarama's heartbeat loop
// rejoins, a rebalance of the whole group), and nothing is lost by
// answering so, because a loaded group's members start fresh session
// timeouts. The member finds out about a rebalance with its next
// heartbeat once the shard serves.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(&API{Key: kmsg.Heartbeat, GroupACL: kmsg.ACLOperationRead, MinVersion: 0, MaxVersion: 4,
		Groups: oneGroup(func(r *kmsg.HeartbeatRequest) string { return r.Group })},
		heartbeat,
		func(_ *kmsg.HeartbeatRequest, resp *kmsg.HeartbeatResponse, code int16) {
			if code == kerr.CoordinatorLoadInProgress.Code {
				code = 0 // the group is still loading: see above
			}
			resp.ErrorCode = code
		})
}

// heartbeat routes a Heartbeat: to the consumer group it names (a classic
// member inside a mixed group), else to the classic type.
func heartbeat(s *Shard, now time.Time, req machine.Request, r *kmsg.HeartbeatRequest) {
	if cg := consumer.Of(s.lookup(req.Tenant, r.Group)); r.Group != "" && cg != nil {
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.Version = r.Version
		resp.ErrorCode = s.migration.Heartbeat(now, r, cg)
		s.reply(req.ID, resp)
		return
	}
	s.classic.Heartbeat(now, req, r, classic.Of(s.lookup(req.Tenant, r.Group)))
}
