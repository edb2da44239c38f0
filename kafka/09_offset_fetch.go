package kafka

// OffsetFetch, key 9 (docs/kafka-classic-groups.md §12): committed offsets;
// -1 with no error for a partition, topic or group with none, as Kafka.
//
// Version notes:
//   - v0: offsets of ZooKeeper in old Kafka; served like v1.
//   - v1: no top-level error code: a group error goes in every partition.
//   - v2: null Topics asks for every committed offset; top-level
//     ErrorCode.
//   - v3: ThrottleMillis.
//   - v5: CommittedLeaderEpoch (KIP-320).
//   - v6: flexible.
//   - v7: RequireStable (KIP-447). Without transactions no offset is
//     ever pending, so it changes nothing.
//   - v8: several groups per request (KIP-709), split across shards.
//   - v9: MemberID and MemberEpoch, for consumer-protocol groups
//     (KIP-848); a classic group ignores them.
//   - v10 (topic ids) is not served.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(kmsg.OffsetFetch, 0, 9, groupHandler) }
