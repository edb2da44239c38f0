package groups

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
//   - v10: topics by id, not name (KAFKA-14691), in the request and the
//     response. A requested id the broker does not have is answered
//     UNKNOWN_TOPIC_ID in each of its partitions; an offset stamped with
//     another id (an older topic of the same name) is -1 (KAFKA-19154);
//     asked for every offset, topics the broker no longer has (no id to
//     answer with) are left out, as Kafka leaves them out.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	a := &API{Key: kmsg.OffsetFetch, GroupACL: kmsg.ACLOperationDescribe, MinVersion: 0, MaxVersion: 10}
	manyGroups(a,
		func(r *kmsg.OffsetFetchRequest) []string {
			if r.Version < 8 {
				return []string{r.Group}
			}
			names := make([]string, len(r.Groups))
			for i, g := range r.Groups {
				names[i] = g.Group
			}
			return names
		},
		func(r *kmsg.OffsetFetchRequest, idx []int) *kmsg.OffsetFetchRequest {
			part := *r
			part.Groups = pick(r.Groups, idx)
			return &part
		},
		func(resp *kmsg.OffsetFetchResponse) []kmsg.OffsetFetchResponseGroup { return resp.Groups },
		func(_ *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse, all []kmsg.OffsetFetchResponseGroup) {
			resp.Groups = all
		})
	register(a, (*Shard).offsetFetch,
		func(r *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse, code int16) {
			resp.ErrorCode = code
			if r.Version < 2 {
				// v0–1 have no top-level error: it goes in every partition.
				for _, t := range r.Topics {
					rt := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
					for _, p := range t.Partitions {
						rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1, Metadata: new(string), ErrorCode: code})
					}
					resp.Topics = append(resp.Topics, rt)
				}
			}
			for _, g := range r.Groups {
				resp.Groups = append(resp.Groups, kmsg.OffsetFetchResponseGroup{Group: g.Group, ErrorCode: code})
			}
		})
}

// offsetFetch is OffsetFetch (offsets.Book.ServeFetch).
func (s *Shard) offsetFetch(_ time.Time, req machine.Request, r *kmsg.OffsetFetchRequest) {
	s.reply(req.ID, s.offs.ServeFetch(req, r, (*offsetGroups)(s)))
}
