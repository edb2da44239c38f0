package groups

// LeaveGroup, key 13: members leave a classic group (classic_heartbeat.go,
// docs/kafka-classic-groups.md §8).
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: a batch of members, each with an instance id, and per-member
//     errors (KIP-345); an admin removes a static member by instance id
//     with an empty member id.
//   - v4: flexible.
//   - v5: per-member Reason (KIP-800), ignored.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(&API{Key: kmsg.LeaveGroup, GroupACL: kmsg.ACLOperationRead, MinVersion: 0, MaxVersion: 5,
		Groups: oneGroup(func(r *kmsg.LeaveGroupRequest) string { return r.Group })},
		leaveGroup,
		func(_ *kmsg.LeaveGroupRequest, resp *kmsg.LeaveGroupResponse, code int16) { resp.ErrorCode = code })
}

// leaveGroup routes a LeaveGroup: to the consumer group it names (classic
// members inside a mixed group), else to the classic type.
func leaveGroup(s *Shard, now time.Time, req machine.Request, r *kmsg.LeaveGroupRequest) {
	if cg := consumer.Of(s.lookup(req.Tenant, r.Group)); r.Group != "" && cg != nil {
		resp := kmsg.NewPtrLeaveGroupResponse()
		resp.Version = r.Version
		s.migration.LeaveGroup(now, r, resp, classic.Leaving(r), cg)
		s.reply(req.ID, resp)
		return
	}
	s.classic.LeaveGroup(now, req, r, classic.Of(s.lookup(req.Tenant, r.Group)))
}
