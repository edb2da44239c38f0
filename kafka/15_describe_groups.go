package kafka

// DescribeGroups, key 15 (docs/kafka-classic-groups.md §15).
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: IncludeAuthorizedOperations; with no authorizer every group
//     operation is allowed (KIP-430).
//   - v4: member InstanceID (KIP-345).
//   - v5: flexible.
//   - v6: GROUP_ID_NOT_FOUND and an ErrorMessage for an unknown group
//     (KIP-1043); older versions describe it as Dead with no error.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(kmsg.DescribeGroups, 0, 6, groupHandler) }
