package classic

// The classic protocol's liveness: Heartbeat keeps a member in its group,
// LeaveGroup takes members out (§7, §8).

import (
	"fmt"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat is Kafka's classicGroupHeartbeat (§7), to classic group g
// (nil: none).
func (s *Type) Heartbeat(now time.Time, req machine.Request, r *kmsg.HeartbeatRequest, g *Group) {
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = r.Version
	resp.ErrorCode = func() int16 {
		if r.Group == "" {
			return kerr.InvalidGroupID.Code
		}
		switch {
		case g == nil:
			return kerr.UnknownMemberID.Code
		case g.State == Dead:
			return kerr.CoordinatorNotAvailable.Code
		}
		if code := g.validateMember(r.MemberID, r.InstanceID); code != 0 {
			return code
		}
		if r.Generation != g.Generation {
			return kerr.IllegalGeneration.Code
		}
		m := g.Members()[r.MemberID]
		switch g.State {
		case Empty:
			return kerr.UnknownMemberID.Code
		case PreparingRebalance:
			s.ArmSession(g, m, now, time.Duration(m.SessionTimeout)*time.Millisecond)
			return kerr.RebalanceInProgress.Code
		}
		// CompletingRebalance answers NONE: the member has its JoinGroup
		// answer and is about to sync (§7).
		s.ArmSession(g, m, now, time.Duration(m.SessionTimeout)*time.Millisecond)
		return 0
	}()
	s.reply(req.ID, resp)
}

// Leaving is the members a LeaveGroup names: before v3, the one member
// the request is from.
func Leaving(r *kmsg.LeaveGroupRequest) []kmsg.LeaveGroupRequestMember {
	if r.Version < 3 {
		return []kmsg.LeaveGroupRequestMember{{MemberID: r.MemberID}}
	}
	return r.Members
}

// LeaveGroup is Kafka's classicGroupLeave (§8), to classic group g (nil:
// none).
func (s *Type) LeaveGroup(now time.Time, req machine.Request, r *kmsg.LeaveGroupRequest, g *Group) {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = r.Version
	defer s.reply(req.ID, resp)
	if r.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return
	}
	leaving := Leaving(r)
	if g != nil && g.State == Dead {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return
	}
	removed, droppedPending := false, false
	reason := "" // for the rebalance: the first member removed's, as Kafka's
	var why grouptype.Trigger
	leave := func(m *Member, client *string, cause observe.Cause) {
		s.removeMember(g, m, kerr.UnknownMemberID.Code)
		removed = true
		s.Event(g, observe.MemberLeft, now, m, grouptype.OrEmpty(client))
		if reason == "" {
			reason = fmt.Sprintf("Removing member %s on LeaveGroup; client reason: %s", m.ID, ClientReason(client))
			why = Trigger(cause, m)
		}
	}
	for _, l := range leaving {
		code := func() int16 {
			if g == nil {
				return kerr.UnknownMemberID.Code
			}
			if l.MemberID == "" {
				// Removal by instance id (an admin's
				// removeMembersFromConsumerGroup).
				if l.InstanceID == nil {
					return kerr.UnknownMemberID.Code
				}
				id, ok := g.Static()[*l.InstanceID]
				if !ok {
					return kerr.UnknownMemberID.Code
				}
				leave(g.Members()[id], l.Reason, observe.CauseAdminAction)
				return 0
			}
			if _, ok := g.PendingJoin()[l.MemberID]; ok {
				s.DropPending(g, l.MemberID)
				droppedPending = true
				return 0
			}
			if code := g.validateMember(l.MemberID, l.InstanceID); code != 0 {
				return code
			}
			leave(g.Members()[l.MemberID], l.Reason, observe.CauseMemberLeft)
			return 0
		}()
		resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{MemberID: l.MemberID, InstanceID: l.InstanceID, ErrorCode: code})
	}
	if r.Version < 3 {
		resp.ErrorCode, resp.Members = resp.Members[0].ErrorCode, nil
	}
	switch {
	case removed && (g.State == Stable || g.State == CompletingRebalance):
		s.PrepareRebalance(g, now, why, reason)
	case (removed || droppedPending) && g.State == PreparingRebalance:
		s.maybeCompleteJoin(g, now)
	}
}
