package groups

// ListGroups, key 16 (docs/kafka-classic-groups.md §16): every
// shard's groups of the request's tenant, merged.
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: flexible.
//   - v4: StatesFilter and GroupState (KIP-518), matched case-insensitively.
//   - v5: TypesFilter and GroupType (KIP-848): "classic", "consumer" or
//     "share" (KIP-932: a share group's ProtocolType is "share" too).

import (
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/groups/share"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	a := &API{Key: kmsg.ListGroups, GroupACL: kmsg.ACLOperationDescribe, MinVersion: 0, MaxVersion: 5}
	a.Merge = func(r kmsg.Request, _ [][]int, parts []kmsg.Response) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.SetVersion(r.GetVersion())
		n := 0
		for _, p := range parts {
			n += len(p.(*kmsg.ListGroupsResponse).Groups)
		}
		// Sized once: a million groups appended to a growing slice were
		// copied twice over.
		resp.Groups = make([]kmsg.ListGroupsResponseGroup, 0, n)
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

// listGroups is Kafka's listGroups (§16) over this shard's groups.
func (s *Shard) listGroups(_ time.Time, req machine.Request, r *kmsg.ListGroupsRequest) {
	resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.Version = r.Version
	// As Kafka: filters match case-insensitively, trimmed.
	states, types := filterSet(r.StatesFilter), filterSet(r.TypesFilter)
	sorted := s.sortedGroups()
	resp.Groups = make([]kmsg.ListGroupsResponseGroup, 0, len(sorted))
	for _, e := range sorted {
		if e.Tenant != req.Tenant {
			continue // organisations never see each other's groups
		}
		name := e.Name
		if g := consumer.Of(e); g != nil {
			state := g.State()
			if (len(states) > 0 && !states[strings.ToLower(state)]) || (len(types) > 0 && !types["consumer"]) {
				continue
			}
			resp.Groups = append(resp.Groups, kmsg.ListGroupsResponseGroup{
				Group: name, ProtocolType: "consumer", GroupState: state, GroupType: "consumer",
			})
			continue
		}
		if g := share.Of(e); g != nil {
			state := g.State()
			if (len(states) > 0 && !states[strings.ToLower(state)]) || (len(types) > 0 && !types["share"]) {
				continue
			}
			resp.Groups = append(resp.Groups, kmsg.ListGroupsResponseGroup{
				Group: name, ProtocolType: "share", GroupState: state, GroupType: "share",
			})
			continue
		}
		g := classic.Of(e)
		if g == nil || g.State == classic.Dead {
			continue
		}
		if len(states) > 0 && !states[strings.ToLower(g.State.String())] {
			continue
		}
		if len(types) > 0 && !types["classic"] {
			continue
		}
		resp.Groups = append(resp.Groups, kmsg.ListGroupsResponseGroup{
			Group: name, ProtocolType: g.ProtocolType, GroupState: g.State.String(), GroupType: "classic",
		})
	}
	s.reply(req.ID, resp)
}

func filterSet(filter []string) map[string]bool {
	set := make(map[string]bool, len(filter))
	for _, f := range filter {
		set[strings.TrimSpace(strings.ToLower(f))] = true
	}
	return set
}
