package kafka

// DeleteGroups, key 42 (docs/kafka-classic-groups.md §17): an Empty group
// is deleted with its offsets; a group with members is NON_EMPTY_GROUP.
//
// Version notes:
//   - v1: throttling after the response (KIP-219).
//   - v2: flexible.
//   - v3 (per-group ErrorMessage) is not served.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(kmsg.DeleteGroups, 0, 2, groupHandler) }
