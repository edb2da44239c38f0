package groups

// DeleteGroups, key 42 (admin.go, docs/kafka-classic-groups.md §17): an
// Empty group is deleted with its offsets; a group with members is
// NON_EMPTY_GROUP. Duplicates are answered once, as Kafka collapses them.
//
// Version notes:
//   - v1: throttling after the response (KIP-219).
//   - v2: flexible.
//   - v3 (per-group ErrorMessage) is not served.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	a := &API{Key: kmsg.DeleteGroups, MinVersion: 0, MaxVersion: 2}
	manyGroups(a,
		distinct,
		func(r *kmsg.DeleteGroupsRequest, idx []int) *kmsg.DeleteGroupsRequest {
			part := *r
			part.Groups = pick(distinct(r), idx)
			return &part
		},
		func(resp *kmsg.DeleteGroupsResponse) []kmsg.DeleteGroupsResponseGroup { return resp.Groups },
		func(_ *kmsg.DeleteGroupsRequest, resp *kmsg.DeleteGroupsResponse, all []kmsg.DeleteGroupsResponseGroup) {
			resp.Groups = all
		})
	register(a, (*Shard).deleteGroupsPending, // pending txn offsets: txn_offsets.go
		func(r *kmsg.DeleteGroupsRequest, resp *kmsg.DeleteGroupsResponse, code int16) {
			for _, g := range distinct(r) {
				resp.Groups = append(resp.Groups, kmsg.DeleteGroupsResponseGroup{Group: g, ErrorCode: code})
			}
		})
}

// distinct is the request's groups without repeats, in request order.
func distinct(r *kmsg.DeleteGroupsRequest) []string {
	var names []string
	seen := map[string]bool{}
	for _, g := range r.Groups {
		if !seen[g] {
			seen[g] = true
			names = append(names, g)
		}
	}
	return names
}
