package kafka

// ConsumerGroupDescribe, key 69 (KIP-848): epochs, members, their current
// and target assignments, the assignor and the derived state.
//
// Version notes:
//   - v1: member MemberType (0 classic, 1 consumer; KIP-1099).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(kmsg.ConsumerGroupDescribe, 0, 1, groupHandler) }
