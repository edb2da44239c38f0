package groups

// Heartbeat, key 12: keeps a classic group member's session alive and
// tells it when to rejoin (classic_heartbeat.go,
// docs/kafka-classic-groups.md §7).
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: InstanceID (KIP-345).
//   - v4: flexible.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	register(&API{Key: kmsg.Heartbeat, MinVersion: 0, MaxVersion: 4,
		Groups: oneGroup(func(r *kmsg.HeartbeatRequest) string { return r.Group })},
		(*Shard).heartbeat,
		func(_ *kmsg.HeartbeatRequest, resp *kmsg.HeartbeatResponse, code int16) { resp.ErrorCode = code })
}
