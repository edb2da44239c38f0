package groups

// SyncGroup, key 14: the leader hands in the generation's assignment and
// every member receives its own (classic_sync.go,
// docs/kafka-classic-groups.md §6).
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: InstanceID (KIP-345).
//   - v4: flexible.
//   - v5: ProtocolType and ProtocolName in request and response, checked
//     against the group's (KIP-559); null in the request is
//     INCONSISTENT_GROUP_PROTOCOL.
//
// A follower's SyncGroup is parked until the leader's arrives; the
// leader's is answered after the generation's record is durable.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(&API{Key: kmsg.SyncGroup, GroupACL: kmsg.ACLOperationRead, MinVersion: 0, MaxVersion: 5,
		Groups: oneGroup(func(r *kmsg.SyncGroupRequest) string { return r.Group })},
		syncGroup,
		func(_ *kmsg.SyncGroupRequest, resp *kmsg.SyncGroupResponse, code int16) { resp.ErrorCode = code })
}

// syncGroup routes a SyncGroup: to the consumer group it names (a classic
// member inside a mixed group), else to the classic type.
func syncGroup(s *Shard, now time.Time, req machine.Request, r *kmsg.SyncGroupRequest) {
	if s.classic.SyncRefused(req, r) {
		return
	}
	if cg := consumer.Of(s.lookup(req.Tenant, r.Group)); cg != nil {
		s.migration.SyncGroup(now, req, r, cg)
		return
	}
	s.classic.SyncGroup(now, req, r, classic.Of(s.lookup(req.Tenant, r.Group)))
}
