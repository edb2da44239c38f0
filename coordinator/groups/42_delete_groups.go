package groups

// DeleteGroups, key 42 (docs/kafka-classic-groups.md §17): an
// Empty group is deleted with its offsets; a group with members is
// NON_EMPTY_GROUP. Duplicates are answered once, as Kafka collapses them.
// An empty share group is deleted too; the share-partition state it may
// hold is left for the share-state host to drop (share_state.go). Each
// group deleted is reported (observe.GroupDeleted).
//
// Version notes:
//   - v1: throttling after the response (KIP-219).
//   - v2: flexible.
//   - v3: a group whose deletion failed carries an ErrorMessage, the
//     error's description (null when it was deleted).

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/groups/share"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	a := &API{Key: kmsg.DeleteGroups, GroupACL: kmsg.ACLOperationDelete, MinVersion: 0, MaxVersion: 3}
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
				resp.Groups = append(resp.Groups, deleteResult(r.Version, g, code))
			}
		})
}

// deleteResult is one group's answer at version v: from v3 a failed
// deletion says why, with the error's description as Kafka's messages do.
func deleteResult(v int16, group string, code int16) kmsg.DeleteGroupsResponseGroup {
	res := kmsg.DeleteGroupsResponseGroup{Group: group, ErrorCode: code}
	if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && v >= 3 {
		msg := ke.Description
		res.ErrorMessage = &msg
	}
	return res
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

// deleteGroups is Kafka's deleteGroups (§17) for this shard's groups.
func (s *Shard) deleteGroups(now time.Time, req machine.Request, r *kmsg.DeleteGroupsRequest) {
	resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	resp.Version = r.Version
	seen := map[string]bool{}
	for _, name := range r.Groups {
		if seen[name] {
			continue
		}
		seen[name] = true
		var code int16
		e := s.lookup(req.Tenant, name)
		c, cg, sg := classic.Of(e), consumer.Of(e), share.Of(e)
		proto := grouptype.ProtoClassic
		switch {
		case e == nil || (c != nil && c.State == classic.Dead):
			code = kerr.GroupIDNotFound.Code
		case sg != nil:
			proto = grouptype.ProtoShare
			code = s.share.Delete(sg, now)
		case cg != nil:
			proto = grouptype.ProtoConsumer
			if len(cg.Members) > 0 {
				code = kerr.NonEmptyGroup.Code
			} else {
				s.offs.DeleteGroup(e.Off())
				s.consumer.EmitRemove(cg)
			}
		case c.State != classic.Empty:
			code = kerr.NonEmptyGroup.Code
		default:
			s.offs.DeleteGroup(e.Off())
			s.classic.Delete(c)
		}
		if code == 0 {
			// After its tombstones: reported once they are durable. A
			// share group's share-partition state is dropped on it
			// (share_state.go).
			s.h.Report(observe.GroupEvent{Kind: observe.GroupDeleted, Tenant: req.Tenant, Group: name, Protocol: proto, At: now})
		}
		resp.Groups = append(resp.Groups, deleteResult(r.Version, name, code))
	}
	s.reply(req.ID, resp)
}
