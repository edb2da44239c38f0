package groups

// JoinGroup, key 11: the classic group protocol's join (classic_join.go,
// docs/kafka-classic-groups.md §4–5).
//
// Version notes:
//   - v0: no rebalance timeout; the session timeout serves as both.
//   - v1: RebalanceTimeoutMillis (KIP-62).
//   - v2: ThrottleMillis.
//   - v4: a new dynamic member gets MEMBER_ID_REQUIRED and a member id,
//     and must join again with it (KIP-394).
//   - v5: InstanceID, static membership (KIP-345).
//   - v6: flexible.
//   - v7: ProtocolType in the response; ProtocolName nullable (KIP-559).
//   - v8: Reason (KIP-800), logged by Kafka, ignored here.
//   - v9: SkipAssignment, set for a static leader that rejoined a Stable
//     group (KIP-814).
//
// A join is parked until the join phase completes, for up to the rebalance
// timeout (plus the initial delay): the response waits on the connection's
// writer, so the connection keeps reading.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/groups/share"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(&API{Key: kmsg.JoinGroup, GroupACL: kmsg.ACLOperationRead, MinVersion: 0, MaxVersion: 9,
		Groups: oneGroup(func(r *kmsg.JoinGroupRequest) string { return r.Group })},
		joinGroup,
		func(r *kmsg.JoinGroupRequest, resp *kmsg.JoinGroupResponse, code int16) {
			*resp = *classic.JoinError(r.Version, code, r.MemberID)
		})
}

// joinGroup routes a JoinGroup: to the consumer group it names (a classic
// member inside a mixed group, whatever the migration policy, as Kafka;
// an empty consumer group becomes a classic group first), else to the
// classic type. A share group refuses it INCONSISTENT_GROUP_PROTOCOL with
// no member id, as Kafka's classicGroupJoin for a group of another type.
func joinGroup(s *Shard, now time.Time, req machine.Request, r *kmsg.JoinGroupRequest) {
	if s.classic.JoinRefused(req, r) {
		return
	}
	e := s.lookup(req.Tenant, r.Group)
	if share.Of(e) != nil {
		s.reply(req.ID, classic.JoinError(r.Version, kerr.InconsistentGroupProtocol.Code, ""))
		return
	}
	g := classic.Of(e)
	if cg := consumer.Of(e); cg != nil {
		if len(cg.Members) > 0 {
			s.migration.JoinGroup(now, req, r, cg)
			return
		}
		g = s.migration.EmptyToClassic(now, cg)
	}
	s.classic.JoinGroup(now, req, r, g)
}
