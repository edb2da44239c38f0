package kafka

// Heartbeat, key 12: keeps a classic group member's session alive and
// tells it when to rejoin (docs/kafka-classic-groups.md §7).
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: InstanceID (KIP-345).
//   - v4: flexible.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(kmsg.Heartbeat, 0, 4, groupHandler) }
