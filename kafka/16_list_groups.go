package kafka

// ListGroups, key 16 (docs/kafka-classic-groups.md §16): every shard's
// groups, merged.
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: flexible.
//   - v4: StatesFilter and GroupState (KIP-518), matched case-insensitively.
//   - v5: TypesFilter and GroupType (KIP-848); every group is "classic"
//     until consumer groups exist.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(kmsg.ListGroups, 0, 5, groupHandler) }
