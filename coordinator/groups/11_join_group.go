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

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	register(&API{Key: kmsg.JoinGroup, GroupACL: kmsg.ACLOperationRead, MinVersion: 0, MaxVersion: 9,
		Groups: oneGroup(func(r *kmsg.JoinGroupRequest) string { return r.Group })},
		(*Shard).joinGroup,
		func(r *kmsg.JoinGroupRequest, resp *kmsg.JoinGroupResponse, code int16) {
			*resp = *joinError(r.Version, code, r.MemberID)
		})
}
