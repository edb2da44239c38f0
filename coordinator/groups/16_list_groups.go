package groups

// ListGroups, key 16 (admin.go, docs/kafka-classic-groups.md §16): every
// shard's groups of the request's tenant, merged.
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: flexible.
//   - v4: StatesFilter and GroupState (KIP-518), matched case-insensitively.
//   - v5: TypesFilter and GroupType (KIP-848): "classic" or "consumer".

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	a := &API{Key: kmsg.ListGroups, GroupACL: kmsg.ACLOperationDescribe, MinVersion: 0, MaxVersion: 5}
	a.Merge = func(r kmsg.Request, _ [][]int, parts []kmsg.Response) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.SetVersion(r.GetVersion())
		resp.Groups = []kmsg.ListGroupsResponseGroup{}
		for _, p := range parts {
			part := p.(*kmsg.ListGroupsResponse)
			if part.ErrorCode != 0 && resp.ErrorCode == 0 {
				resp.ErrorCode = part.ErrorCode
			}
			resp.Groups = append(resp.Groups, part.Groups...)
		}
		return resp
	}
	register(a, (*Shard).listGroups,
		func(_ *kmsg.ListGroupsRequest, resp *kmsg.ListGroupsResponse, code int16) { resp.ErrorCode = code })
}
