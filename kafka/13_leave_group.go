package kafka

// LeaveGroup, key 13: members leave a classic group
// (docs/kafka-classic-groups.md §8).
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: a batch of members, each with an instance id, and per-member
//     errors (KIP-345); an admin removes a static member by instance id
//     with an empty member id.
//   - v4: flexible.
//   - v5: per-member Reason (KIP-800), ignored.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(kmsg.LeaveGroup, 0, 5, groupHandler) }
