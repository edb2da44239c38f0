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

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	register(&API{Key: kmsg.LeaveGroup, GroupACL: kmsg.ACLOperationRead, MinVersion: 0, MaxVersion: 5,
		Groups: oneGroup(func(r *kmsg.LeaveGroupRequest) string { return r.Group })},
		(*Shard).leaveGroup,
		func(_ *kmsg.LeaveGroupRequest, resp *kmsg.LeaveGroupResponse, code int16) { resp.ErrorCode = code })
}
